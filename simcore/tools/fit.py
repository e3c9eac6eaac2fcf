"""Fitting the constants no microbenchmark gives (:mod:`simcore.fitted`) over the development set.

For each constant declared in ``simcore/data/fitted_constants.yaml``: SciPy's bounded least squares
(``scipy.optimize.least_squares``, trust-region reflective) over the log errors, log(predicted /
published), of the validation-record rows it names, with every other constant at its fitted value;
then, for each of its groups, the same fit without the group's rows and the group's rows predicted
with that value (leave one group out). ``python -m simcore fit`` prints the fits; ``--write`` stores
them in the data file, which the engine and ``validate`` read.
"""
import datetime
from dataclasses import replace

import numpy as np
import yaml
from scipy.optimize import least_squares

from simcore.fitted import FITTED_PATH, declarations
from simcore.stages.scenario import EngineParams
from simcore.tools.references import ReferenceCase, record


def _cases(keys) -> list[ReferenceCase]:
    by_key = {case.key: case for case in record()[1]}
    missing = [key for key in keys if key not in by_key]
    if missing:
        raise KeyError(f"no reference case {', '.join(missing)}")
    return [by_key[key] for key in keys]


def errors_at(name: str, value: float, cases: list[ReferenceCase], base: EngineParams) -> np.ndarray:
    """The cases' signed relative errors (predicted / published - 1) with constant ``name`` at ``value``."""
    params = replace(base, fitted={**base.fitted, name: value})
    return np.array([case.predict(params) / case.published - 1 for case in cases])


def best_value(name: str, bounds, cases: list[ReferenceCase], base: EngineParams) -> float:
    """The value within ``bounds`` that minimizes the cases' summed squared log errors."""
    low, high = bounds
    start = float(np.clip(base.fitted.get(name, (low + high) / 2), low, high))
    fitted = least_squares(lambda x: np.log1p(errors_at(name, x[0], cases, base)), x0=[start],
                           bounds=([low], [high]), diff_step=1e-3, xtol=1e-6)
    return float(fitted.x[0])


def fit(entry: dict, base: EngineParams | None = None) -> dict:
    """One constant's entry with its fit: the value over every group, its mean absolute error, and each
    group left out in turn (the value fitted on the others, the group's errors at it)."""
    base = base or EngineParams()
    name, bounds, groups = entry["name"], entry["bounds"], entry["groups"]
    every = _cases([key for keys in groups.values() for key in keys])
    value = best_value(name, bounds, every, base)
    left_out = []
    for group, keys in groups.items():
        others = _cases([key for other, members in groups.items() if other != group for key in members])
        group_value = best_value(name, bounds, others, base)
        errors = errors_at(name, group_value, _cases(keys), base)
        left_out.append({"group": group, "value": round(group_value, 6),
                         "errors": {key: round(float(e), 6) for key, e in zip(keys, errors)},
                         "mean_abs_error": round(float(np.mean(np.abs(errors))), 6)})
    return {**entry, "value": round(value, 6), "fitted_on": datetime.date.today().isoformat(),
            "fit_mean_abs_error": round(float(np.mean(np.abs(errors_at(name, value, every, base)))), 6),
            "leave_one_group_out": left_out,
            "logo_max_abs_error": max(abs(e) for g in left_out for e in g["errors"].values())}


def fit_all() -> list[dict]:
    """Every declared constant fitted, in the file's order, each with the ones before it at their new values."""
    base = EngineParams()
    entries = []
    for entry in declarations():
        entries.append(fit(entry, base))
        base = replace(base, fitted={**base.fitted, entry["name"]: entries[-1]["value"]})
    return entries


def write(entries: list[dict]) -> None:
    """Store the fits in the data file, its header comment kept."""
    text = FITTED_PATH.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    body = yaml.safe_dump({"schema_version": 1, "constants": entries}, sort_keys=False, width=110, allow_unicode=True)
    FITTED_PATH.write_text(header + body, encoding="utf-8")
    declarations.cache_clear()


def report(entries: list[dict]) -> list[str]:
    """The fits as printed lines: each constant's value and bounds, its rows' mean error, and each group
    left out (the value fitted without it and the group's mean absolute error at that value)."""
    lines = []
    for entry in entries:
        rows = sum(len(keys) for keys in entry["groups"].values())
        lines.append(f"{entry['name']} = {entry['value']:.4g} {entry['unit']} (bounds {entry['bounds'][0]:g}-"
                     f"{entry['bounds'][1]:g}; {entry['scope']}): {rows} rows in {len(entry['groups'])} groups, "
                     f"mean |error| {entry['fit_mean_abs_error']:.1%}, leave-one-group-out max |error| "
                     f"{entry['logo_max_abs_error']:.1%}")
        for group in entry["leave_one_group_out"]:
            lines.append(f"  without {group['group']:36} {group['value']:10.4g}  its rows' mean |error| "
                         f"{group['mean_abs_error']:.1%}")
    return lines
