"""Cost: capital cost from part counts x unit prices, and energy cost.

Prices come from a price book (a user input). A total is complete or it is null: where a part the
build counts has no price (null in the book), the total (and any subtotal it falls in) is null and
the part is named in ``unpriced``, so a bill that leaves parts out never looks cheaper. An estimated
price carries a low and a high; the total's band is the sum of the lows and of the highs (a quoted
price is its own low and high, so quotes narrow the band). Owning is set against renting the same
GPUs by the hour at the cheapest rental term that covers the time rented (a user input per term).
"""
from dataclasses import dataclass

import numpy as np

from simcore.arrays import binding, where
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


def price_band(counts: dict[str, np.ndarray], unit_prices: dict[str, np.ndarray], lows: dict[str, np.ndarray],
               highs: dict[str, np.ndarray]):
    """(low, high) of the complete total: each counted part at its low and at its high unit price
    (a part without a low or high at its price); NaN wherever the total itself is."""
    def bound(ends):
        return complete_sum(counts, {part: where(np.isnan(ends[part]), unit_prices[part], ends[part])
                                     for part in unit_prices})
    return bound(lows), bound(highs)


@dataclass(frozen=True)
class RentalTerm:
    """A way to rent GPUs by the hour: its price field, its label and the days it commits to (paid
    for in full however short the run), and the longest run one booking covers (inf: any)."""

    field: str
    label: str
    commit_days: float
    max_days: float = np.inf


# On demand: pay for the hours used. Capacity blocks: GPUs reserved ahead for 1 to 182 days (AWS EC2
# Capacity Blocks for ML, user guide: durations of 1-14 days, then 7-day steps up to 182 days). 1- and
# 3-year commitments (GCP committed-use discounts, AWS savings plans): the whole term is paid for.
RENT_TERMS = (RentalTerm("gpu_hour", "on demand", 0.0),
              RentalTerm("gpu_hour_capacity_block", "capacity block", 1.0, 182.0),
              RentalTerm("gpu_hour_1y", "1-year commitment", 365.0),
              RentalTerm("gpu_hour_3y", "3-year commitment", 3 * 365.0))
RENT_TERM_LABELS = tuple(term.label for term in RENT_TERMS) + ("no rental price",)


def rent_for(gpus, days, rates: dict[str, np.ndarray]):
    """(cost, hourly rate, index into ``RENT_TERM_LABELS``) of renting ``gpus`` for ``days`` at the
    cheapest term that covers them: a committed term is paid for its whole length, a term whose one
    booking is shorter than the run cannot cover it, a term without a price (NaN) is not offered.
    NaN cost and rate (the last label) where no term has a price."""
    hours = np.asarray(days, dtype=float) * 24.0
    with np.errstate(invalid="ignore"):
        costs = [np.nan_to_num(where((np.asarray(days) > t.max_days), np.nan,
                                     gpus * rates[t.field] * np.maximum(hours, t.commit_days * 24.0)), nan=np.inf)
                 for t in RENT_TERMS]
    cost, pick = binding(RENT_TERM_LABELS, *costs)
    priced = np.isfinite(cost)
    rate = np.choose(pick, [np.broadcast_to(rates[t.field], np.shape(cost)) for t in RENT_TERMS])
    return where(priced, cost, np.nan), where(priced, rate, np.nan), where(priced, pick, len(RENT_TERMS))
