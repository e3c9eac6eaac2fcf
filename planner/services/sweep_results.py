"""A sweep's results as rows, selections, exports (CSV, NPZ) and the state its viewers are sent."""
import shutil
import tempfile
import zipfile

import numpy as np

from planner.models import Sweep
from planner.services.cells import csv_column
from planner.services.sweep_spec import SweepInputError, sweep_axes
from planner.services.sweep_store import chunk_columns, sweep_columns
from simcore.outputs import value_kind
from simcore.tools import sweep as engine


def sweep_state(sweep: Sweep) -> dict:
    return {
        "id": sweep.pk,
        "status": sweep.status,
        "progress": round(sweep.progress, 6),
        "completed_chunks": sweep.completed_chunks,
        "chunk_count": sweep.chunk_count,
        "total_points": sweep.total_points,
        "error": sweep.error,
    }


def _json_value(value):
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def sweep_rows(columns: dict, selection: np.ndarray) -> list[dict]:
    axis_keys = [k for k in columns if k.startswith("axis:")]
    metric_keys = [k for k in columns if k not in {"point", "valid", "invalid_reason", *axis_keys}]
    rows = []
    for i in selection:
        rows.append({
            "point": int(columns["point"][i]),
            "axes": {k[5:]: _json_value(columns[k][i]) for k in axis_keys},
            "valid": bool(columns["valid"][i]),
            "invalid_reason": str(columns["invalid_reason"][i]),
            "outputs": {k: _json_value(columns[k][i]) for k in metric_keys},
        })
    return rows


def sweep_select(columns: dict, *, valid: bool | None = None, order_by: str | None = None,
                 feasible_points: list[int] | None = None) -> np.ndarray:
    """Row positions that pass the filters, in the requested order (vectorized)."""
    keep = np.ones(len(columns["point"]), dtype=bool)
    if valid is not None:
        keep &= columns["valid"].astype(bool) == valid
    if feasible_points is not None:
        keep &= np.isin(columns["point"], feasible_points)
    selection = np.flatnonzero(keep)
    if order_by:
        key = order_by.lstrip("-")
        if key not in columns or columns[key].dtype == object:
            raise SweepInputError({"order_by": [f"'{key}' is not a stored numeric output or axis"]})
        values = columns[key][selection].astype(float)
        order = np.argsort(np.where(np.isnan(values), np.inf, -values if order_by.startswith("-") else values),
                           kind="stable")
        selection = selection[order]
    return selection


EXPORT_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet", "npz": "application/octet-stream"}


def _export_order(columns: dict) -> list[str]:
    """Columns as exported: the point, the axes, the outputs, then validity and its reason."""
    axes = [k for k in columns if k.startswith("axis:")]
    outputs = [k for k in columns if k not in ("point", "valid", "invalid_reason") and k not in axes]
    return ["point", *axes, *outputs, "valid", "invalid_reason"]


def _arrow_column(key: str, values: np.ndarray):
    """One exported column: text as text, validity and flag outputs as booleans, count outputs as
    integers (``simcore.outputs.value_kind``), other numbers as doubles; NaN is a missing value."""
    import pyarrow as pa

    if values.dtype == object:
        return pa.array(values.astype(str))
    kind = "flag" if key == "valid" else value_kind(key)
    if kind == "number":
        return pa.array(values, from_pandas=True)
    missing = np.isnan(values.astype(float))
    whole = np.where(missing, 0, values).astype(bool if kind == "flag" else np.int64)
    return pa.array(whole, mask=missing)


def _table(columns: dict):
    """One chunk as an Arrow table (:func:`_arrow_column`), the axis prefix dropped."""
    import pyarrow as pa

    keys = _export_order(columns)
    return pa.table([_arrow_column(k, columns[k]) for k in keys], names=[k.removeprefix("axis:") for k in keys])


def sweep_export(sweep: Sweep, kind: str):
    """The sweep's points as a file (a temporary one, deleted when closed) written chunk by chunk,
    so memory stays that of one chunk: CSV or Parquet (one row group a chunk), or NPZ
    (:func:`write_npz`)."""
    # pyarrow is imported on first export, not at every web and worker process's start-up (about 40 MB).
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    out = tempfile.TemporaryFile()
    if kind == "npz":
        write_npz(out, sweep)
    else:
        writer = None
        for part in chunk_columns(sweep):
            table = _table({key: csv_column(values) for key, values in part.items()} if kind == "csv" else part)
            if writer is None:
                writer = (pa_csv.CSVWriter(out, table.schema) if kind == "csv"
                          else pq.ParquetWriter(out, table.schema, compression="zstd"))
            writer.write_table(table)
        if writer is not None:
            writer.close()
    out.seek(0)
    return out


