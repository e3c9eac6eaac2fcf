"""A training step as a profiler saw it: Chrome-trace JSON (the PyTorch profiler's Kineto output,
which Holistic Trace Analysis and Perfetto read), streamed and bounded, its GPU kernels classified
by name and laid on the timeline per rank and stream.

Where the step's time goes is computed on the timeline, not by adding kernel durations: a stretch
of time counts once, to the first of ``PARTS`` active in it on any of the rank's streams (GEMM, then
attention, FP8 casts and layout, other compute, then communication: communication counts only
where no compute runs, as the exposed part), so the parts add up to the traced span; communication
under compute is the overlap. Each kernel class's busy time (its union over streams) is given
apart.

Kineto writes one process per GPU (``pid``: the device), one thread per CUDA stream (``tid``), and
events of category ``kernel``, ``gpu_memcpy`` and ``gpu_memset`` for the GPU's work, with times in
microseconds. The reader streams the JSON (ijson's C parser), keeps six numbers per GPU event (48
bytes) and two per kernel launch (16), and refuses a file past ``MAX_EVENTS`` of them or
``MAX_BYTES`` read (a gzip too: decompressed): the memory it holds grows with the GPU events, not
with the file (CPU events, which make most of a trace, are parsed and dropped one by one).

Steps: where the profiler marked them (``ProfilerStep#N``, the CPU annotation ``torch.profiler``'s
``step()`` writes), each kernel belongs to the step its launch fell in, found by the launch's
``correlation`` id (the CUDA runtime event and the kernel both carry it, as Kineto links them), and
each (rank, step) is split on its own timeline: the spread of a part is then over ranks and steps.
"""
import contextlib
import gzip
import io
import math
import re
import zlib
from array import array
from dataclasses import dataclass

import numpy as np

from simcore.errors import ScenarioError

# The step's parts as the timeline assigns them, in the order a stretch of time is given to them.
PARTS = ("gemm", "attention", "quantize", "other_compute", "communication", "memory")
PART_LABELS = {"gemm": "GEMMs", "attention": "attention", "quantize": "FP8 casts and layout",
               "other_compute": "other compute", "communication": "exposed communication",
               "memory": "copies and sets", "idle": "idle (no GPU work)"}
COMPUTE = ("gemm", "attention", "quantize", "other_compute")
# Kernel names to classes, the first pattern that matches deciding: collectives and expert dispatch
# (NCCL, DeepEP's ep:: kernels, c10d), fused attention (FlashAttention, cuDNN's fmha), casts and
# transposes around FP8 GEMMs, then GEMMs (cuBLAS, CUTLASS, nvjet, DeepGEMM, Triton matmuls).
KERNEL_CLASSES = (
    ("communication", re.compile(r"nccl|::ep::|deep_?ep|all_?to_?all|all_?reduce|all_?gather|reduce_?scatter|"
                                 r"sendrecv|c10d|userbuffers", re.I)),
    ("attention", re.compile(r"flash|fmha|attn|attention|sdpa", re.I)),
    ("quantize", re.compile(r"cast|quantiz|transpose|amax|fp8_scale", re.I)),
    ("gemm", re.compile(r"gemm|cutlass|xmma|nvjet|cublas|wgmma|matmul|mma_", re.I)),
)
GPU_CATEGORIES = {"kernel": None, "gpu_memcpy": "memory", "gpu_memset": "memory"}
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
STEP_CATEGORIES = ("user_annotation", "cpu_op")  # where the profiler writes its step on the CPU
STEP_NAME = re.compile(r"^ProfilerStep#(\d{1,18})$")  # a step number an int64 holds
MAX_EVENTS = 20_000_000  # GPU events and kernel launches kept: at most 1.3 GB of arrays
MAX_BYTES = 8 * 2**30  # bytes of JSON read (decompressed)
MAX_NAMES = 200_000  # distinct kernel names remembered for classification
# Refused as the bytes are read, before the JSON parser holds them: Kineto nests four levels deep and
# writes kernel names of a few thousand characters at most.
MAX_DEPTH = 64
MAX_STRING_BYTES = 1 << 16
# What is kept of the trace's own description (devices, distributed information): the first of each.
MAX_DEVICES, MAX_FIELDS, MAX_FIELD_CHARS = 64, 32, 256
MAX_NAME_CHARS = 4096  # a kernel name as remembered


