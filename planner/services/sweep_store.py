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


def unpack_columns(data: bytes) -> dict:
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["invalid_reason"] = arrays.pop("reasons")[arrays.pop("reason_code")]
    return arrays


def pending_chunks(sweep: Sweep) -> list[int]:
    done = set(sweep.chunks.values_list("index", flat=True))
    return [i for i in range(sweep.chunk_count) if i not in done]


def chunk_columns(sweep: Sweep, points: range | None = None, *, only: np.ndarray | None = None):
    """The stored chunks one at a time, in grid order: each chunk's outputs, validity, grid point
    and axis values; with ``points``, only the chunks that hold those grid points; with ``only``
    (sorted grid points), only those points of each chunk. Memory stays that of one chunk."""
    source = sweep.results_sweep
    chunks = source.chunks.order_by("index")
    if points is not None:
        chunks = chunks.filter(stop__gt=points.start, start__lt=points.stop)
    axes, _, _ = sweep_axes(source)
    shape = engine.grid_shape(axes)
    for start, data in chunks.values_list("start", "data").iterator(chunk_size=4):
        part = unpack_columns(data)
        part["point"] = np.arange(start, start + len(part["valid"]))
        if only is not None:
            keep = np.isin(part["point"], only, assume_unique=True)
            part = {key: values[keep] for key, values in part.items()}
        for axis, index in zip(axes, np.unravel_index(part["point"], shape)):
            part[f"axis:{axis.path}"] = axis.values[index]
        yield part


def sweep_columns(sweep: Sweep, points: range | None = None, *,
                  only: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every stored point's outputs, axis values and validity, in grid order (``chunk_columns``
    joined); with ``points`` or ``only``, the chunks or points ``chunk_columns`` keeps."""
    parts = list(chunk_columns(sweep, points, only=only))
    if not parts:
        _, _, outputs = sweep_axes(sweep.results_sweep)
        return {"point": np.zeros(0, dtype=np.int64), **{p: np.zeros(0) for p in outputs},
                "valid": np.zeros(0), "invalid_reason": np.zeros(0, dtype=object)}
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
