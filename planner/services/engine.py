"""The web project's one way into the engine: every evaluation (plans, bills, comparisons,
previews, scenarios, twins) runs through :func:`evaluate` here, memoized, metered and under the
caller's work budget; and the reference validation the pages share."""
import hashlib
import json
from functools import lru_cache

from django.core.cache import cache

import simcore
from planner import metrics
from simcore.outputs import display
from simcore.tools.references import (
    PARALLEL_SCHEMES,
    error_bands,
    held_back_coverage,
    parallel_scheme,
    training_record,
    validate,
)

EVALUATION_CACHE_S = 600


@lru_cache(maxsize=1)
def engine_validation() -> tuple[list[dict], dict[str, dict]]:
    """Every reference case with the engine's prediction and error (``simcore.tools.references.validate``).

    The cases and the engine's parameters are fixed for a running process, so the result is
    computed once."""
    return validate()


KINDS = {"dense": "dense transformer", "moe": "mixture-of-experts", "cnn": "CNN"}


def workload_kind(workload) -> str:
    return "cnn" if workload.kind == "cnn" else "moe" if workload.experts else "dense"


@lru_cache(maxsize=1)
def engine_bands() -> dict[str, dict]:
    """The error bands of the validation record (``simcore.tools.references.error_bands``)."""
    return error_bands(engine_validation()[0])


def bands_with(own_rows=()) -> dict[str, dict]:
    """The error bands with a user's own runs beside the published (their validation rows,
    :func:`planner.services.runs.own_rows`); the published alone when there are none."""
    return error_bands([*engine_validation()[0], *own_rows]) if own_rows else engine_bands()


@lru_cache(maxsize=1)
def engine_band_coverage() -> list[dict]:
    """Each family and kind's runs checked on the band built without them
    (``simcore.tools.references.held_back_coverage``)."""
    return held_back_coverage(engine_validation()[0])


# A headline output -> its band's group ("step_time" takes the family and kind) and whether the
# output is the step time's inverse (MFU: a step predicted 1+e times as long is an MFU 1/(1+e) as high).
BANDED_OUTPUTS = {"training.step_time_s": ("step_time", False), "training.mfu": ("step_time", True),
                  "power.facility_w": ("power", False)}
BAND_BASES = {"power": "published node, rack and cluster power figures"}
PRICE_BAND_BASIS = "the price book's estimates, each part at its low and at its high (a quote at its price)"


def _shown(path: str, value: float, result: dict) -> str:
    if path == "training.mfu":
        return f"{value:.1%}"
    if path == "cost.capex_total":
        return display(value, result["cost"]["currency"], money=True)
    return display(value, "s" if path == "training.step_time_s" else "W")


OWN_PREFIX = "own-"  # a user's own run's key in a band (planner.services.runs)


def own_cases(keys: list[str]) -> int:
    return sum(key.startswith(OWN_PREFIX) for key in keys)


def _band_message(path, value, result, cases, basis, low, high, validated, own=0) -> str:
    off = f"{low:+.0%}" if low == high else f"{low:+.0%} to {high:+.0%}"
    came = (_shown(path, value / (1 + high), result) if low == high else
            f"{_shown(path, value / (1 + high), result)} to {_shown(path, value / (1 + low), result)}")
    believed = "" if headline_inside(low, high) else (
        f" The figure {_shown(path, value, result)} itself lies outside that range: every such run came in "
        f"{'above' if high < 0 else 'below'} the engine's figure, so read the range, not the figure.")
    yours = f"{own} of your own run{'s' if own > 1 else ''}"
    runs = f"{cases - own} {basis}" + (f" and {yours}" if own else "") if cases > own else yours
    return (f"{'' if validated else 'Outside everything validated: '}on {runs} the prediction was "
            f"{off} off, so runs like it come in at {came}.{believed}")