@dataclass(frozen=True)
class Trace:
    """The GPU events of a trace: each event's rank (the trace's rank when it names one, else its
    device), stream, start and duration (microseconds), and part (an index into ``PARTS``)."""

    rank: np.ndarray
    stream: np.ndarray
    start_us: np.ndarray
    dur_us: np.ndarray
    part: np.ndarray
    step: np.ndarray  # the profiler step each event was launched in; -1: none (or no steps marked)
    steps: list  # the step numbers marked, in order
    devices: list
    distributed: dict
    kernel_names: dict  # name -> (part, count, total microseconds), the heaviest first


class JsonShape:
    """The nesting depth and string lengths of JSON text read in chunks, checked as each chunk arrives
    (vectorized over the chunk's quotes and brackets, state carried between chunks): a string is what
    lies between two unescaped double quotes (one preceded by an even run of backslashes), depth counts
    the brackets and braces outside strings. Refuses, naming the limit, text nested deeper than
    ``max_depth`` or holding a string of over ``max_string`` bytes (its quotes counted), so that a
    parser reading after it never holds either; its cost is a few passes over each chunk's bytes."""

    QUOTE, BACKSLASH = ord('"'), ord("\\")
    DELTA = np.zeros(256, np.int8)
    DELTA[[ord("["), ord("{")]] = 1
    DELTA[[ord("]"), ord("}")]] = -1

    def __init__(self, max_depth: int = MAX_DEPTH, max_string: int = MAX_STRING_BYTES):
        self.max_depth, self.max_string = max_depth, max_string
        self.depth, self.in_string, self.backslashes, self.string_bytes = 0, False, 0, 0

    def _quotes(self, chunk, data) -> np.ndarray:
        """The positions of the chunk's unescaped quotes (a backslash run before a quote, carried in
        from the previous chunk where it reaches the start, escapes it when odd)."""
        quotes = np.flatnonzero(data == self.QUOTE)
        if not self.backslashes and b"\\" not in chunk:
            return quotes
        slash = data == self.BACKSLASH
        index = np.arange(data.size)
        last_other = np.maximum.accumulate(np.where(slash, -1, index))
        run = np.where(slash, index - last_other + np.where(last_other < 0, self.backslashes, 0), 0)
        before = np.concatenate(([self.backslashes], run[:-1]))[quotes]
        return quotes[before % 2 == 0]

    def feed(self, chunk) -> None:
        data = np.frombuffer(chunk, np.uint8)
        if not data.size:
            return
        quotes = self._quotes(chunk, data)
        opened = int(self.in_string)  # 1: the first quote closes the string carried in
        # String lengths: each closing quote's distance from its opening one (the carried one's length added).
        openings = quotes[opened::2]
        closings = quotes[opened + 1::2]
        lengths = closings - openings[:closings.size] + 1
        longest = int(lengths.max()) if lengths.size else 0
        if opened:
            carried = self.string_bytes + (int(quotes[0]) + 1 if quotes.size else data.size)
            longest = max(longest, carried)
        still_open = (quotes.size + opened) % 2 == 1
        if still_open:
            open_bytes = (data.size - int(openings[-1])) if openings.size > closings.size else \
                self.string_bytes + data.size
            longest = max(longest, open_bytes)
        if longest > self.max_string:
            raise ScenarioError("file", f"a JSON string of over {self.max_string:,} bytes: not a profiler trace")
        # Depth: the brackets outside strings (an even count of quotes before them, the carried state added).
        brackets = np.flatnonzero(self.DELTA[data])
        if brackets.size:
            outside = (np.searchsorted(quotes, brackets) + opened) % 2 == 0
            path = self.depth + np.cumsum(self.DELTA[data[brackets[outside]]], dtype=np.int64)
            if path.size:
                if int(path.max()) > self.max_depth:
                    raise ScenarioError("file", f"JSON nested over {self.max_depth} levels deep: not a profiler trace")
                self.depth = int(path[-1])
        self.in_string = still_open
        self.string_bytes = open_bytes if still_open else 0
        trailing = 0
        if data[-1] == self.BACKSLASH:  # the run of backslashes the chunk ends with, carried into the next
            others = np.flatnonzero(data != self.BACKSLASH)
            trailing = data.size - 1 - int(others[-1]) if others.size else data.size + self.backslashes
        self.backslashes = trailing


