"""How a sweep's results are stored and read back: each chunk's output columns as a compressed
NPZ blob, read back for a range of points or the whole sweep."""
import io

import numpy as np

from planner.models import Sweep
from planner.services.sweep_spec import sweep_axes
from simcore.tools import sweep as engine


def pack_columns(columns: dict) -> tuple[bytes, int]:
    reasons, codes = np.unique(columns["invalid_reason"].astype(str), return_inverse=True)
    arrays = {k: v for k, v in columns.items() if k != "invalid_reason"}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, reason_code=codes.astype(np.int32), reasons=reasons.astype(str))
    return buffer.getvalue(), int((columns["valid"] == 0).sum())


def unpack_columns(data: bytes, keys: set[str] | None = None) -> dict:
    """A stored chunk's columns; with ``keys``, only those (and ``valid``), each decompressed only
    when asked for (an NPZ member is read on access), so a filter reads a few columns, not all."""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
        wanted = npz.files if keys is None else [k for k in npz.files if k in keys or k == "valid"
                                                 or (k in ("reasons", "reason_code") and "invalid_reason" in keys)]
        arrays = {k: npz[k] for k in wanted}
    if "reasons" in arrays:
        arrays["invalid_reason"] = arrays.pop("reasons")[arrays.pop("reason_code")]
    return arrays


def pending_chunks(sweep: Sweep) -> list[int]:
    done = set(sweep.chunks.values_list("index", flat=True))
    return [i for i in range(sweep.chunk_count) if i not in done]


def chunk_columns(sweep: Sweep, points: range | None = None, *, only: np.ndarray | None = None,
                  keys: set[str] | None = None):
    """The stored chunks one at a time, in grid order: each chunk's outputs, validity, grid point
    and axis values; with ``points``, only the chunks that hold those grid points; with ``only``
    (sorted grid points), only those points of each chunk; with ``keys``, only those outputs (see
    :func:`unpack_columns`). Memory stays that of one chunk."""
    source = sweep.results_sweep
    chunks = source.chunks.order_by("index")
    if points is not None:
        chunks = chunks.filter(stop__gt=points.start, start__lt=points.stop)
    if only is not None:  # only the chunks that hold one of those points
        bounds = np.array(list(chunks.values_list("start", "stop")), dtype=np.int64).reshape(-1, 2)
        holding = np.searchsorted(only, bounds[:, 1]) > np.searchsorted(only, bounds[:, 0])
        chunks = chunks.filter(start__in=bounds[holding, 0].tolist())
    axes, _, _ = sweep_axes(source)
    shape = engine.grid_shape(axes)
    for start, data in chunks.values_list("start", "data").iterator(chunk_size=1):
        part = unpack_columns(data, keys)
        part["point"] = np.arange(start, start + len(part["valid"]))
        if only is not None:
            keep = np.isin(part["point"], only, assume_unique=True)
            part = {key: values[keep] for key, values in part.items()}
        for axis, index in zip(axes, np.unravel_index(part["point"], shape)):
            part[f"axis:{axis.path}"] = axis.values[index]
        yield part


def sweep_columns(sweep: Sweep, points: range | None = None, *,
                  only: np.ndarray | None = None, keys: set[str] | None = None) -> dict[str, np.ndarray]:
    """Every stored point's outputs, axis values and validity, in grid order (``chunk_columns``
    joined); with ``points``, ``only`` or ``keys``, what ``chunk_columns`` keeps."""
    parts = list(chunk_columns(sweep, points, only=only, keys=keys))
    if not parts:
        _, _, outputs = sweep_axes(sweep.results_sweep)
        return {"point": np.zeros(0, dtype=np.int64), **{p: np.zeros(0) for p in outputs},
                "valid": np.zeros(0), "invalid_reason": np.zeros(0, dtype=object)}
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
