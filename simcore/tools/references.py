"""The validation record: published reference cases, and the suite that compares the engine with them.

The cases are data (``simcore/data/reference_cases.yaml``, with its JSON Schema beside it): each
names its source, the published figure, how close the engine must come and the scenario document
the engine predicts it from (docs/scenario-format.md). The scenarios are hardware facts and the
publications' setups, never their results. ``validate()`` returns one row per case and a summary per
model; ``python -m simcore validate`` prints them. :func:`case_from` reads a case of the same kind
from any mapping, so that a user's own measured runs are checked, and banded, as the published are.
"""
import copy
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from simcore import fitted
from simcore.document import parse
from simcore.errors import ScenarioError
from simcore.formulas import collectives
from simcore.formulas.node import node_io
from simcore.stages.scenario import EngineParams, evaluate_parsed

CASES_PATH = Path(__file__).resolve().parent.parent / "data" / "reference_cases.yaml"
SCHEMA_PATH = CASES_PATH.with_name("reference_cases.schema.json")
SCHEMA_VERSION = 1
MEASURES = ("output", "ratio", "allreduce", "traced_compute")
PARALLEL_SCHEMES = {"3d": "tensor, pipeline and data parallelism (whole weights on each rank)",
                    "zero3": "ZeRO-3 (weights sharded and gathered for every layer)"}


def parallel_scheme(zero_stage: int) -> str:
    """A run's parallel scheme for its band: ``zero3`` when its weights are sharded over the
    data-parallel ranks and gathered for every layer (ZeRO-3, FSDP), else ``3d``: two ways of
    running whose published errors differ most (SC21 Table 2's ZeRO-3 against PTD-P rows)."""
    return "zero3" if zero_stage == 3 else "3d"


def run(cluster: dict, workload: dict | None = None, options: dict | None = None,
        params: EngineParams | None = None) -> dict:
    """Evaluate a scenario and return the raw result (arrays, not JSON)."""
    document = {"cluster": cluster}
    if workload is not None:
        document["workload"] = workload
    if options is not None:
        document["options"] = options
    return run_document(document, params)


def run_document(document: dict, params: EngineParams | None = None) -> dict:
    """Evaluate a scenario document (left as it is: cases share their parts) and return the raw result."""
    return evaluate_parsed(parse(copy.deepcopy(document)), params or EngineParams())


def _at(tree: dict, path: str) -> float:
    """The number at a dotted path; a last segment ending in "*" sums the keys it starts."""
    *parents, last = path.split(".")
    for key in parents:
        tree = tree[key]
    if last.endswith("*"):
        return float(sum(value for key, value in tree.items() if key.startswith(last[:-1])))
    return float(tree[last])


def _allreduce(spec: dict, params: EngineParams) -> float:
    """An allreduce's algorithm bandwidth (GB/s) from the collective formulas on the scenario's node."""
    cluster = parse(copy.deepcopy(spec["scenario"]))["cluster"]
    accelerator = cluster["node"]["accelerator"]
    io = node_io(cluster["node"], accelerator, cluster["node"]["gpus"],
                 params.families[accelerator["family"]].scaleup_fraction, params.collectives)
    nodes, size = spec["gpus"] / cluster["node"]["gpus"], spec["size_bytes"]
    if spec["library"] == "nccl":
        return float(collectives.nccl_allreduce(size, nodes, io, params=params.collectives).algbw_gbyte_s)
    nvlink, cross_zone = spec["library"] == "hfreduce-nvlink", spec.get("cross_zone", False)
    return float(collectives.hfreduce(size, nodes, io, nvlink=nvlink, cross_zone=cross_zone,
                                      params=params.collectives).algbw_gbyte_s)


def predict(spec: dict, params: EngineParams) -> float:
    """A case's prediction from its ``predict`` mapping (the case file's header says each key)."""
    measure = spec.get("measure", "output")
    if measure == "allreduce":
        value = _allreduce(spec, params)
    elif measure == "traced_compute":
        from simcore.tools.trace import predicted_split

        value = sum(predicted_split(spec["scenario"], spec.get("moe_layers", 0), spec.get("dense_layers", 0)).values())
        value /= 1e6
    else:
        paths = spec["output"] if isinstance(spec["output"], list) else [spec["output"]]
        result = run_document(spec["scenario"], params)
        if measure == "ratio":
            other = run_document(spec["denominator"], params)
            value = float(np.mean([_at(result, path) / _at(other, path) for path in paths]))
            if "per_input" in spec:
                value /= _at(spec["scenario"], spec["per_input"]) / _at(spec["denominator"], spec["per_input"])
        else:
            value = sum(_at(result, path) for path in paths)
    if "times_input" in spec:
        value *= _at(spec["scenario"], spec["times_input"])
    if "multiply_by" in spec:
        value *= spec["multiply_by"]
    if "divide_by" in spec:
        value /= spec["divide_by"]
    return value