class _Bounded(io.RawIOBase):
    """A binary stream that refuses to be read past ``limit`` bytes, and checks the JSON's shape
    (:class:`JsonShape`) as its bytes pass; a gzip stream that breaks off or fails its check is
    refused naming why."""

    def __init__(self, raw, limit: int, file):
        self.raw, self.limit, self.read_bytes, self.shape, self.file = raw, limit, 0, JsonShape(), file

    def readable(self):
        return True

    def close(self):
        """Close the gzip stream and the file beneath it (a GzipFile leaves a file it was given open)."""
        if not self.closed:
            self.raw.close()
            self.file.close()
        super().close()

    def readinto(self, buffer):
        try:
            data = self.raw.read(len(buffer))
        except (OSError, EOFError, zlib.error) as error:
            raise ScenarioError("file", f"not a whole gzip file ({error})") from None
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise ScenarioError("file", f"the trace is over {self.limit:,} bytes of JSON")
        self.shape.feed(data)
        buffer[:len(data)] = data
        return len(data)


def _open(path, limit: int):
    """The trace's JSON bytes from a path, gunzipped when the file starts with gzip's magic bytes."""
    file = open(path, "rb")
    raw = gzip.GzipFile(fileobj=file) if file.read(2) == b"\x1f\x8b" else file
    file.seek(0)
    return io.BufferedReader(_Bounded(raw, limit, file), buffer_size=1 << 20)


def json_bytes_over(path, limit: int) -> bool:
    """Whether the trace holds more than ``limit`` bytes of JSON (gunzipped), found by reading at most
    ``limit`` + 1 of them: how long it takes to read, before any of it is parsed. A gzip stream that
    breaks off counts what came before (the read names the break)."""
    counted = 0
    with open(path, "rb") as file:
        gzipped = file.read(2) == b"\x1f\x8b"
        file.seek(0)
        with gzip.GzipFile(fileobj=file) if gzipped else contextlib.nullcontext(file) as stream:
            try:
                while counted <= limit and (chunk := stream.read(min(1 << 20, limit + 1 - counted))):
                    counted += len(chunk)
            except (OSError, EOFError, zlib.error):
                pass
    return counted > limit


def classify(name: str, category: str) -> int:
    """The index in ``PARTS`` of a GPU event: copies and sets are memory; a kernel by its name
    (:data:`KERNEL_CLASSES`), else other compute."""
    fixed = GPU_CATEGORIES.get(category)
    if fixed is not None:
        return PARTS.index(fixed)
    for part, pattern in KERNEL_CLASSES:
        if pattern.search(name):
            return PARTS.index(part)
    return PARTS.index("other_compute")


