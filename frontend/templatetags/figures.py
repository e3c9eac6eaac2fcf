"""Template filters that show a number the way its unit reads."""
import json
import math
from decimal import Decimal

from django import template

from simcore.outputs import display, duration, percent

register = template.Library()


@register.filter
def figure(value, unit=""):
    """Fractions as percentages, watts with their SI prefix ("1.63 MW"), other numbers as
    :func:`simcore.outputs.display` writes them (one format in pages, tables and the command line)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "–" if value is None or isinstance(value, int | float) else value
    if unit == "fraction":
        return percent(value)
    if unit == "W":
        return display(value, "W")
    return display(value)


@register.filter
def with_unit(value, unit):
    """A number with its unit, SI-prefixed where the unit takes one ("30.9 GFLOP", "5.17 MW")."""
    return display(value, unit) if isinstance(value, int | float) and not isinstance(value, bool) else value


@register.filter
def signed_percent(fraction):
    """A relative error with its sign: "+37.0%", "−45.2%"."""
    if fraction is None or not math.isfinite(fraction):
        return "–"
    return f"{'+' if fraction >= 0 else '−'}{abs(fraction) * 100:.1f}%"


register.filter(duration)


@register.filter
def duration_us(microseconds):
    """A time given in microseconds (as traces count) in the unit people read it in: "27.1 ms"."""
    if microseconds is None or isinstance(microseconds, bool) or not isinstance(microseconds, int | float):
        return "–"
    return duration(microseconds / 1e6)


@register.filter
def chance(fraction):
    """A probability in whole percent ("95%"), the precision a band taken as uniform supports."""
    if fraction is None or not math.isfinite(fraction):
        return "–"
    return f"{fraction * 100:.0f}%"


@register.filter
def money(value, currency=""):
    """An amount with thousands separators and no trailing zeros, then its currency: "515,000 USD",
    "0.21 REL"."""
    if value is None:
        return "not priced"
    amount = Decimal(value)
    text = f"{amount:,f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {currency}".strip()


@register.filter
def short_money(value, currency=""):
    """An amount as the summaries write it, millions and up SI-prefixed: "26.2 M USD"."""
    if value is None:
        return "not priced"
    return display(value, currency, money=True).strip()


@register.filter
def ratio(value):
    """A ratio to a reference as "x1.23" ("–" when there is none)."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"×{value:.3g}"


@register.filter
def json_attr(value):
    """JSON for a data- attribute (the template's escaping makes it safe there; the page parses it)."""
    return json.dumps(value, allow_nan=False)
