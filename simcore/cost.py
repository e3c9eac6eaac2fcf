"""Cost: capital cost from part counts x unit prices, energy cost, cost-performance.

Prices come from a price book (a user input). A part the book does not price (null) is left out
of the total and named in ``unpriced``, so a total never silently counts a missing price as
zero: the result says which parts it does not include.
"""
import numpy as np

from simcore.power import energy_per_year_kwh


def capex(counts: dict[str, np.ndarray], unit_prices: dict[str, np.ndarray]):
    """Extended price per part, their total over priced parts, and the parts left unpriced
    (those with a nonzero count and no price in at least one scenario)."""
    lines = {part: counts[part] * unit_prices[part] for part in counts}
    total = sum(np.nan_to_num(line, nan=0.0) for line in lines.values())
    unpriced = [part for part in counts
                if np.any(np.isnan(unit_prices[part]) & (np.asarray(counts[part]) > 0))]
    return lines, total, unpriced


def energy_cost_per_year(it_power_w, pue, price_per_kwh):
    return energy_per_year_kwh(it_power_w, pue) * price_per_kwh


def cost_performance(performance, price, reference_performance, reference_price):
    """Performance per price relative to a reference build (FF Table II: 0.83 / 0.60 = 1.38)."""
    return (np.asarray(performance) / reference_performance) / (np.asarray(price) / reference_price)
