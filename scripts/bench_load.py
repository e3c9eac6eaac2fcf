"""Load benchmark: concurrent users against the production-style stack on 127.0.0.1.

Starts the stack of the browser and fault tests (tests/stack.py: Daphne serving the ASGI app with
DEBUG off, a Celery worker and the twin driver, on PostgreSQL and Redis, with the shared Redis
cache as in docker-compose.yml) on a database of its own, creates one user per client, and runs for a bounded time:

* ``--clients`` HTTP users (default 50), each with its own token, each looping: think for a time
  drawn uniformly from ``--think`` seconds (default 0.5-1.5, as a Locust ``between`` wait), then
  either read the catalogue (a list or a part; ``--catalogue-share`` of requests, default 0.7) or
  evaluate a preset plan, with or without a workload: half of the evaluations
  (``--new-document-share``) ask for a message size never asked before, so the server evaluates
  them afresh; the rest repeat a preset's document, which the server has memoized;
* ``--viewers`` websocket viewers (default 20), signed in by session, following one shared
  running twin of the 9,920-GPU Fire-Flyer preset.

The timed window opens once every client has made one untimed read (opening its kept-alive
connection) and every viewer has its first snapshot, as after a Locust ramp-up. It prints
throughput, p50/p99 latency and errors per kind of request, and the viewers' delta latency
(receive time minus the delta's publish time, same clock); ``--timeline`` also writes every
request's start, kind and latency to a CSV, to see when slow requests happen. Any non-2xx answer
or exception counts as an error. Needs a PostgreSQL DATABASE_URL and REDIS_URL:

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
      .venv/bin/python scripts/bench_load.py [--clients 50] [--viewers 20] [--seconds 60]
"""
import argparse
import asyncio
import csv
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import websockets  # noqa: E402

from tests.stack import ARTIFACTS, Stack  # noqa: E402

PASSWORD = "pw-load-bench-1234"
CATALOGUE = ["accelerators", "cpus", "nics", "switches", "link-parts", "compute-node-types", "storage-node-types",
             "price-books"]
PARTS = [("switches", "qm8700"), ("accelerators", "a100-pcie-40gb"), ("compute-node-types", "ff-pcie-a100")]
EVALUATIONS = [("ff2-pcie-2zone", None), ("ff2-pcie-2zone", "llama-13b-512"), ("dgx-a100-3layer", None),
               ("ascend-910b-single-rail", None), ("ff2-pcie-3layer", "gpt2-medium-128")]
CREATE_USERS = """
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from planner.services.accounts import token_issue
hashed = make_password("{password}")  # hashed once: the same password for every load user
for i in range({n}):
    user, _ = get_user_model().objects.update_or_create(username=f"load{{i}}", defaults={{"password": hashed}})
    print(user.username, token_issue(user))
"""


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


class Tally:
    def __init__(self):
        self.latency_s: dict[str, list[float]] = {}
        self.errors: dict[str, list[str]] = {}
        self.timeline: list[tuple[float, str, float]] = []

    def record(self, kind, began, seconds, error=None):
        self.latency_s.setdefault(kind, []).append(seconds)
        self.timeline.append((began, kind, seconds))
        if error:
            self.errors.setdefault(kind, []).append(error)


