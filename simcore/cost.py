"""Cost: capital cost from part counts x unit prices, and energy cost.

Prices come from a price book (a user input). A part the book does not price (null) is left out
of the total and named in ``unpriced``, so a total never silently counts a missing price as
zero: the result says which parts it does not include, and a total with nothing priced is null.
"""
import numpy as np

from simcore.power import energy_per_year_kwh


def priced_sum(lines):
    """Sum of the priced lines; NaN where none of them has a price."""
    stacked = np.stack(np.broadcast_arrays(*lines))
    return np.where(np.all(np.isnan(stacked), axis=0), np.nan, np.nansum(stacked, axis=0))


def capex(counts: dict[str, np.ndarray], unit_prices: dict[str, np.ndarray]):
    """Extended price per part (count x unit price), their total over the priced parts, and the
    parts left unpriced (a nonzero count and no price)."""
    lines = {part: counts[part] * unit_prices[part] for part in counts}
    unpriced = [part for part in counts
                if (np.isnan(unit_prices[part]) & (np.asarray(counts[part]) > 0)).any()]
    return lines, priced_sum(list(lines.values())), unpriced


def energy_cost_per_year(it_power_w, pue, price_per_kwh):
    return energy_per_year_kwh(it_power_w, pue) * price_per_kwh
