"""Benchmark: export a 5,000,000-point sweep as CSV, Parquet and NPZ, measuring the server's memory.

A child process creates the sweep and runs its chunks in process (the engine's real outputs); a
fresh process, which has evaluated nothing, then exports it each way through the service the API
streams from, sampling its resident memory every 5 ms, and reads each file back (pyarrow, NumPy)
to check that every point is there once; then three NPZ exports run at once in one process, as
three users' requests would. Uses DATABASE_URL when set, else the embedded SQLite file:
  .venv/bin/python scripts/bench_export.py [--points 5000000]
"""
import argparse
import subprocess
import sys
import threading
import time

from benchsetup import ROOT, PeakMemory, bench_user


def create(points: int) -> int:
    owner = bench_user()
    from planner.models import ClusterPlan, Workload
    from planner.services import sweeps

    node_values = 1200
    spec = {"axes": {"cluster.node_count": {"start": 40, "stop": 40 + node_values - 1, "step": 1},
                     "workload.gpus": {"start": 8, "stop": 8 * max(1, points // node_values), "step": 8},
                     "workload.moe_imbalance": [1.0 + time.time() % 1 * 1e-6]}}
    sweep = sweeps.sweep_create(owner=owner, plan=ClusterPlan.objects.get(slug="ff2-pcie-2zone"),
                                workload=Workload.objects.get(slug="llama-13b-512"), spec=spec, name="bench export")
    for index in range(sweep.chunk_count):
        sweeps.sweep_run_chunk(sweep_id=sweep.pk, index=index)
    return sweep.pk


def export(sweep_id: int, kind: str) -> str:
    """Export in this fresh process, which has evaluated and read nothing, then read the file back."""
    bench_user()
    import numpy as np
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    from planner.models import Sweep
    from planner.services.sweep_results import sweep_export

    sweep = Sweep.objects.get(pk=sweep_id)
    copies = 3 if kind == "npz-x3" else 1
    sizes = [0] * copies

    def one(slot: int):
        exported = sweep_export(sweep, kind.removesuffix("-x3"))
        while block := exported.read(1 << 16):  # as FileResponse streams it
            sizes[slot] += len(block)
        return exported

    start = time.perf_counter()
    with PeakMemory() as memory:
        files = [None] * copies
        threads = [threading.Thread(target=lambda i=i: files.__setitem__(i, one(i))) for i in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    seconds = time.perf_counter() - start
    exported = files[0]
    exported.seek(0)
    if kind.startswith("npz"):
        points = np.load(exported, allow_pickle=False)["point"]
    else:
        table = pq.read_table(exported) if kind == "parquet" else pa_csv.read_csv(exported)
        points = table.column("point").to_numpy()
    once = bool(np.array_equal(np.sort(points), np.arange(sweep.total_points)))
    return (f"{kind}: {sweep.total_points:,} points, {sizes[0] / 1e6:,.0f} MB{' each' if copies > 1 else ''} in "
            f"{seconds:.1f} s; memory growth {(memory.peak - memory.base) / 1e6:,.0f} MB (from "
            f"{memory.base / 1e6:,.0f} to {memory.peak / 1e6:,.0f} MB); read back: {points.size:,} rows, every "
            f"point once: {once}")


def child(*args) -> str:
    return subprocess.run([sys.executable, __file__, *map(str, args)], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=5_000_000)
    parser.add_argument("--create", action="store_true", help="(internal) create the sweep and print its id")
    parser.add_argument("--export", nargs=2, metavar=("SWEEP", "KIND"), help="(internal) export and measure")
    args = parser.parse_args()
    if args.create:
        print(create(args.points))
        return 0
    if args.export:
        print(export(int(args.export[0]), args.export[1]))
        return 0
    began = time.perf_counter()
    sweep_id = int(child("--create", "--points", args.points))
    print(f"sweep {sweep_id} created and run in {time.perf_counter() - began:.0f} s")
    for kind in ("csv", "parquet", "npz", "npz-x3"):
        print(child("--export", sweep_id, kind))
    bench_user()
    from planner.models import Sweep

    Sweep.objects.filter(pk=sweep_id).delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
