"""Results as a flat table for notebooks: one row per scenario point, one column per metric.

``table(result)`` gives a dict of equal-length lists keyed by dotted result paths (every number,
flag and label the result holds per point); ``to_frame(result)`` the same as a pandas DataFrame
when pandas is installed (``pip install 'simcore[pandas]'``).
"""

def _leaves(tree, prefix=""):
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _leaves(value, path)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            continue  # a list of records (constraints, categories): not a per-point column
        else:
            yield path, value


def table(result: dict) -> dict[str, list]:
    """Every per-point leaf of an evaluation, broadcast to the number of points (a scalar repeats)."""
    columns = dict(_leaves({k: v for k, v in result.items() if k not in ("constraints", "engine_version")}))
    lengths = {len(v) for v in columns.values() if isinstance(v, list)}
    points = max(lengths, default=1)
    return {path: (value if isinstance(value, list) and len(value) == points else [value] * points)
            for path, value in columns.items()
            if not isinstance(value, list) or len(value) == points}


def to_frame(result: dict):
    """:func:`table` as a pandas DataFrame."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("to_frame needs pandas: pip install pandas, or the engine with its extra "
                          "(pip install './engine[pandas]'); simcore.table gives the same columns") from error
    return pandas.DataFrame(table(result))
