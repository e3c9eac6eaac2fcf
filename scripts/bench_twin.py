"""Benchmark the live twin of the 9,920-GPU Fire-Flyer preset.

1. Simulation speed while persisting and streaming: the driver ticks every 0.2 s at a requested
   speed; the script reports the simulated seconds achieved per wall second and tick durations.
2. Delta latency to concurrent websocket viewers: a Daphne server (HTTP + websockets) on
   127.0.0.1, N viewers logged in by session cookie, the driver publishing through Redis; latency
   is the viewer's receive time minus the delta's publish time (same clock). The consumer batches
   deltas to at most 10 messages a second, which is part of what a viewer sees.

Needs REDIS_URL and a shared DATABASE_URL (PostgreSQL), e.g.
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
      .venv/bin/python scripts/bench_twin.py [--viewers 50] [--seconds 15]
"""
import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

from benchsetup import ROOT, bench_user

PORT = 8799


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] if ordered else float("nan")


def run_driver(twin, seconds: float):
    """Drive the twin for ``seconds`` of wall time; returns (achieved sim/wall, tick durations)."""
    from twin.models import Twin
    from twin.services.driver import Driver

    Twin.objects.filter(pk=twin.pk).update(status="running")
    driver = Driver(tick_s=0.2)
    driver.tick()  # the first tick loads the twin into memory
    durations = []
    start_sim = Twin.objects.get(pk=twin.pk).sim_time_s
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        began = time.monotonic()
        driver.tick(began)
        durations.append(time.monotonic() - began)
        time.sleep(max(0.0, driver.tick_s - (time.monotonic() - began)))
    wall = time.monotonic() - start
    Twin.objects.filter(pk=twin.pk).update(status="paused")
    achieved = (Twin.objects.get(pk=twin.pk).sim_time_s - start_sim) / wall
    return achieved, durations


async def viewers(count: int, twin_id: int, cookie: str, seconds: float, latencies: list, ready: threading.Event):
    import websockets

    async def view():
        async with websockets.connect(f"ws://127.0.0.1:{PORT}/ws/twins/{twin_id}/", origin=f"http://127.0.0.1:{PORT}",
                                      additional_headers={"Cookie": cookie}, max_size=2**24) as socket:
            await socket.recv()  # snapshot
            ready_count.append(1)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                try:
                    message = json.loads(await asyncio.wait_for(socket.recv(), timeout=2))
                except TimeoutError:
                    continue
                if "published_at" in message:
                    latencies.append(time.time() - message["published_at"])

    ready_count = []

    async def signal_ready():
        while len(ready_count) < count:
            await asyncio.sleep(0.05)
        ready.set()

    await asyncio.gather(*(view() for _ in range(count)), signal_ready())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        print("error: set REDIS_URL and a shared DATABASE_URL", file=sys.stderr)
        return 2
    user = bench_user()
    from django.test import Client

    from planner.models import ClusterPlan
    from twin.services.creation import twin_create

    plan = ClusterPlan.objects.get(slug="ff2-pcie-2zone")

    for speed in (1_000.0, 100_000.0):
        twin = twin_create(owner=user, plan=plan, name="bench", seed=1, speed=speed)
        achieved, durations = run_driver(twin, 5.0)
        print(f"speed {speed:,.0f}x requested: achieved {achieved:,.0f} simulated s per wall s with "
              f"{plan.node_count * 8:,} GPUs; tick p50 {1000 * statistics.median(durations):.1f} ms, "
              f"p99 {1000 * percentile(durations, 0.99):.1f} ms "
              f"({type(twin).objects.get(pk=twin.pk).last_seq} events in the log)")
        twin.delete()

    twin = twin_create(owner=user, plan=plan, name="bench viewers", seed=2, speed=100_000.0)
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    env = {**os.environ, "ALLOWED_HOSTS": "localhost,127.0.0.1"}
    server = subprocess.Popen([sys.executable, "-m", "config.server", "-b", "127.0.0.1", "-p", str(PORT),
                               "config.asgi:application"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(3)
        latencies, ready = [], threading.Event()
        thread = threading.Thread(target=lambda: asyncio.run(
            viewers(args.viewers, twin.pk, cookie, args.seconds + 4, latencies, ready)), daemon=True)
        thread.start()
        if not ready.wait(30):
            print("error: viewers did not connect", file=sys.stderr)
            return 1
        achieved, durations = run_driver(twin, args.seconds)
        thread.join(timeout=args.seconds + 10)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
        twin.delete()
    print(f"{args.viewers} websocket viewers while streaming at {achieved:,.0f} simulated s per wall s: "
          f"{len(latencies):,} deltas received, latency p50 {1000 * statistics.median(latencies):.0f} ms, "
          f"p99 {1000 * percentile(latencies, 0.99):.0f} ms, max {1000 * max(latencies):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
