"""The web project's one way into the engine: every evaluation (plans, bills, comparisons,
previews, scenarios, twins) runs through :func:`evaluate` here, memoized, metered and under the
caller's work budget; and the reference validation the pages share."""
import hashlib
import json
from functools import lru_cache

from django.core.cache import cache

import simcore
from planner import metrics
from simcore.tools.references import training_record, validate

EVALUATION_CACHE_S = 600


@lru_cache(maxsize=1)
def engine_validation() -> tuple[list[dict], dict[str, dict]]:
    """Every reference case with the engine's prediction and error (``simcore.tools.references.validate``).

    The cases and the engine's parameters are fixed for a running process, so the result is
    computed once."""
    return validate()


KINDS = {"dense": "dense transformer", "moe": "mixture-of-experts", "cnn": "CNN"}


def training_trust(family: str, workload) -> dict:
    """How far the validation record says to trust a plan's training figures: the published runs of
    its accelerator family and the workload's kind (:func:`simcore.tools.references.training_record`),
    with a sentence saying so for the report beside those figures."""
    kind = "cnn" if workload.kind == "cnn" else "moe" if workload.experts else "dense"
    record = training_record(engine_validation()[0], family, kind)
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
    return {**record, "trusted": bool(record["cases"]) and record["passing"] == record["cases"], "message": message}


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
