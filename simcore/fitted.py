"""Fitted constants: the few costs no microbenchmark measures, fitted over the development set.

Each constant belongs to a hardware family or a software stack (never a workload), has a physical
meaning and bounds from physics, and is fitted by ``python -m simcore fit`` (:mod:`simcore.tools.fit`:
SciPy's bounded least squares over the log errors of the validation-record rows it names). The fit
also leaves each group of rows out in turn, refits on the rest and predicts the group: that
leave-one-group-out error is the honest error of a fitted row, and the one its band counts.

The declarations (meaning, bounds, rows, groups) and the fit's results (value, per-group values and
errors) live in ``simcore/data/fitted_constants.yaml``, checked against the JSON Schema beside it.
The file is read once, on first use, not at import.
"""
from functools import cache
from pathlib import Path

FITTED_PATH = Path(__file__).resolve().parent / "data" / "fitted_constants.yaml"
SCHEMA_VERSION = 1


@cache
def declarations() -> tuple[dict, ...]:
    """Every fitted constant's entry in the data file, as written (read once)."""
    import yaml  # (here, not at import: the engine imports without parsing any YAML)

    data = yaml.safe_load(FITTED_PATH.read_text(encoding="utf-8"))
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{FITTED_PATH.name} is version {data.get('schema_version')}, "
                         f"this engine reads {SCHEMA_VERSION}")
    return tuple(data["constants"])


def values() -> dict[str, float]:
    """The fitted value of every constant by name (what :class:`simcore.EngineParams` starts from)."""
    return {entry["name"]: float(entry["value"]) for entry in declarations()}


def held_out_values() -> dict[str, dict[str, float]]:
    """For each row a constant was fitted on: each such constant's value fitted without the row's group."""
    found: dict[str, dict[str, float]] = {}
    for entry in declarations():
        for group in entry.get("leave_one_group_out", ()):
            for key in entry["groups"][group["group"]]:
                found.setdefault(key, {})[entry["name"]] = float(group["value"])
    return found
