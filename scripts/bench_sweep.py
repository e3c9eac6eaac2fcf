"""Benchmark: a 1,000,000-point sweep on 1 and then 2 Celery workers, against direct evaluation.

Needs REDIS_URL and a DATABASE_URL the workers share (PostgreSQL), e.g.
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
      .venv/bin/python scripts/bench_sweep.py [--points 1000000] [--workers 1 2]
Prints the direct evaluation rate, each run's wall time from submission to done, the speed-up
and the task machinery's overhead per point (worker-seconds beyond direct evaluation).
"""
import argparse
import os
import signal
import subprocess
import sys
import time

from benchsetup import ROOT, bench_user


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        print("error: set REDIS_URL (and a shared DATABASE_URL) to run workers", file=sys.stderr)
        return 2

    owner = bench_user()
    import numpy as np

    from config.celery import app
    from planner.models import ClusterPlan, Sweep, Workload
    from planner.services import sweep_spec, sweeps
    from planner.tasks import sweep_enqueue

    plan = ClusterPlan.objects.get(slug="ff2-pcie-2zone")
    workload = Workload.objects.get(slug="llama-13b-512")
    node_values = 1200
    gpu_values = max(1, round(args.points / node_values))

    def spec(run: int) -> dict:
        # The run number shifts one axis by a hair so that no run reuses another's results.
        return {"axes": {"cluster.node_count": {"start": 40, "stop": 40 + node_values - 1, "step": 1},
                         "workload.gpus": {"start": 8, "stop": 8 * gpu_values, "step": 8},
                         "workload.moe_imbalance": [1.0 + 1e-6 * run]}}

    probe = sweeps.sweep_create(owner=owner, plan=plan, workload=workload, spec=spec(0), name="bench probe")
    axes, _, outputs = sweep_spec.sweep_axes(probe)
    points = probe.total_points
    start = time.perf_counter()
    for first in range(0, points, probe.chunk_size):
        sweep_spec.evaluate_chunk(probe.base_document, axes, outputs,
                              np.arange(first, min(first + probe.chunk_size, points)))
    direct_s = time.perf_counter() - start
    probe.delete()
    print(f"direct evaluation: {points:,} points in {direct_s:.2f} s = {points / direct_s:,.0f} points/s "
          f"(chunks of {probe.chunk_size:,})")

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base"}
    walls = {}
    for run, count in enumerate(args.workers, start=1):
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge("sim")
        procs = [subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "sim", "--pool",
                                   "solo", "-n", f"bench{run}-{i}@%h", "--loglevel", "WARNING", "--without-mingle",
                                   "--without-gossip"], cwd=ROOT, env=env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i in range(count)]
        time.sleep(4)  # let the workers connect before the clock starts
        begin = time.perf_counter()
        sweep = sweeps.sweep_create(owner=owner, plan=plan, workload=workload, spec=spec(run), name=f"bench {count}")
        sweep_enqueue(sweep)
        while Sweep.objects.get(pk=sweep.pk).status not in Sweep.FINAL:
            time.sleep(0.1)
        walls[count] = time.perf_counter() - begin
        sweep.refresh_from_db()
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        overhead_us = (walls[count] * count - direct_s) / points * 1e6
        print(f"{count} worker(s): {points:,} points, {sweep.chunk_count} chunks, status {sweep.status}, "
              f"wall {walls[count]:.2f} s = {points / walls[count]:,.0f} points/s; "
              f"task overhead {overhead_us:.2f} us per point")
        sweep.delete()
    if 1 in walls and 2 in walls:
        print(f"speed-up with 2 workers: {walls[1] / walls[2]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