def headline_inside(low_error: float, high_error: float) -> bool:
    """Whether a prediction lies inside where runs like it came in: its band's signed errors (predicted
    / published - 1) span zero. Where every case missed one way (a ZeRO-3 run's all fast, say) the
    figure is one the validation record does not believe, and is flagged wherever it is shown."""
    return low_error <= 0 <= high_error


def _band_basis(group: str, family: str, kind: str) -> str:
    if group == "step_time":
        return "published training runs of every family and kind"
    if group.count(":") == 3:
        return f"published {KINDS[kind]} training runs on {family} GPUs with {PARALLEL_SCHEMES[group.split(':')[3]]}"
    if group.startswith("step_time:"):
        return f"published {KINDS[kind]} training runs on {family} GPUs"
    return BAND_BASES[group]


def _band_name(group: str, family: str, workload, bands: dict) -> tuple[str, bool]:
    """The narrowest group with cases for a prediction, and whether any validated group held it: a
    training figure's family, kind and parallel scheme, else its family and kind, else every run's."""
    if group != "step_time":
        return group, True
    kind = workload_kind(workload)
    for name in (f"step_time:{family}:{kind}:{parallel_scheme(workload.zero_stage)}",
                 f"step_time:{family}:{kind}"):
        if name in bands:
            return name, True
    return group, False


def step_time_band(family: str, workload, own_rows=()) -> dict:
    """The step time's band for a family and workload (:func:`_band_name`) on the published runs and
    the user's own (``own_rows``, as :func:`bands_with` takes them): its group, cases (``own_cases`` of
    them the user's), lowest and highest signed error, whether validated and the sentence naming its
    runs. Times that scale with the step time (time to train) share it."""
    bands = bands_with(own_rows)
    name, validated = _band_name("step_time", family, workload, bands)
    band = bands[name]
    return {"group": name, "cases": band["cases"], "own_cases": own_cases(band["keys"]), "low_error": band["low"],
            "high_error": band["high"], "validated": validated,
            "headline_inside": headline_inside(band["low"], band["high"]),
            "basis": _band_basis(name, family, workload_kind(workload))}


def prediction_bands(family: str, workload, result: dict, own_rows=()) -> dict[str, dict]:
    """Each headline prediction with its error band: the signed errors of the validation record's
    cases of the same kind (for a training figure, :func:`_band_name`; where none is validated,
    every training run's, and ``validated`` false), the user's own runs among them (``own_rows``;
    ``keys`` names every case), and the range runs like it came in at."""
    bands = bands_with(own_rows)
    kind = workload_kind(workload) if workload else None
    found = {}
    for path, (group, inverse) in BANDED_OUTPUTS.items():
        section, key = path.split(".")
        value = (result.get(section) or {}).get(key)
        if value is None or (group == "step_time" and kind is None):
            continue
        name, validated = _band_name(group, family, workload, bands)
        band = bands[name]
        own = own_cases(band["keys"])
        low, high = band["low"], band["high"]
        if inverse:
            low, high = 1 / (1 + high) - 1, 1 / (1 + low) - 1
        basis = _band_basis(name, family, kind)
        found[path] = {"value": value, "low_error": low, "high_error": high, "actual_low": value / (1 + high),
                       "actual_high": value / (1 + low), "cases": band["cases"], "own_cases": own,
                       "keys": band["keys"], "group": name, "validated": validated, "basis": basis,
                       "headline_inside": headline_inside(low, high),
                       "message": _band_message(path, value, result, band["cases"], basis, low, high, validated, own)}
    price = price_band(result)
    if price is not None:
        found["cost.capex_total"] = price
    return found


