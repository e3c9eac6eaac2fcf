"""Benchmark: reading a large profiler trace with bounded memory (simcore.tools.trace).

  .venv/bin/python scripts/bench_trace.py [MEGABYTES]

Writes a Kineto-shaped Chrome trace of about MEGABYTES (default 200) of JSON to a temporary folder: the
DeepSeek-V3 chunk pair's kernel mix (GEMMs, attention, FP8 casts, DeepEP dispatch and combine on a
second stream) repeated over 8 ranks, with a CPU op and a runtime call beside each kernel as the
profiler writes them (the call and its kernel sharing a correlation id), in profiler steps of 100
repeats. Then reads and splits it in a fresh process, plain and gzipped, and prints the
file's size, the GPU events, the wall time and the process's peak resident memory (its size before
reading: NumPy and the engine imported).
"""
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = (("void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>(Params)", 7, 300),
           ("void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>>>(Params)", 7, 900),
           ("void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128>(__nv_bfloat16 const*)", 7, 70),
           ("void dpsk::ep::internode::combine<false, 8, __nv_bfloat16>(int4*, float*)", 27, 1500))
MEASURE = """
import resource, sys, time
from simcore.tools.trace import read_trace, timeline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
trace = read_trace(sys.argv[1])
split = timeline(trace, by_step=bool(trace.steps))
print(trace.start_us.size, time.perf_counter() - start, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_trace(path: Path, megabytes: float) -> None:
    """Events until the file holds ``megabytes`` of JSON, written as they go (never held whole)."""
    with open(path, "w") as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H800", "numSms": 132}], '
                  '"traceEvents": [')
        clock, first, correlation, repeat = 0.0, True, 0, 0
        while out.tell() < megabytes * 1e6:
            events = []
            if repeat % 100 == 0:
                events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{repeat // 100}",
                               "pid": 100, "tid": 1, "ts": clock, "dur": 100 * 1600 - 1})
            for rank in range(8):
                for name, stream, dur in KERNELS:
                    correlation += 1
                    events += ({"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_mm", "pid": 100 + rank,
                                "tid": 1, "ts": clock, "dur": 12, "args": {"External id": 7}},
                               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + rank,
                                "tid": 1, "ts": clock + 2, "dur": 5, "args": {"correlation": correlation}},
                               {"ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": stream, "ts": clock + 20,
                                "dur": dur, "args": {"device": rank, "stream": stream, "grid": [132, 1, 1],
                                                     "correlation": correlation}})
            for event in events:
                out.write(("" if first else ",") + json.dumps(event))
                first = False
            clock += 1600
            repeat += 1
        out.write("]}")


def measure(path: Path) -> str:
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    events, seconds, before_kb, peak_kb = done.stdout.split()
    return (f"{path.name}: {path.stat().st_size / 1e6:,.0f} MB, {int(events):,} GPU events, read and split in "
            f"{float(seconds):.1f} s, peak memory {int(peak_kb) / 1024:,.0f} MiB "
            f"({int(before_kb) / 1024:,.0f} MiB before reading)")


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 200.0
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / "trace.json"
        started = time.perf_counter()
        write_trace(plain, megabytes)
        print(f"wrote {plain.stat().st_size / 1e6:,.0f} MB in {time.perf_counter() - started:.0f} s")
        packed = Path(folder) / "trace.json.gz"
        with open(plain, "rb") as source, gzip.open(packed, "wb", compresslevel=1) as target:
            while chunk := source.read(1 << 24):
                target.write(chunk)
        print(measure(plain))
        print(measure(packed))


if __name__ == "__main__":
    main()