def read_trace(path, *, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> Trace:
    """Read a Chrome-trace JSON file (gzip or not), keeping its GPU events (:class:`Trace`). An
    event's rank is the trace's own (``distributedInfo.rank``, one rank a file, as torch.distributed
    runs write them), else its device (``pid``). A file that is no trace, or holds no GPU event, is
    refused naming why."""
    devices, distributed = _metadata(path, max_bytes)
    file_rank = distributed.get("rank")
    columns, names, launches, windows = _gpu_events(path, max_bytes, max_events,
                                                    file_rank if isinstance(file_rank, int) else None)
    if not columns["start"]:
        raise ScenarioError("file", "no GPU events (categories kernel, gpu_memcpy, gpu_memset) in traceEvents: "
                                    "profile with the CUDA activity on")
    heaviest = dict(sorted(((n, tuple(v)) for n, v in names.items()), key=lambda item: -item[1][2]))
    step, steps = _steps(np.frombuffer(columns["correlation"], np.int64), launches, windows)
    return Trace(rank=np.frombuffer(columns["rank"], np.int64), stream=np.frombuffer(columns["stream"], np.int64),
                 start_us=np.frombuffer(columns["start"]), dur_us=np.frombuffer(columns["dur"]),
                 part=np.frombuffer(columns["part"], np.int64), step=step, steps=steps, devices=devices,
                 distributed=distributed, kernel_names=heaviest)


def _steps(correlation: np.ndarray, launches: dict, windows: list) -> tuple[np.ndarray, list]:
    """Each GPU event's profiler step: the marked step window holding its launch (found by
    correlation id); -1 where no step is marked or the launch is not in the trace or in no window."""
    none = np.full(correlation.size, -1, np.int64)
    if not windows:
        return none, []
    starts, ends, numbers = (np.array(column) for column in zip(*sorted(windows)))
    steps = sorted(set(numbers.tolist()))
    ids, times = np.frombuffer(launches["correlation"], np.int64), np.frombuffer(launches["ts"])
    if not ids.size:
        return none, steps
    order = np.argsort(ids, kind="stable")
    ids, times = ids[order], times[order]
    at = np.minimum(np.searchsorted(ids, correlation), ids.size - 1)
    launched = times[at]
    window = np.maximum(np.searchsorted(starts, launched, side="right") - 1, 0)
    inside = (ids[at] == correlation) & (launched >= starts[window]) & (launched < ends[window])
    return np.where(inside, numbers[window], none), steps


def _gpu_events(path, max_bytes: int, max_events: int, file_rank: int | None) -> tuple[dict, dict, dict, list]:
    """The GPU events' columns (compact arrays, 48 bytes an event), each kernel name's part, count and
    total time, the kernel launches (correlation id and time, 16 bytes each) and the marked step
    windows (start, end, number), from a pass over ``traceEvents`` that drops every other event."""
    import ijson

    columns = {"rank": array("q"), "stream": array("q"), "start": array("d"), "dur": array("d"), "part": array("q"),
               "correlation": array("q")}
    launches = {"correlation": array("q"), "ts": array("d")}
    names: dict[str, list] = {}
    windows: list[tuple[float, float, int]] = []
    stream = _open(path, max_bytes)
    try:
        for event in ijson.items(stream, "traceEvents.item", use_float=True):
            if not isinstance(event, dict) or event.get("ph") != "X" or not isinstance(event.get("cat"), str):
                continue
            category = event["cat"]
            if category in GPU_CATEGORIES:
                _keep_gpu_event(event, category, columns, names, file_rank)
            elif category in LAUNCH_CATEGORIES:
                _keep_launch(event, launches)
            else:
                if category in STEP_CATEGORIES and str(event.get("name", "")).startswith("ProfilerStep#"):
                    _keep_step(event, windows)
                continue  # nothing kept that counts toward the bound
            if len(columns["start"]) + len(launches["ts"]) > max_events:
                raise ScenarioError("file", f"the trace has over {max_events:,} GPU events and kernel launches: "
                                            "cut the profiled range")
    except ijson.JSONError as error:
        raise ScenarioError("file", f"not JSON a trace reader can read: {error}") from None
    finally:
        stream.close()
    return columns, names, launches, windows


def _whole(value) -> bool:
    """A JSON whole number an int64 holds (not a boolean)."""
    return type(value) is int and -2**63 <= value < 2**63


def _finite(value) -> bool:
    """A finite JSON number (not a boolean)."""
    return type(value) in (int, float) and math.isfinite(value)


def _keep_gpu_event(event: dict, category: str, columns: dict, names: dict, file_rank: int | None) -> None:
    name = str(event.get("name", ""))[:MAX_NAME_CHARS]
    known = names.get(name) or [classify(name, category), 0, 0.0]
    if name not in names and len(names) < MAX_NAMES:
        names[name] = known
    args = event.get("args")
    correlation = args.get("correlation", -1) if isinstance(args, dict) else -1
    rank, tid, ts, dur = (file_rank if file_rank is not None else event.get("pid"), event.get("tid"), event.get("ts"),
                          event.get("dur", 0.0))
    if not (_whole(rank) and _whole(tid) and _finite(ts) and _finite(dur) and dur >= 0):
        raise ScenarioError("file", f"GPU event {len(columns['part']) + 1:,} has no whole-number pid and tid "
                                    "or no numeric ts and non-negative dur")
    values = (rank, tid, ts, dur, known[0], correlation if _whole(correlation) else -1)
    for column, value in zip(columns.values(), values):
        column.append(value)
    known[1] += 1
    known[2] += float(dur)


def _keep_launch(event: dict, launches: dict) -> None:
    """A CUDA runtime or driver call that launched GPU work: its correlation id and time."""
    args = event.get("args")
    correlation = args.get("correlation") if isinstance(args, dict) else None
    if _whole(correlation) and _finite(event.get("ts")):
        launches["correlation"].append(correlation)
        launches["ts"].append(event["ts"])


def _keep_step(event: dict, windows: list) -> None:
    """A ``ProfilerStep#N`` annotation on the CPU: the window its kernels were launched in."""
    found = STEP_NAME.match(str(event.get("name", "")))
    if found and _finite(event.get("ts")) and _finite(event.get("dur")):
        windows.append((float(event["ts"]), float(event["ts"] + event["dur"]), int(found.group(1))))


def _metadata(path, max_bytes: int) -> tuple[list, dict]:
    """The trace's device properties (name, SM count) and distributed information (rank, world size,
    backend), which Kineto writes before its events, from a pass that stops where the events start."""
    import ijson

    devices, distributed = [], {}
    stream = _open(path, max_bytes)
    try:
        for prefix, event, value in ijson.parse(stream, use_float=True):
            if prefix == "traceEvents":
                break
            if prefix.startswith("deviceProperties.item.") and event in ("string", "number"):
                if prefix.endswith(".id") and len(devices) < MAX_DEVICES:
                    devices.append({})
                if devices:
                    _keep_field(devices[-1], prefix.rsplit(".", 1)[1], value)
            elif prefix.startswith("distributedInfo.") and event in ("string", "number"):
                _keep_field(distributed, prefix.split(".", 1)[1], value)
    except ijson.JSONError as error:
        raise ScenarioError("file", f"not JSON a trace reader can read: {error}") from None
    finally:
        stream.close()
    return devices, distributed


CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _keep_field(fields: dict, key: str, value) -> None:
    """One field of the trace's description as kept (and stored with a measurement): at most
    ``MAX_FIELDS`` a mapping, keys and text cut to ``MAX_FIELD_CHARS`` without control characters
    (PostgreSQL's JSON refuses NUL), numbers only finite (a whole number an int64 holds)."""
    key = CONTROL.sub("", key)[:MAX_FIELD_CHARS]
    if len(fields) >= MAX_FIELDS and key not in fields:
        return
    if isinstance(value, str):
        fields[key] = CONTROL.sub("", value)[:MAX_FIELD_CHARS]
    elif _whole(value) or (_finite(value) and type(value) is float):
        fields[key] = value


def timeline(trace: Trace, window_us: tuple[float, float] | None = None, by_step: bool = False,
             steps: tuple[int, int] | None = None) -> dict:
    """Per rank (``by_step``: per rank and profiler step, the events launched in a marked step),
    where its traced span goes (:data:`PARTS` and ``idle``, adding up to the span), each kernel
    class's busy time (its union over the rank's streams), the communication hidden under compute,
    and each stream's busy time; microseconds. ``window_us`` keeps the events inside a range (a
    step's, say), cut at its edges. ``steps`` (first, last) keeps the events launched in those
    marked steps. ``ranks`` names each group: a rank, or [rank, step].

    One sort of every event edge, by group then time; a running count per part (a cumulative sum of
    +1 at each start and -1 at each end) says which parts are active between two edges, and each
    stretch goes to the first active part."""
    start, end, rank, part, stream = trace.start_us, trace.start_us + trace.dur_us, trace.rank, trace.part, \
        trace.stream
    step = trace.step
    keep = step >= 0 if by_step else np.ones(start.size, bool)
    if steps is not None:
        if not trace.steps:
            raise ScenarioError("first_step", "the trace marks no profiler steps (ProfilerStep#N): give none")
        keep &= (step >= steps[0]) & (step <= steps[1])
        if not keep.any():
            raise ScenarioError("first_step", f"no GPU work was launched in steps {steps[0]} to {steps[1]}; the "
                                              f"trace marks {trace.steps[0]} to {trace.steps[-1]}")
    if window_us is not None:
        low, high = window_us
        keep &= (end > low) & (start < high)
        start, end = np.maximum(start, low), np.minimum(end, high)
    start, end, rank, part, stream, step = start[keep], end[keep], rank[keep], part[keep], stream[keep], step[keep]
    if not start.size and window_us is not None:
        raise ScenarioError("window_us", "no GPU event inside the window")
    if not start.size:
        raise ScenarioError("file", "no GPU event was launched inside a marked profiler step")
    width = int(step.max()) + 1 if by_step else 1
    ranks, rank_index = np.unique(rank * width + (step if by_step else 0), return_inverse=True)
    n = start.size
    times = np.concatenate([start, end])
    which = np.concatenate([rank_index, rank_index])
    order = np.lexsort((times, which))
    delta = np.zeros((2 * n, len(PARTS)), np.int32)
    edge = np.concatenate([part, part])[order]
    delta[np.arange(2 * n), edge] = np.where(order < n, 1, -1)
    times, which, active = times[order], which[order], np.cumsum(delta, axis=0, dtype=np.int32) > 0
    del delta
    length = np.where(which[1:] == which[:-1], np.diff(times), 0.0)  # a stretch between two ranks' edges: none
    active = active[:-1]
    first = np.where(active.any(axis=1), np.argmax(active, axis=1), len(PARTS))  # len(PARTS): idle
    span = _per_rank(np.ones_like(length), length, which[:-1], len(ranks))
    split = {name: _per_rank(first == i, length, which[:-1], len(ranks)) for i, name in enumerate(PARTS + ("idle",))}
    busy = {name: _per_rank(active[:, i], length, which[:-1], len(ranks)) for i, name in enumerate(PARTS)}
    computing = active[:, [PARTS.index(p) for p in COMPUTE]].any(axis=1)
    overlap = _per_rank(computing & active[:, PARTS.index("communication")], length, which[:-1], len(ranks))
    names = [[int(key // width), int(key % width)] for key in ranks] if by_step else ranks.tolist()
    return {"ranks": names, "span_us": span, "parts_us": split, "busy_us": busy,
            "overlapped_communication_us": overlap, "streams": _streams(stream, rank_index, end - start, part)}


def _per_rank(mask, length, which, ranks: int) -> list[float]:
    return np.bincount(which, weights=np.where(mask, length, 0.0), minlength=ranks).tolist()


def _streams(stream, rank_index, dur, part) -> list[dict]:
    """Each (rank, stream): its kernels' summed time by part (summed, not a union: a stream runs one
    kernel at a time)."""
    low = stream.min()
    width = stream.max() - low + 1
    keys, index = np.unique(rank_index * width + (stream - low), return_inverse=True)
    sums = np.zeros((keys.size, len(PARTS)))
    np.add.at(sums, (index, part), dur)
    return [{"rank_index": int(key // width), "stream": int(key % width + low),
             "busy_us": dict(zip(PARTS, row.tolist()))} for key, row in zip(keys, sums)]


def predicted_split(document: dict, moe_layers: int = 0, dense_layers: int = 0) -> dict:
    """What the engine predicts the traced compute classes take for ``moe_layers`` MoE and
    ``dense_layers`` dense layers of the document's workload, one micro-batch's forward and
    backward on one rank (microseconds; the document's first scenario point): GEMMs (the
    attention projections, the MLP or experts, weight gradients included), the attention core, FP8
    casts, and other compute (norms, activations, rotary embedding, the token shuffles and the
    router's kernels), from the layer model (:func:`simcore.formulas.transformer.layer_times_s`)
    at the part's sustained clock; its recomputed forward where the workload recomputes."""
    from simcore.document import parse
    from simcore.formulas import transformer
    from simcore.stages import cluster, job
    from simcore.stages.scenario import EngineParams

    p = parse(document)
    w, acc = p["workload"], p["cluster"]["node"]["accelerator"]
    if w["kind"] != "transformer":
        raise ScenarioError("workload.kind", "a trace is compared layer by layer: a transformer workload")
    hw = cluster.hardware(acc, p["cluster"]["calibration"], EngineParams())
    device, _ = job.device_at(acc, hw.family, hw.clock, w["precision"], w["attention_kernel"],
                              job.nvfp4_bf16_share(w))
    ops = transformer.layer_times_s(job.transformer_model(w), job.transformer_layout(w, hw.family), device)
    detail = ops["detail"]
    layers = {"moe": (moe_layers, ops["moe_f"], ops["moe_b"]), "dense": (dense_layers, ops["mlp_f"], ops["mlp_b"])}
    split = dict.fromkeys(COMPUTE, 0.0)
    for kind, (count, mlp_f, mlp_b) in layers.items():
        if not count:
            continue
        total = (ops["attention_gemm_f"] + ops["attention_f"] + ops["memory_f"] + mlp_f + ops["attention_gemm_b"]
                 + ops["attention_b"] + ops["memory_b"] + mlp_b + ops["recompute_extra_f"])
        attention = ops["attention_f"] + ops["attention_b"]
        gemm = detail[f"flop_{kind}_f"] + detail[f"flop_{kind}_b"] - attention
        quantize = detail[f"quantize_{kind}_f"] + detail[f"quantize_{kind}_b"]
        for name, value in (("gemm", gemm), ("attention", attention), ("quantize", quantize),
                            ("other_compute", total - gemm - attention - quantize)):
            split[name] += count * float(np.ravel(value)[0]) * 1e6
    return split


# The step parts that are communication left exposed in each layer's work (the data-parallel reduction
# and the optimizer come once a step, outside any traced layer).
LAYER_COMMUNICATION = ("tp_traffic", "cp_traffic", "pp_traffic", "ep_all_to_all")


def predicted_exposed_communication(document: dict, moe_layers: int = 0, dense_layers: int = 0) -> float | None:
    """The communication the engine leaves exposed in the traced layers (microseconds): its step's
    exposed tensor-, context-, pipeline- and expert-parallel traffic (:data:`LAYER_COMMUNICATION`,
    after the overlap the workload's schedule allows, DualPipe's included) spread evenly over the
    step's micro-batches and each stage's layers, for the traced layers' forward and backward of one
    micro-batch. An even spread is an approximation: the engine models the step's exposed total,
    not each layer's. None where the plan cannot run the workload (too few GPUs, say): the layers'
    compute is still predicted, the step's communication is not."""
    from simcore.document import parse
    from simcore.stages.scenario import EngineParams, evaluate_parsed

    parsed = parse(document)
    training = evaluate_parsed(parsed, EngineParams())["training"]
    if not training["feasible"]:
        return None
    w = parsed["workload"]
    exposed_s = sum(float(np.ravel(training["step_parts_s"][part])[0]) for part in LAYER_COMMUNICATION)
    per_layer_s = exposed_s / float(np.ravel(training["micro_batches"])[0]) / (float(w["layers"]) / float(w["pp"]))
    return per_layer_s * (moe_layers + dense_layers) * 1e6


# The family constant a traced class calibrates, by the workload's GEMM precision: GEMMs their share
# of that precision's peak; the casts and other compute, HBM-bound, the HBM share.
GEMM_CONSTANT = {"fp8": "fp8_gemm_fraction", "nvfp4": "fp4_gemm_fraction", "mxfp4": "fp4_gemm_fraction"}
# The most a calibrated constant may reach: a share its peak (1); the attention scale ten times the family's
# measured rates (each scaled share is held at the peak, so a larger scale would change nothing).
SHARE_CAP = {"attention_scale": 10.0}
CALIBRATION_STEPS = 30
CALIBRATION_TOLERANCE = 1e-9  # the relative miss at which the fixed point counts as reached (about 8 steps)


def trace_calibration(document: dict, traced_us: dict, moe_layers: int = 0, dense_layers: int = 0) -> dict:
    """The constants that make the engine's prediction for the traced layers match the trace: the
    GEMM share at the workload's precision from the GEMMs' time, the attention scale (the fused
    attention kernels' rate over the family's measured rates) from the attention's where the trace
    has attention and the workload fuses it, and the HBM share
    from the casts' and other compute's together (both HBM-bound), each the family's (or the
    document's calibration) scaled until the predicted time equals the traced (a fixed point: a
    constant scales only the work it bounds). Returns each constant's value with the family's, and
    the calibrated prediction."""
    from simcore.document import parse

    p = parse(document)
    w = p["workload"]
    family = _family(p)
    gemm_name = GEMM_CONSTANT.get(w["precision"], "gemm_fraction")
    names = {gemm_name: ("gemm",), "hbm_fraction": ("quantize", "other_compute")}
    if traced_us.get("attention", 0) > 0 and bool(np.all(w["flash_attention"])):
        names["attention_scale"] = ("attention",)  # fused attention traced: its rate against the family's table
    values = {name: float(getattr(family, name)) for name in names}
    for _ in range(CALIBRATION_STEPS):
        predicted = predict_split_with(document, values, moe_layers, dense_layers)
        ratios = {}
        for name, parts in names.items():
            traced, now = sum(traced_us[part] for part in parts), sum(predicted[part] for part in parts)
            if traced <= 0 or now <= 0:
                raise ScenarioError("file", f"the trace has no {' or '.join(parts)} time to calibrate against")
            ratios[name] = now / traced
        if all(abs(r - 1) < CALIBRATION_TOLERANCE or (values[n] == SHARE_CAP.get(n, 1.0) and r > 1)
               for n, r in ratios.items()):
            break  # settled, or held at the peak (the GEMMs traced faster than the peak allows)
        values = {name: min(values[name] * ratios[name], SHARE_CAP.get(name, 1.0)) for name in names}
    else:
        predicted = predict_split_with(document, values, moe_layers, dense_layers)
    return {"constants": {name: {"value": values[name], "family": float(getattr(family, name)), "from": names[name]}
                          for name in names},
            "predicted_us": predicted}


def predict_split_with(document: dict, calibration: dict, moe_layers: int, dense_layers: int) -> dict:
    """:func:`predicted_split` with ``calibration`` in place of the document's own shares."""
    return predicted_split({**document, "cluster": {**document["cluster"], "calibration": {
        **document["cluster"].get("calibration", {}), **calibration}}}, moe_layers, dense_layers)


def _family(p: dict):
    from simcore import fitted
    from simcore.formulas.devices import FAMILIES, with_fitted
    from simcore.stages.cluster import calibrated_family

    family = with_fitted(FAMILIES[p["cluster"]["node"]["accelerator"]["family"]], fitted.values())
    return calibrated_family(family, p["cluster"]["calibration"])


def trace_rows(path, window_us: tuple[float, float] | None = None,
               steps: tuple[int, int] | None = None, max_bytes: int = MAX_BYTES) -> tuple[list[dict], dict]:
    """A trace as a measurement stores it: each part's time (``PARTS`` and idle), the mean over the
    trace's ranks with the lowest and highest rank (the spread); where the profiler marked steps, the
    mean over each rank's steps, the spread over ranks and steps (the layers traced are then a
    step's; ``steps``, first and last, keeps those alone); and what the file says of the run (its
    ranks, the steps kept, span, devices and distributed information); a trace of more than
    ``max_bytes`` of JSON is refused."""
    read = read_trace(path, max_bytes=max_bytes)
    split = timeline(read, window_us, by_step=bool(read.steps), steps=steps)
    rows = [{"part": name, "traced_us": float(np.mean(values)), "low_us": float(np.min(values)),
             "high_us": float(np.max(values))} for name, values in split["parts_us"].items()]
    facts = {"ranks": sorted({group[0] for group in split["ranks"]}) if read.steps else split["ranks"],
             "steps": sorted({group[1] for group in split["ranks"]}) if read.steps else [],
             "span_us": float(np.mean(split["span_us"])),
             "overlapped_communication_us": float(np.mean(split["overlapped_communication_us"])),
             "devices": sorted({str(device.get("name", "")) for device in read.devices}),
             "distributed": read.distributed}
    return rows, facts


def compare_trace(document: dict, rows: list[dict], moe_layers: int, dense_layers: int) -> dict:
    """A stored trace beside the engine: each part traced (with its spread over ranks), predicted
    (:func:`predicted_split` for the compute classes, :func:`predicted_exposed_communication` for the
    exposed communication) and calibrated (:func:`trace_calibration`), the error of the prediction,
    the traced span beside the predicted and calibrated sums (copies and idle are not predicted), and
    the calibrated shares as a measurement's fitted constants, each
    with its ``low`` and ``high`` (the shares calibrated at every part's slowest and fastest rank)."""
    if moe_layers < 0 or dense_layers < 0 or moe_layers + dense_layers == 0:
        raise ScenarioError("moe_layers", "give the layers the trace holds (MoE, dense or both), at least one")
    traced = {row["part"]: row["traced_us"] for row in rows}
    communication = predicted_exposed_communication(document, moe_layers, dense_layers)
    predicted = {**predicted_split(document, moe_layers, dense_layers), "communication": communication}
    found = {}  # one calibration for each distinct set of times (a trace of one rank and step has one)

    def calibrate(times: dict) -> dict:
        key = tuple(sorted(times.items()))
        if key not in found:
            found[key] = trace_calibration(document, times, moe_layers, dense_layers)
        return found[key]

    calibrated = calibrate(traced)
    calibrated = {**calibrated, "predicted_us": {**calibrated["predicted_us"], "communication": communication}}
    # The spread: the shares at the slowest and the fastest of each part over the trace's ranks and steps.
    slowest, fastest = (calibrate({row["part"]: row[end] for row in rows})["constants"]
                        for end in ("high_us", "low_us"))
    out = []
    for row in rows:
        name = row["part"]
        guess, fitted = predicted.get(name), calibrated["predicted_us"].get(name)
        error = (guess - row["traced_us"]) / row["traced_us"] * 100 if guess is not None and row["traced_us"] else None
        out.append({**row, "label": PART_LABELS[name], "predicted_us": guess, "calibrated_us": fitted,
                    "error_pct": error})
    errors = [abs(row["error_pct"]) for row in out if row["error_pct"] is not None]
    whole = communication is not None  # the span is predicted only with its communication
    span = {"traced_us": sum(row["traced_us"] for row in rows),
            "predicted_us": sum(predicted.values()) if whole else None,
            "calibrated_us": sum(calibrated["predicted_us"].values()) if whole else None}
    return {"kind": "trace", "family": _family_key(document), "moe_layers": moe_layers, "dense_layers": dense_layers,
            "rows": out, "span": span, "mean_abs_error_pct": float(np.mean(errors)) if errors else None,
            "fitted": {name: {"value": c["value"], "family_value": c["family"], "rows": len(c["from"]),
                              "low": slowest[name]["value"], "high": fastest[name]["value"]}
                       for name, c in calibrated["constants"].items()}}


def _family_key(document: dict) -> str:
    from simcore.document import parse

    return str(parse(document)["cluster"]["node"]["accelerator"]["family"])