def _npz_name(key: str) -> str:
    return key.replace(":", "__") + ".npy"


def write_npz(out, sweep: Sweep) -> None:
    """The sweep as a NumPy ``.npz`` (one ``.npy`` per column, compressed), in the memory of one
    chunk: each column's chunks are spooled to a temporary file, then copied into its archive entry
    behind an ``.npy`` header for the whole length. Text columns (axis slugs, invalid reasons) are
    fixed-width strings as wide as their widest value, which a first read of the chunks finds."""
    widths: dict[str, int] = {}
    for part in chunk_columns(sweep):
        for key, values in part.items():
            if values.dtype.kind in "OUS":
                widths[key] = max(widths.get(key, 1), int(np.char.str_len(values.astype(str)).max(initial=1)))
    spools: dict[str, tuple] = {}
    total = 0
    try:
        for part in chunk_columns(sweep):
            for key, values in part.items():
                dtype = np.dtype(f"<U{widths[key]}") if key in widths else spools.get(key, (None, values.dtype))[1]
                spool = spools.setdefault(key, (tempfile.TemporaryFile(), dtype))[0]
                spool.write(np.ascontiguousarray(values.astype(dtype)).tobytes())
            total += len(part["point"])
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
            if not spools:  # nothing stored: the columns, empty
                for key, values in sweep_columns(sweep).items():
                    with archive.open(_npz_name(key), "w") as entry:
                        np.lib.format.write_array(entry, values.astype(str) if values.dtype == object else values)
            for key, (spool, dtype) in spools.items():
                with archive.open(_npz_name(key), "w", force_zip64=True) as entry:
                    np.lib.format.write_array_header_1_0(entry, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                                 "fortran_order": False, "shape": (total,)})
                    spool.seek(0)
                    shutil.copyfileobj(spool, entry, 1 << 20)
    finally:
        for spool, _ in spools.values():
            spool.close()


def selection_keys(sweep: Sweep, order_by: str | None, feasible: bool) -> set[str]:
    """The stored columns a filtered, ordered page of results reads to choose its points: validity,
    the order's metric, and with ``feasible`` the goal's metrics (and the unpriced-part count a
    price goal checks)."""
    keys = {"valid"} | ({order_by.lstrip("-")} if order_by else set())
    _, goal, _ = sweep_axes(sweep.results_sweep)
    if feasible and goal is not None:
        keys |= {*engine.goal_metrics(goal), "cost.unpriced_count"}
    return keys


def goal_feasible_points(sweep: Sweep, columns: dict) -> list[int]:
    """Grid points meeting the goal, judged exactly as ``goal_seek`` judged them."""
    _, goal, _ = sweep_axes(sweep.results_sweep)
    return columns["point"][engine.feasibility(columns, goal)[3]].tolist()


MAX_CHART_SAMPLE = 10_000


def sweep_sample(sweep: Sweep, count: int) -> dict:
    """About ``count`` points spread evenly over the whole grid for the sweep chart, plus, always,
    the goal's optimum and every point of its Pareto fronts; read chunk by chunk."""
    total = int(sweep.total_points)
    spread = np.unique(np.linspace(0, max(total - 1, 0), min(count, total)).astype(np.int64))
    goal = sweep.results_sweep.goal_result or {}
    always = sorted({int(p) for front in goal.get("pareto", []) for p in front["points"]}
                    | ({int(goal["optimum"])} if goal.get("optimum") is not None else set()))
    wanted = np.union1d(spread, np.asarray(always, dtype=np.int64))
    columns = sweep_columns(sweep, only=wanted)
    rows = sweep_rows(columns, np.arange(columns["point"].size))
    for row in rows:
        row["rejected_by"] = []
    _, goal, _ = sweep_axes(sweep.results_sweep)
    if goal is not None:  # the constraints each valid point fails, judged as goal_seek judged them
        valid, _, satisfied, _ = engine.feasibility(columns, goal)
        for name, ok in satisfied.items():
            for position in np.flatnonzero(valid & ~ok):
                rows[position]["rejected_by"].append(name)
    return {"total_points": total, "sampled": int(columns["point"].size), "always": always, "results": rows}
