"""The attacker's and careless neighbour's files (issue 69), each answered with a refusal naming what
is wrong, or read as far as it is a trace, never a server error, and never at a cost beyond the
file's size: the deep nesting and huge strings refused as the bytes pass, malformed gzip, odd values."""
import gzip
import importlib.util
import json
import time
import tracemalloc

import pytest

from simcore.errors import ScenarioError
from simcore.tools import megatron, trace

# Reading a trace needs the engine's trace extra (ijson; a dev requirement: CI runs these); a Megatron log does not.
needs_ijson = pytest.mark.skipif(importlib.util.find_spec("ijson") is None, reason="the engine's trace extra")

KERNEL = {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": 0.0, "dur": 10.0}


def document(**changes) -> dict:
    return {"deviceProperties": [{"id": 0, "name": "NVIDIA H100", "numSms": 132}],
            "distributedInfo": {"rank": 0, "backend": "nccl"}, "traceEvents": [KERNEL], **changes}


def write(tmp_path, data: bytes):
    path = tmp_path / "trace.json.gz"
    path.write_bytes(data)
    return path


@needs_ijson
def test_a_tiny_gzip_nested_60000_deep_is_refused_before_it_is_held(tmp_path):
    data = gzip.compress(b'{"deviceProperties": ' + b"[" * 60_000 + b"]" * 60_000 + b"}", 9)
    assert len(data) < 400  # the probe: 208 bytes took 8.7 GB
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ScenarioError, match="nested over 64 levels"):
        trace.read_trace(write(tmp_path, data))
    elapsed, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 32 * 2**20 and elapsed < 5


@needs_ijson
def test_a_huge_string_is_refused_before_it_is_stored(tmp_path):
    data = gzip.compress(json.dumps(document(distributedInfo={"rank": 0, "pg_config": "x" * 200_000})).encode())
    with pytest.raises(ScenarioError, match="string of over 65,536 bytes"):
        trace.read_trace(write(tmp_path, data))


@needs_ijson
@pytest.mark.parametrize("data", [
    gzip.compress(json.dumps(document()).encode())[:-12],  # truncated
    gzip.compress(json.dumps(document()).encode())[:-8] + b"\0\0\0\0" + gzip.compress(b"{}")[-4:],  # bad CRC
    b"\x1f\x8b",  # the magic alone
    b"\x1f\x8b\x08\x00" + b"\xff" * 40,  # a header and garbage
])
def test_a_broken_gzip_is_refused_naming_the_file(tmp_path, data):
    with pytest.raises(ScenarioError) as refused:
        trace.read_trace(write(tmp_path, data))
    assert refused.value.field == "file"


@needs_ijson
def test_odd_values_are_read_as_far_as_they_are_a_trace(tmp_path):
    events = [KERNEL, {**KERNEL, "cat": ["kernel"]}, {**KERNEL, "ts": 5.0, "name": "nccl\x00kernel"},
              {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#" + "9" * 30, "ts": 0, "dur": 100}]
    data = json.dumps(document(deviceProperties=[{"id": 0, "name": "H100\x00\x01evil"}],
                               distributedInfo={"rank": 0, "backend": "nc\x00cl", "seed": 1e300},
                               traceEvents=events)).encode()
    read = trace.read_trace(write(tmp_path, gzip.compress(data)))
    assert read.start_us.size == 2  # the event whose category is a list is not a GPU event
    assert read.devices == [{"id": 0, "name": "H100evil"}]  # control characters (NUL) dropped
    assert read.distributed == {"rank": 0, "backend": "nccl", "seed": 1e300}
    assert read.steps == []  # a 30-digit step is no step
    with pytest.raises(ScenarioError, match="integer overflow"):  # a number no int64 holds: no JSON the parser reads
        trace.read_trace(write(tmp_path, json.dumps(document(distributedInfo={"rank": 10**30})).encode()))
    with pytest.raises(ScenarioError, match="GPU event 2 has no whole-number pid"):
        trace.read_trace(write(tmp_path, json.dumps(document(traceEvents=[KERNEL, {**KERNEL, "ts": True}])).encode()))


@pytest.mark.parametrize("log", [
    "iteration 1/1 |" * 8000,  # 120 KB on one line: held the interpreter 16 s
    "iteration 1/10 | elapsed time per iteration (ms): ...",
    "iteration 1/10 | elapsed time per iteration (ms): 1.2.3",
    "iteration " + "9" * 5000 + "/10 | elapsed time per iteration (ms): 5",
])
def test_a_megatron_log_with_no_readable_interval_is_refused_at_once(log):
    start = time.perf_counter()
    with pytest.raises(ScenarioError) as refused:
        megatron.parse_megatron_log(log)
    assert refused.value.field == "megatron_log" and time.perf_counter() - start < 1


def test_a_megatron_timer_or_interval_out_of_range_is_refused_naming_its_line():
    line = "iteration 2/10 | elapsed time per iteration (ms): 100.0"
    with pytest.raises(ScenarioError, match="line 2: 0 ms"):
        megatron.parse_megatron_log(line + "\niteration 3/10 | elapsed time per iteration (ms): 0")
    timers = "\n(min, max) time across ranks (ms):\n    optimizer .....: (1.5, " + "9" * 12 + ")"
    with pytest.raises(ScenarioError, match="line 3: 999999999999 ms"):
        megatron.parse_megatron_log(line + timers)
    # A 400-digit timer is no timer (at most 12 digits): the interval alone is read, no Infinity.
    huge = "\n(min, max) time across ranks (ms):\n    optimizer ...: (1, " + "9" * 400 + ")"
    read = megatron.parse_megatron_log(line + huge)
    assert read.elapsed_ms == [100.0] and read.timers_ms == {}
