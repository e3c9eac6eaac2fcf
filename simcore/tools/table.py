"""Results as a flat table for notebooks: one row per scenario point, one column per metric.

``table(result)`` gives a dict of equal-length lists keyed by dotted result paths (every number,
flag and label the result holds per point); ``to_frame(result)`` the same as a pandas DataFrame
when pandas is installed (``pip install pandas``, or the engine's extra:
``pip install './engine[pandas]'``).
"""
from simcore.outputs import value_kind

# Outputs whose one value is itself a list (of names), not one entry per scenario point.
LIST_OUTPUTS = frozenset({"cost.unpriced", "reliability.excluded_categories"})
_TYPED = {"flag": bool, "count": int}


def _leaves(tree, prefix=""):
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _leaves(value, path)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            continue  # a list of records (constraints, categories): not a per-point column
        else:
            yield path, value


def _points(columns: dict) -> int:
    lengths = {len(v) for path, v in columns.items() if isinstance(v, list) and path not in LIST_OUTPUTS}
    return max(lengths, default=1)


def _per_point(path: str, value, points: int) -> list:
    """A leaf's column: its per-point list, or its one value (a list output's list, a scalar) repeated."""
    column = value if isinstance(value, list) and path not in LIST_OUTPUTS else [value] * points
    typed = _TYPED.get(value_kind(path))
    return column if typed is None else [None if v is None else typed(v) for v in column]


def table(result: dict) -> dict[str, list]:
    """Every per-point leaf of an evaluation, one entry per scenario point: a one-value leaf
    repeats, a list output (``LIST_OUTPUTS``) is one list cell per point; flags are booleans and
    counts integers (``simcore.outputs.value_kind``)."""
    columns = dict(_leaves({k: v for k, v in result.items() if k not in ("constraints", "engine_version")}))
    points = _points(columns)
    return {path: _per_point(path, value, points) for path, value in columns.items()
            if not isinstance(value, list) or path in LIST_OUTPUTS or len(value) == points}


def to_frame(result: dict):
    """:func:`table` as a pandas DataFrame."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("to_frame needs pandas: pip install pandas, or the engine with its extra "
                          "(pip install './engine[pandas]'); simcore.table gives the same columns") from error
    return pandas.DataFrame(table(result))