@dataclass(frozen=True)
class ReferenceCase:
    key: str
    model: str
    quantity: str
    unit: str
    published: float
    source: str
    prediction: dict  # what the engine computes to compare (:func:`predict`)
    rel_tolerance: float | None = None
    within: tuple[float, float] | None = None  # a window the prediction must fall in
    calibration: bool = False  # the case a calibrated constant was set from
    # The window is the publication's own range ("3-4 MW"); otherwise the publication gives one value
    # and a window around it is a weak check: it passes predictions further off than the figure is.
    published_range: bool = False
    # A training run's GPU family and model kind ("dense", "moe" or "cnn"): what a plan's training
    # figures are checked against (:func:`training_record`); None for other cases.
    trains: tuple[str, str] | None = None
    # A training run's parallel scheme (:func:`parallel_scheme`): what splits its band further.
    parallel: str = "3d"
    known_miss: str = ""  # why the engine misses it today; empty: it must pass

    def predict(self, params: EngineParams) -> float:
        return predict(self.prediction, params)

    def admits(self) -> tuple[float, float]:
        """The relative errors against the published value the criterion lets pass, low and high."""
        if self.within is not None:
            return self.within[0] / self.published - 1, self.within[1] / self.published - 1
        return -self.rel_tolerance, self.rel_tolerance

    @property
    def weak_check(self) -> bool:
        return self.within is not None and not self.published_range

    def passes(self, predicted: float) -> bool:
        if self.within is not None:
            low, high = self.within
            return low <= predicted <= high
        return abs(predicted / self.published - 1) <= self.rel_tolerance


def case_from(entry: dict) -> ReferenceCase:
    """One case from its mapping in the case file's form; ScenarioError naming the field otherwise
    (the schema says the same; this is what the engine needs to run it)."""
    key = entry.get("key", "?")
    for field in ("key", "model", "quantity", "unit", "published", "source", "predict"):
        if field not in entry:
            raise ScenarioError(f"cases.{key}.{field}", "is required")
    if ("within" in entry) == ("rel_tolerance" in entry):
        raise ScenarioError(f"cases.{key}.rel_tolerance", "give rel_tolerance or within, one of them")
    if entry["predict"].get("measure", "output") not in MEASURES:
        raise ScenarioError(f"cases.{key}.predict.measure", f"must be one of {', '.join(MEASURES)}")
    trains = entry.get("trains")
    return ReferenceCase(
        key, entry["model"], entry["quantity"], entry["unit"], entry["published"], entry["source"], entry["predict"],
        rel_tolerance=entry.get("rel_tolerance"), within=tuple(entry["within"]) if "within" in entry else None,
        calibration=entry.get("calibration", False), published_range=entry.get("published_range", False),
        trains=(trains["family"], trains["kind"]) if trains else None,
        parallel=trains.get("parallel", "3d") if trains else "3d", known_miss=entry.get("known_miss", ""))


def load_cases(path: Path = CASES_PATH) -> tuple[dict[str, dict], list[ReferenceCase]]:
    """The case file's named parts and its cases."""
    import yaml  # (here, not at import: the record is read on first use)

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ScenarioError("schema_version", f"{path.name} is version {data.get('schema_version')}, "
                                              f"this engine reads {SCHEMA_VERSION}")
    return data["parts"], [case_from(entry) for entry in data["cases"]]


@cache
def record() -> tuple[dict[str, dict], tuple[ReferenceCase, ...]]:
    """The case file's parts and cases, read on first use (not at import: the file is large)."""
    parts, cases = load_cases()
    return parts, tuple(cases)


# Parts other modules and the tests build on, by module attribute (read from the record on first use).
NAMED_PARTS = {"FF_NODE": "ff-node", "DGX_A100_NODE": "dgx-a100-node", "FF_2ZONE": "ff-2zone",
               "FF_3LAYER": "ff-3layer", "DGX_3LAYER": "dgx-3layer", "SELENE": "selene", "SC21_GPT": "sc21-gpt",
               "VGG16": "vgg16", "GPT2_MEDIUM": "gpt2-medium", "LLAMA_13B": "llama-13b", "LLAMA3_NODE": "llama3-node",
               "LLAMA3_CLUSTER": "llama3-cluster", "LLAMA3_405B": "llama3-405b", "GB200_TRAY": "gb200-tray",
               "NVL72_RACKS": "nvl72-racks", "DGX_B200_NODE": "dgx-b200-node", "DGXC_FABRIC": "dgxc-fabric",
               "DGXC_LLAMA_70B": "dgxc-llama-70b", "DEEPSEEK_V3": "deepseek-v3", "DEEPSEEK_V3_RUN": "deepseek-v3-run",
               "DEEPSEEK_V3_CLUSTER": "deepseek-v3-cluster"}