async def http_user(base, token, window, think, catalogue_share, new_share, tally, rng):
    headers = {"Authorization": f"Token {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        try:  # connect (one untimed read, which opens the kept-alive connection) before the window opens
            (await client.get("/api/catalog/switches/")).raise_for_status()
        finally:
            await window.opened()
        deadline = time.monotonic() + window.seconds
        while True:
            await asyncio.sleep(rng.uniform(*think))
            if time.monotonic() >= deadline:
                return
            if rng.random() < catalogue_share:
                if rng.random() < 0.5:
                    kind, request = "catalogue list", client.get(f"/api/catalog/{rng.choice(CATALOGUE)}/")
                else:
                    table, slug = rng.choice(PARTS)
                    kind, request = "catalogue part", client.get(f"/api/catalog/{table}/{slug}/")
            else:
                plan, workload = rng.choice(EVALUATIONS)
                body = {"workload": workload} if workload else {}
                new = rng.random() < new_share
                if new:  # a message size no one asked for: a document the server has not evaluated
                    body["options"] = {"message_bytes": rng.randrange(2**20, 2**30)}
                kind = f"evaluate, {'new' if new else 'repeated'} document"
                request = client.post(f"/api/plans/{plan}/evaluate/", json=body)
            began = time.perf_counter()
            try:
                response = await request
                error = None if response.is_success else f"{response.status_code} {response.text[:120]}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
            tally.record(kind, began, time.perf_counter() - began, error)


async def session_cookie(base, username):
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        page = await client.get("/login/")
        form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        await client.post("/login/", data={"username": username, "password": PASSWORD,
                                           "csrfmiddlewaretoken": form_token}, headers={"Referer": base + "/login/"})
        return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


class Window:
    """The timed window: it opens once every client and viewer has connected (as after a Locust
    ramp-up), so that connection set-up and the viewers' first snapshots are not timed."""

    def __init__(self, parties: int, seconds: float):
        self.barrier = asyncio.Barrier(parties)
        self.seconds = seconds
        self.waited = set()

    async def opened(self):
        if asyncio.current_task() not in self.waited:
            self.waited.add(asyncio.current_task())
            await self.barrier.wait()


async def viewer(base, cookie, twin_id, window, latencies, errors):
    url = base.replace("http://", "ws://") + f"/ws/twins/{twin_id}/"
    try:
        async with websockets.connect(url, additional_headers={"Cookie": cookie, "Origin": base}) as socket:
            await socket.recv()  # the snapshot
            await window.opened()
            deadline = time.monotonic() + window.seconds
            while (left := deadline - time.monotonic()) > 0:
                try:
                    message = json.loads(await asyncio.wait_for(socket.recv(), timeout=left))
                except TimeoutError:
                    return
                if message.get("type") == "delta" and "published_at" in message:
                    latencies.append(time.time() - message["published_at"])
    except (OSError, websockets.WebSocketException) as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await window.opened()


async def run(stack, tokens, args):
    rng = random.Random(args.seed)
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Token {tokens[0][1]}"}) as owner:
        twin = (await owner.post("/api/twins/", json={"plan": "ff2-pcie-2zone", "speed": 3600,
                                                      "visibility": "shared"})).json()
        await owner.post(f"/api/twins/{twin['id']}/start/")
    cookies = [await session_cookie(stack.url, tokens[i % len(tokens)][0]) for i in range(args.viewers)]
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Token {tokens[0][1]}"}) as warm:
        for _ in range(4 * args.web_processes):  # each server process's first requests load its code
            await warm.get("/api/catalog/switches/")
            await warm.post("/api/plans/ff2-pcie-2zone/evaluate/", json={})
    tally, latencies, viewer_errors = Tally(), [], []
    window = Window(len(tokens) + len(cookies) + 1, args.seconds)
    users = [http_user(stack.url, token, window, args.think, args.catalogue_share, args.new_document_share, tally,
                       random.Random(rng.random())) for _, token in tokens]
    viewers = [viewer(stack.url, cookie, twin["id"], window, latencies, viewer_errors) for cookie in cookies]
    tasks = [asyncio.create_task(party) for party in (*users, *viewers)]
    await window.opened()
    began = time.monotonic()
    await asyncio.gather(*tasks)
    return tally, latencies, viewer_errors, time.monotonic() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--think", type=float, nargs=2, default=(0.5, 1.5), metavar=("MIN_S", "MAX_S"))
    parser.add_argument("--catalogue-share", type=float, default=0.7)
    parser.add_argument("--new-document-share", type=float, default=0.5,
                        help="evaluations of a document not evaluated before (the rest repeat a preset's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--web-processes", type=int, default=2, help="Daphne processes sharing the port")
    parser.add_argument("--timeline", type=Path, help="write every request (start s, kind, latency ms) to this CSV")
    args = parser.parse_args()
    database, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL")
    if not database.startswith("postgres") or not redis_url:
        sys.exit("needs a PostgreSQL DATABASE_URL and REDIS_URL (see the docstring)")
    redis_url, cache_url = (urlunsplit(urlsplit(redis_url)._replace(path=f"/{db}")) for db in (8, 9))
    import redis

    for url in (redis_url, cache_url):
        redis.Redis.from_url(url).flushdb()
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(Path(tmp), name="planner_load", users={}, redis_url=redis_url, env={"CACHE_URL": cache_url})
        output = stack.manage("shell", "-c", CREATE_USERS.format(n=args.clients, password=PASSWORD))
        tokens = [tuple(line.split()) for line in output.splitlines() if line.startswith("load")]
        try:
            (ARTIFACTS / "planner_load-worker.log").unlink(missing_ok=True)
            stack.start("web", processes=args.web_processes)
            stack.start("worker")
            stack.start("driver")
            stack.wait_for_log("worker", "ready.")  # measure the running stack, not its start-up
            tally, latencies, viewer_errors, wall_s = asyncio.run(run(stack, tokens, args))
        finally:
            stack.stop()
    if args.timeline:
        start = min(began for began, _, _ in tally.timeline)
        with args.timeline.open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["start_s", "kind", "latency_ms"])
            writer.writerows((f"{began - start:.4f}", kind, f"{1000 * seconds:.2f}")
                             for began, kind, seconds in sorted(tally.timeline))
    total = sum(len(v) for v in tally.latency_s.values())
    errors = sum(len(v) for v in tally.errors.values())
    print(f"{args.clients} HTTP clients (think {args.think[0]:g}-{args.think[1]:g} s) and {args.viewers} websocket "
          f"viewers for {wall_s:.0f} s against {args.web_processes} Daphne process(es) + Celery + Redis + PostgreSQL "
          "on 127.0.0.1")
    print(f"all requests: {total:,} in {wall_s:.0f} s = {total / wall_s:.1f} req/s, errors {errors}")
    for kind in sorted(tally.latency_s):
        values = tally.latency_s[kind]
        print(f"  {kind:24s} {len(values):6,d} requests, {len(values) / wall_s:6.1f}/s, "
              f"p50 {1000 * statistics.median(values):6.1f} ms, p99 {1000 * percentile(values, 0.99):6.1f} ms, "
              f"max {1000 * max(values):6.1f} ms, errors {len(tally.errors.get(kind, []))}")
    for kind, messages in tally.errors.items():
        print(f"  first {kind} error: {messages[0]}")
    if latencies:
        print(f"websocket viewers: {len(latencies):,} deltas, "
              f"latency p50 {1000 * statistics.median(latencies):.0f} ms, "
              f"p99 {1000 * percentile(latencies, 0.99):.0f} ms, errors {len(viewer_errors)}")
    else:
        print(f"websocket viewers: no deltas received, errors {len(viewer_errors)} {viewer_errors[:1]}")


if __name__ == "__main__":
    main()
