"""Cost: capital cost from part counts x unit prices, and energy cost.

Prices come from a price book (a user input). A total is complete or it is null: where a part the
build counts has no price (null in the book), the total (and any subtotal it falls in) is null and
the part is named in ``unpriced``, so a bill that leaves parts out never looks cheaper. Owning
is set against renting the same GPUs by the hour (the price book's GPU-hour price, a user input).
"""
import numpy as np

from simcore.arrays import where
from simcore.formulas.power import HOURS_PER_YEAR, energy_per_year_kwh


def complete_sum(counts: dict[str, np.ndarray], unit_prices: dict[str, np.ndarray], parts=None):
    """Sum of count x unit price over ``parts`` (all by default): a part the build does not count
    adds nothing, a counted part without a price makes the sum NaN."""
    return sum(where(np.asarray(counts[part]) > 0, counts[part] * unit_prices[part], 0.0)
               for part in (parts or counts))


def capex(counts: dict[str, np.ndarray], unit_prices: dict[str, np.ndarray]):
    """Extended price per part (count x unit price), their total (NaN unless every counted part is
    priced), and the parts left unpriced (a nonzero count and no price)."""
    lines = {part: counts[part] * unit_prices[part] for part in counts}
    unpriced = [part for part in counts
                if (np.isnan(unit_prices[part]) & (np.asarray(counts[part]) > 0)).any()]
    return lines, complete_sum(counts, unit_prices), unpriced


def energy_cost_per_year(it_power_w, pue, price_per_kwh):
    return energy_per_year_kwh(it_power_w, pue) * price_per_kwh


def own_cost_per_gpu_hour(capex_total, amortization_years, facility_w, energy_per_kwh, gpus):
    """What an owned GPU costs an hour: its share of the capital spread over the stated life
    (every hour of it used), plus its share of the facility's energy at the plan's price."""
    capital = capex_total / (amortization_years * HOURS_PER_YEAR * gpus)
    return capital + facility_w / gpus / 1000 * energy_per_kwh