def price_band(result: dict) -> dict | None:
    """The total price's band from the price book's own lows and highs (the engine's ``capex_low``
    and ``capex_high``), never from the validation record; None where the total is unknown."""
    cost = result["cost"]
    value, low, high = cost["capex_total"], cost.get("capex_low"), cost.get("capex_high")
    if value is None or low is None or high is None:
        return None
    low_error, high_error = (low / value - 1, high / value - 1) if value else (0.0, 0.0)
    shown = display(low, cost["currency"], money=True), display(high, cost["currency"], money=True)
    message = (f"The price is {shown[0]} to {shown[1]}: {PRICE_BAND_BASIS}." if low < high else
               "Every counted part is quoted or listed: the price has no estimate's band.")
    return {"value": value, "low_error": low_error, "high_error": high_error, "actual_low": low,
            "actual_high": high, "cases": None, "own_cases": 0, "keys": [], "group": "price book", "validated": True,
            "basis": PRICE_BAND_BASIS, "headline_inside": True, "message": message}


def training_trust(family: str, workload, own_rows=()) -> dict:
    """How far the validation record says to trust a plan's training figures: the published runs of
    its accelerator family and the workload's kind (:func:`simcore.tools.references.training_record`),
    and the user's own runs like it (``own_rows``: ``own_cases`` and ``own_passing``), with a sentence
    saying so for the report beside those figures."""
    kind = workload_kind(workload)
    record = training_record(engine_validation()[0], family, kind)
    own = training_record(list(own_rows), family, kind)
    runs = f"published {KINDS[kind]} training runs on {family} GPUs"
    if not record["cases"]:
        message = f"No {runs} are in the validation set: these training figures are not checked against any."
    elif record["passing"] == record["cases"]:
        message = (f"All {record['cases']} {runs} in the validation set are predicted within their tolerance "
                   f"(median error {record['median_abs_error']:.1%}).")
    else:
        message = (f"{record['passing']} of {record['cases']} {runs} are predicted within their tolerance "
                   f"(median error {record['median_abs_error']:.1%}, largest {record['max_abs_error']:.0%}): "
                   "read these training figures with that margin.")
    if own["cases"]:
        message += (f" Of your own {own['cases']} run{'s' if own['cases'] > 1 else ''} like it, {own['passing']} "
                    f"{'is' if own['passing'] == 1 else 'are'} within tolerance (largest error "
                    f"{own['max_abs_error']:.0%}); the bands below take {'it' if own['cases'] == 1 else 'them'}.")
    trusted = bool(record["cases"]) and record["passing"] == record["cases"] and own["passing"] == own["cases"]
    return {**record, "own_cases": own["cases"], "own_passing": own["passing"], "trusted": trusted,
            "message": message}


def memoized(kind: str, document: dict, compute):
    """``compute()``, memoized in the cache for EVALUATION_CACHE_S under the document and engine
    version: the engine's outputs are a pure function of both, and architects evaluate the same
    presets and plans again and again."""
    digest = hashlib.sha256(json.dumps([simcore.ENGINE_VERSION, document], sort_keys=True, default=str).encode())
    key = f"{kind}:{digest.hexdigest()}"
    value = cache.get(key)
    if value is None:
        value = metered(kind, compute)
        cache.set(key, value, EVALUATION_CACHE_S)
    return value


def metered(kind: str, compute):
    """``compute()`` counted and timed under ``kind`` in the evaluation metrics."""
    metrics.EVALUATIONS.labels(kind).inc()
    with metrics.EVALUATION_SECONDS.labels(kind).time():
        return compute()


def evaluate(document: dict, *, work_budget_s: float | None = None, kind: str = "evaluation",
             memoize: bool = True) -> dict:
    """The engine's result for a scenario document (``simcore.evaluate``), refused past
    ``work_budget_s``; memoized unless ``memoize`` is false (a caller's arbitrary grid, too large
    to keep)."""
    def compute():
        return simcore.evaluate(document, work_budget_s=work_budget_s)
    return memoized(kind, document, compute) if memoize else metered(kind, compute)


def curves(document: dict, result: dict) -> dict:
    """The plan page's curves for a document and its result, memoized as evaluations are."""
    return memoized("curves", document, lambda: simcore.curves(document, result=result))