def known_misses() -> dict[str, str]:
    """Cases the engine misses today, each with why (docs/engine.md, "Known misses", says more): the test
    suite expects each to fail, and ``simcore validate`` exits non-zero for a failure not listed here."""
    return {case.key: case.known_miss for case in record()[1] if case.known_miss}


def __getattr__(name: str):
    """``PARTS``, ``CASES``, ``KNOWN_MISSES`` and the named parts, from the record read on first use."""
    if name == "PARTS":
        return record()[0]
    if name == "CASES":
        return record()[1]
    if name == "KNOWN_MISSES":
        return known_misses()
    if name in NAMED_PARTS:
        return record()[0][NAMED_PARTS[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def scenario(key: str) -> dict:
    """The scenario document a case predicts from (its first, for a ratio)."""
    return next(case.prediction["scenario"] for case in record()[1] if case.key == key)


def training_record(rows: list[dict], family: str, kind: str) -> dict:
    """How the engine did on the published training runs of one GPU family and model kind (rows from
    :func:`validate`): cases, how many meet their criterion, median and largest error, the models
    they belong to. No runs: ``cases`` 0 (the figures are unchecked for that family and kind)."""
    mine = [row for row in rows if row["trains"] == [family, kind]]
    errors = [abs(row["error"]) for row in mine]
    return {"family": family, "kind": kind, "cases": len(mine), "passing": sum(row["passes"] for row in mine),
            "median_abs_error": float(np.median(errors)) if errors else None,
            "max_abs_error": float(np.max(errors)) if errors else None,
            "models": sorted({row["model"] for row in mine})}


# Error bands: what the validation record says of a prediction of one kind. A band is the spread of
# the signed errors of the reference cases of its group (none set a calibrated constant), so a new
# prediction x of that kind is read as "runs like it came in at x/(1+high) to x/(1+low)".
STEP_TIME_UNITS = {"s": 1, "TFLOPS/GPU": -1, "MFU": -1, "tokens/s/GPU": -1}  # 1: a time; -1: a rate


def band_groups(row: dict) -> list[str]:
    """Every band a validation row counts in, narrowest first: a training run's step time or rate
    in ``step_time:<family>:<kind>:<scheme>``, ``step_time:<family>:<kind>`` and the pooled
    ``step_time``; a power or price figure in its one group; nothing for the rest."""
    group = band_group(row)
    if group is None:
        return []
    if group.startswith("step_time:"):
        return [f"{group}:{row['parallel']}", group, "step_time"]
    return [group]


def band_group(row: dict) -> str | None:
    """The band a validation row belongs to: ``step_time:<family>:<kind>`` for a training run's step
    time or rate, ``power`` for a node's, rack's or cluster's power, ``price`` for a build's price;
    None for the rest (bandwidths, counts, the fused/unfused ratios)."""
    if row["trains"] and row["unit"] in STEP_TIME_UNITS:
        return "step_time:{}:{}".format(*row["trains"])
    if row["unit"] in ("kW", "MW"):
        return "power"
    if row["unit"] == "relative" and "price" in row["quantity"]:
        return "price"
    return None


def band_error(row: dict) -> float:
    """A row's signed error in its band's quantity: a rate's error turned into the step time's
    (a rate predicted 1+e times too high is a step predicted 1/(1+e) times as long). A row a constant
    was fitted on counts with its held-out error (the constant fitted without the row's group)."""
    error = row["held_out_error"] if row.get("held_out_error") is not None else row["error"]
    if row["trains"] and STEP_TIME_UNITS.get(row["unit"]) == -1:
        return 1 / (1 + error) - 1
    return error


def error_bands(rows: list[dict], leave_out: str | None = None) -> dict[str, dict]:
    """Every band from validation rows (:func:`validate`) in each of its groups (:func:`band_groups`):
    its cases, the lowest and highest signed error and the cases' keys. Rows of cases a calibrated
    constant was set from are left out (their error is small by construction), and so are the rows
    of the group ``leave_out`` (to check a band on runs it was not built from)."""
    groups: dict[str, list[tuple[str, float]]] = {}
    for row in rows:
        names = band_groups(row)
        if row["calibration"] or leave_out in names:
            continue
        for name in names:
            groups.setdefault(name, []).append((row["key"], band_error(row)))
    return {name: {"cases": len(found), "low": min(e for _, e in found), "high": max(e for _, e in found),
                   "keys": [key for key, _ in found]} for name, found in groups.items()}


# The confidences a site is planned at, checked on held-back runs (held_back_coverage).
CONFIDENCES = (0.5, 0.8, 0.95)


def _within_quantiles(errors: list[float], low: float, high: float) -> dict[str, int]:
    """How many runs' real step times (predicted / (1 + e)) are at or under the c-quantile of the
    band (low, high) taken as uniform over the times it allows, as the site ranking plans
    (``simcore.tools.site.at_confidence``), for each of CONFIDENCES."""
    fastest, slowest = 1 / (1 + high), 1 / (1 + low)
    return {f"{c:g}": sum(1 / (1 + e) <= fastest + c * (slowest - fastest) for e in errors) for c in CONFIDENCES}


def held_back_coverage(rows: list[dict]) -> list[dict]:
    """Each step-time group checked on the band a prediction falls back to when the group has no
    case: a family and kind on every other training run's band (``step_time``), a parallel scheme
    on its family and kind's band without the scheme's runs. Each check: the band built without
    the group, how many of the group's own cases fall inside it, and how many come in at or under
    its 50%, 80% and 95% points (``within``: a site planned at c should see at least that share). A
    scheme that is all its family and kind's runs has nothing to fall back on and is not listed."""
    checks = []
    for group in sorted(g for g in error_bands(rows) if g.startswith("step_time:")):
        fallback = group.rsplit(":", 1)[0] if group.count(":") == 3 else "step_time"
        without = error_bands(rows, leave_out=group).get(fallback)
        if without is None and fallback != "step_time":
            continue
        errors = [band_error(r) for r in rows if group in band_groups(r) and not r["calibration"]]
        inside = sum(without["low"] <= e <= without["high"] for e in errors) if without else 0
        checks.append({"group": group, "fallback": fallback, "cases": len(errors), "inside": inside,
                       "band": None if without is None else (without["low"], without["high"]),
                       "within": _within_quantiles(errors, without["low"], without["high"]) if without else None})
    return checks


def case_row(case: ReferenceCase, predicted: float) -> dict:
    """A case's validation row: its prediction, error against the published figure and criterion."""
    return {
        "key": case.key, "model": case.model, "quantity": case.quantity, "unit": case.unit,
        "published": case.published, "predicted": predicted, "error": predicted / case.published - 1,
        "criterion": (f"within {case.within[0]}-{case.within[1]}" if case.within
                      else f"+/-{case.rel_tolerance:.0%}"),
        "passes": case.passes(predicted), "source": case.source, "calibration": case.calibration,
        "admits": list(case.admits()), "weak_check": case.weak_check,
        "trains": list(case.trains) if case.trains else None,
        "parallel": case.parallel if case.trains else None,
    }


def validate(params: EngineParams | None = None) -> tuple[list[dict], dict[str, dict]]:
    """Evaluate every reference case: rows with prediction, error and pass, and a per-model summary. A
    row a constant was fitted on (:mod:`simcore.fitted`) also carries ``fitted`` (the constants) and
    ``held_out_error``: its error with each such constant at its value fitted without the row's group."""
    params = params or EngineParams()
    held_out = fitted.held_out_values()
    rows = []
    for case in record()[1]:
        row = case_row(case, case.predict(params))
        row["fitted"], row["held_out_error"] = sorted(held_out.get(case.key, {})), None
        if case.key in held_out:
            left_out = replace(params, fitted={**params.fitted, **held_out[case.key]})
            row["held_out_error"] = case.predict(left_out) / case.published - 1
        rows.append(row)
    summary = {}
    for row in rows:
        entry = summary.setdefault(row["model"], {"cases": 0, "passing": 0, "weak_checks": 0, "errors": []})
        entry["cases"] += 1
        entry["passing"] += row["passes"]
        entry["weak_checks"] += row["weak_check"]
        entry["errors"].append(abs(row["error"]))
    for entry in summary.values():
        errors = entry.pop("errors")
        entry["mean_abs_error"] = float(np.mean(errors))
        entry["max_abs_error"] = float(np.max(errors))
    return rows, summary
