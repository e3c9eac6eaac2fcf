"""Every reader of a file a user sends, fuzzed with Hypothesis: a profiler trace (JSON, gzip or not),
a Megatron-LM log, an nccl-tests output, a GEMM CSV and a kernel log. Each input answers a result or
a clear refusal (ScenarioError naming the field, or the reader's own refusal), never another
exception, within a time and a memory bound that grow with the input's size: a few milliseconds and a
few kilobytes a byte beyond a fixed start (what NumPy's and the parser's first use costs)."""
import gzip
import json
import time
import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.errors import ScenarioError
from simcore.tools import measurements, megatron, trace
from twin import kernel_log

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIXED_S, PER_BYTE_S = 2.0, 2e-3  # generous: tracemalloc slows Python two to three times
FIXED_BYTES, PER_BYTE = 24 * 2**20, 4096


def bounded(read, data, size: int):
    """Run ``read(data)``: its result or a refusal; the time and peak memory held to the bounds."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        return read(data)
    except (ScenarioError, kernel_log.LogSizeError, kernel_log.LogTimeError):
        return None
    finally:
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert elapsed < FIXED_S + PER_BYTE_S * size, f"{elapsed:.2f} s for {size:,} bytes"
        assert peak < FIXED_BYTES + PER_BYTE * size, f"{peak:,} bytes held for {size:,} bytes"


# JSON shaped like a trace: the keys Kineto writes, values of every JSON type, nested at random.
KEYS = st.sampled_from(["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "correlation", "id", "rank",
                        "deviceProperties", "distributedInfo", "traceEvents", "numSms", "\x00"])
SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
           | st.sampled_from(["X", "kernel", "cuda_runtime", "user_annotation", "ProfilerStep#" + "9" * 30,
                              "ProfilerStep#3", "nccl_allreduce", "gemm"]) | st.text(max_size=40))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
                      max_leaves=30)
EVENTS = st.lists(st.fixed_dictionaries({"ph": st.sampled_from(["X", "i"]), "cat": VALUES, "name": VALUES,
                                         "pid": VALUES, "tid": VALUES, "ts": VALUES, "dur": VALUES, "args": VALUES}),
                  max_size=8)
TRACES = st.fixed_dictionaries({"deviceProperties": VALUES, "distributedInfo": VALUES, "traceEvents": EVENTS})


def read_trace_bytes(tmp_path, data: bytes):
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    read = trace.read_trace(path)
    trace.timeline(read)
    return read


@FUZZ
@given(document=TRACES, compress=st.booleans(), cut=st.integers(0, 64))
def test_a_trace_shaped_document_reads_or_is_refused_within_bounds(tmp_path_factory, document, compress, cut):
    data = json.dumps(document).encode()
    data = gzip.compress(data) if compress else data
    data = data[:len(data) - cut] if cut else data  # whole, or cut short (a truncated gzip, a broken JSON)
    read = bounded(lambda d: read_trace_bytes(tmp_path_factory.mktemp("t"), d), data, len(data))
    if read is not None:
        assert all("\x00" not in str(value) for device in read.devices for value in device.values())
        assert read.dur_us.min() >= 0


@FUZZ
@given(data=st.binary(max_size=2048))
def test_any_bytes_as_a_trace_read_or_are_refused_within_bounds(tmp_path_factory, data):
    bounded(lambda d: read_trace_bytes(tmp_path_factory.mktemp("t"), d), data, len(data))


@FUZZ
@given(depth=st.integers(1, 20_000), opener=st.sampled_from(["[", '{"a":']))
def test_nesting_is_refused_as_it_is_read_not_after_it_is_held(tmp_path_factory, depth, opener):
    document = '{"deviceProperties": ' + opener * depth
    data = gzip.compress(document.encode())
    read = bounded(lambda d: read_trace_bytes(tmp_path_factory.mktemp("t"), d), data, len(document))
    assert read is None


LOG_LINES = st.lists(st.one_of(
    st.text(max_size=200),
    st.builds(lambda i, m, e: f" [2026-12-07 10:00:00] iteration {i}/{m} | consumed samples: 10 | elapsed time per "
                              f"iteration (ms): {e} | learning rate: 1.0E-04 |",
              st.text("0123456789", min_size=1, max_size=30), st.integers(0, 10**6),
              st.text("0123456789.-e", max_size=20)),
    st.just("(min, max) time across ranks (ms):"),
    st.builds(lambda n, a, b: f"    {n} ............: ({a}, {b})",
              st.sampled_from(["forward-backward", "optimizer", "x"]), st.text("0123456789.", max_size=15),
              st.text("0123456789.", max_size=15)),
    st.just("iteration 1/1 |" * 300)), max_size=30)


@FUZZ
@given(lines=LOG_LINES)
def test_a_megatron_log_reads_or_is_refused_within_bounds(lines):
    text = "\n".join(lines)
    log = bounded(megatron.parse_megatron_log, text, len(text.encode()))
    if log is not None:
        assert all(0 < ms <= megatron.MAX_STEP_MS for ms in log.elapsed_ms)
        assert all(0 < ms <= megatron.MAX_STEP_MS for values in log.timers_ms.values() for ms in values)


NCCL_LINES = st.lists(st.one_of(
    st.text(max_size=120), st.just("# nccl-tests version 2.13.8 nccl-headers=22005 nccl-library=22005"),
    st.just("#  Rank  0 Group  0 Pid  12 on  node-1 device  0 [0x18] NVIDIA H100 80GB HBM3"),
    st.just("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
            "   busbw #wrong"),
    st.builds(lambda v: "  " + "  ".join(v), st.lists(st.sampled_from(["8", "1024", "float", "sum", "-1", "12.5",
                                                                       "0.00", "1e400", "nan", "N/A", "0"]),
                                                      min_size=10, max_size=14)),
    st.just("# Avg bus bandwidth    : 123.45")), max_size=30)


@FUZZ
@given(lines=NCCL_LINES)
def test_an_nccl_tests_output_reads_or_is_refused_within_bounds(lines):
    text = "\n".join(lines)
    bounded(measurements.parse_nccl_tests, text, len(text.encode()))


@FUZZ
@given(rows=st.lists(st.lists(st.sampled_from(["8192", "0", "-1", "bf16", "fp8", "1e400", "nan", "", "x", "1.5"]),
                              min_size=1, max_size=6), max_size=30))
def test_a_gemm_csv_reads_or_is_refused_within_bounds(rows):
    text = "m,n,k,dtype,tflops\n" + "\n".join(",".join(row) for row in rows)
    bounded(measurements.parse_gemm_csv, text, len(text.encode()))


KERNEL_LINES = st.lists(st.one_of(
    st.text(max_size=160),
    st.builds(lambda t, bus, xid, rest: f"[{t}] NVRM: Xid (PCI:{bus}): {xid}, {rest}",
              st.text("0123456789. ", max_size=20), st.sampled_from(["0000:18:00", "0000:18:00.0", "zz:00:00"]),
              st.text("0123456789", min_size=1, max_size=25), st.text(max_size=60)),
    st.builds(lambda s: f"{s} host kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.",
              st.sampled_from(["Dec  7 10:00:00", "2026-12-07T10:00:00Z", "1765100000.5", "Feb 30 99:99:99"]))),
    max_size=30)


@FUZZ
@given(lines=KERNEL_LINES)
def test_a_kernel_log_reads_or_is_refused_within_bounds(lines):
    text = "\n".join(lines)
    bounded(kernel_log.xid_lines, text, len(text.encode()))


def shape_of(text: str) -> tuple[int, int]:
    """(deepest nesting, longest string with its quotes) of JSON text, one character at a time."""
    depth = deepest = longest = length = 0
    inside = escaped = False
    for char in text:
        if inside:
            length += 1
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                inside, longest = False, max(longest, length)
        elif char == '"':
            inside, length = True, 1
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest, max(longest, length if inside else 0)


@FUZZ
@given(document=VALUES, chunk=st.integers(1, 64))
def test_the_shape_check_agrees_with_a_character_by_character_reading(document, chunk):
    """JsonShape (vectorized over chunks of any size, escapes across their edges) refuses exactly what is
    deeper or holds a longer string than its limits, as a plain scan counts them."""
    data = json.dumps(document, ensure_ascii=True).encode()
    deepest, longest = shape_of(data.decode())

    def refused(max_depth, max_string) -> bool:
        shape = trace.JsonShape(max_depth, max_string)
        try:
            for start in range(0, len(data), chunk):
                shape.feed(data[start:start + chunk])
        except ScenarioError:
            return True
        return False

    assert not refused(deepest, longest)
    if deepest:
        assert refused(deepest - 1, 10**9)
    if longest:
        assert refused(10**9, longest - 1)
