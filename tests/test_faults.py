"""Faults with the real services: Redis stopped during a sweep, PostgreSQL connections dropped.

Each test runs the production-style stack (tests/stack.py: Daphne and a Celery worker) on its own
PostgreSQL database and its own Redis server (started here, with an append-only file, so that it
can be stopped and started again without touching the machine's Redis), and checks for loss the
same way: when the sweep is done, its stored chunks cover every grid point exactly once (no
chunk missing, none stored twice) and the exported points are the grid, each once, with the
engine's values. A SIGKILLed worker (tests/planner/test_sweeps_worker.py) and a killed and
restarted twin driver (tests/twin/test_twin_api.py) are tested beside their features.
"""
import csv
import io
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta

import psycopg
import pytest

from tests.stack import ARTIFACTS, Stack, free_port, wait_until

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(not os.environ.get("DATABASE_URL",
                                          "").startswith("postgres") or not shutil.which("redis-server"),
                       reason="needs a PostgreSQL DATABASE_URL and redis-server (CI has both)"),
]
USER, PASSWORD = "operator", "pw-operator-faults-1234"
AXES = {"cluster.node_count": {"start": 40, "stop": 1240, "step": 4}, "workload.gpus": [64, 128, 256, 512]}
CHUNK_POINTS = 8  # 301 x 4 = 1,204 points in 151 chunks: long enough to break things mid-way


class RedisServer:
    """A private redis-server with an append-only file, so a restart keeps the queued tasks."""

    def __init__(self, directory):
        self.port, self.directory = free_port(), directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def forget(self):
        """Lose everything it held, as a Redis without persistence does when it restarts."""
        shutil.rmtree(self.directory / "appendonlydir", ignore_errors=True)

    def start(self):
        log = open(ARTIFACTS / f"redis-{self.port}.log", "ab")
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
             "--appendonly", "yes", "--appendfsync", "always", "--save", ""], stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.ping, 10, what="redis-server up")

    def ping(self) -> bool:
        import redis

        try:
            return redis.Redis.from_url(self.url, socket_timeout=1).ping()
        except redis.RedisError:
            return False

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: redis flushes the append-only file and exits
            self.process.wait(timeout=10)


class Client:
    """A token-authenticated JSON client for the stack's API."""

    def __init__(self, base, username=USER, password=PASSWORD):
        self.base = base
        self.token = self.call("POST", "/api/auth/token/", {"username": username, "password": password},
                               auth=False)[1]["token"]

    def call(self, method, path, body=None, auth=True):
        request = urllib.request.Request(self.base + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        if auth:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw, status, headers = response.read(), response.status, response.headers
        except urllib.error.HTTPError as error:
            raw, status, headers = error.read(), error.code, error.headers
        self.headers = headers
        return status, json.loads(raw) if "json" in headers.get("Content-Type", "") else raw.decode()


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def stack(tmp_path, redis_server, request):
    name = "planner_" + request.node.name.removeprefix("test_")[:40]
    # The watch for lost chunks runs on its default settings: a chunk whose message Redis lost as it
    # stopped comes back through it (planner.chunk_watch), not through a shortened timer.
    stack = Stack(tmp_path, name=name, users={USER: PASSWORD}, redis_url=redis_server.url,
                  env={"SWEEP_CHUNK_POINTS": str(CHUNK_POINTS)})
    try:
        stack.start("web")
        stack.start("worker")
        yield stack
    finally:
        stack.stop()


def submit(client) -> dict:
    status, sweep = client.call("POST", "/api/sweeps/", {"plan": "ff2-pcie-2zone", "workload": "llama-13b-512",
                                                         "axes": AXES})
    assert status == 201, sweep
    assert sweep["chunk_count"] == 151 and sweep["total_points"] == 1204
    return sweep


def sweep_of(client, sweep_id) -> dict:
    return client.call("GET", f"/api/sweeps/{sweep_id}/")[1]


def wait_for_the_end(stack, client, sweep_id, what) -> dict:
    """The sweep once it is final (done, failed or cancelled); on a timeout, say where it stood."""
    try:
        return wait_until(lambda: (s := sweep_of(client, sweep_id))["status"] in ("done", "failed", "cancelled") and s,
                          180, what=what)
    except TimeoutError as error:
        log = (ARTIFACTS / f"{stack.name}-worker.log").read_text(errors="replace")[-3000:]
        raise AssertionError(f"{error}: {sweep_of(client, sweep_id)}\nworker log tail:\n{log}") from None


def assert_nothing_lost_or_duplicated(stack, client, sweep):
    """Chunks cover the grid exactly once; the export holds every point once with the engine's values."""
    with psycopg.connect(stack.env["DATABASE_URL"]) as conn:
        rows = conn.execute("SELECT index, start, stop FROM planner_sweepchunk WHERE sweep_id = %s ORDER BY index",
                            (sweep["id"],)).fetchall()
    assert [r[0] for r in rows] == list(range(sweep["chunk_count"]))
    assert sum(stop - start for _, start, stop in rows) == sweep["total_points"]
    assert all(rows[i][2] == rows[i + 1][1] for i in range(len(rows) - 1))
    status, text = client.call("GET", f"/api/sweeps/{sweep['id']}/export/?file=csv")
    assert status == 200
    points = list(csv.DictReader(io.StringIO(text)))
    assert sorted(int(p["point"]) for p in points) == list(range(sweep["total_points"]))
    # Spot-check values against the engine, evaluated directly on the same document.
    document = json.loads(stack.manage("evaluate_plan", "ff2-pcie-2zone", "--workload", "llama-13b-512",
                                       "--format", "json"))
    assert document["result"]["cluster"]["nodes"] == 1240
    last = max(points, key=lambda p: int(p["point"]))
    assert float(last["cluster.node_count"]) == 1240 and float(last["workload.gpus"]) == 512
    assert float(last["training.step_time_s"]) == pytest.approx(document["result"]["training"]["step_time_s"], rel=1e-9)


def test_redis_stopped_during_a_sweep(stack, redis_server):
    """Redis stops mid-sweep: a new submission answers 503 and stores nothing, reads still work, and
    the running sweep resumes when Redis is back, with every point stored once."""
    client = Client(stack.url)
    sweep = submit(client)
    wait_until(lambda: sweep_of(client, sweep["id"])["completed_chunks"] >= 5, 60, what="first chunks stored")
    redis_server.stop()
    stopped_at = sweep_of(client, sweep["id"])["completed_chunks"]
    assert stopped_at < sweep["chunk_count"], "the sweep finished before Redis stopped; make it longer"

    status, body = client.call("POST", "/api/sweeps/", {"plan": "ff2-pcie-2zone", "axes": {"cluster.node_count": [8,
                                                                                                                  16]}})
    assert status == 503
    assert "task queue (Redis) is unreachable" in body["detail"] and "nothing of it was saved" in body["detail"]
    status, listing = client.call("GET", "/api/sweeps/")
    assert status == 200 and [s["id"] for s in listing["results"]] == [sweep["id"]]  # the refused one left nothing
    time.sleep(2)  # the worker is now cut off from its queue

    redis_server.start()
    done = wait_for_the_end(stack, client, sweep["id"], "the sweep finishing after Redis returned")
    assert done["status"] == "done" and done["error"] == "", done
    assert done["completed_chunks"] == sweep["chunk_count"]
    assert_nothing_lost_or_duplicated(stack, client, sweep)


def test_a_redis_restarted_empty_loses_no_chunk(stack, redis_server):
    """Redis restarts mid-sweep with nothing kept (its queue, unacknowledged tasks and claims all
    gone, as with the default of no persistence): the watch queues the missing chunks again and the
    sweep is done within a minute of Redis's return, every point stored once."""
    client = Client(stack.url)
    sweep = submit(client)
    wait_until(lambda: sweep_of(client, sweep["id"])["completed_chunks"] >= 5, 60, what="first chunks stored")
    redis_server.stop()
    assert sweep_of(client, sweep["id"])["completed_chunks"] < sweep["chunk_count"], "the sweep finished first"
    redis_server.forget()
    redis_server.start()
    back_at = time.monotonic()
    done = wait_for_the_end(stack, client, sweep["id"], "the sweep finishing after Redis returned empty")
    assert done["status"] == "done" and done["completed_chunks"] == sweep["chunk_count"], done
    assert time.monotonic() - back_at < 60
    assert_nothing_lost_or_duplicated(stack, client, sweep)


def test_postgresql_connections_dropped_during_a_sweep(stack):
    """Every connection to the database is terminated twice mid-sweep (as a PostgreSQL restart or a
    failover would): the worker retries its chunk on a new connection, the API answers the next
    request, and the sweep completes with every point stored once."""
    client = Client(stack.url)
    sweep = submit(client)
    dbname = stack.env["DATABASE_URL"].rsplit("/", 1)[1]
    for threshold in (5, 30):
        wait_until(lambda at_least=threshold: sweep_of(client, sweep["id"])["completed_chunks"] >= at_least, 60,
                   what=f"{threshold} chunks stored")
        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as admin:
            # The worker holds a connection while it runs a chunk; keep cutting until one was cut.
            wait_until(lambda: admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()", (dbname,)).fetchone()[0], 10, 0.05,
                what="a connection to terminate")
        status, _ = client.call("GET", f"/api/sweeps/{sweep['id']}/")
        assert status == 200  # a new request gets a new connection
    done = wait_for_the_end(stack, client, sweep["id"], "the sweep finishing")
    assert done["status"] == "done" and done["error"] == "", done
    assert_nothing_lost_or_duplicated(stack, client, sweep)


def test_throttles_count_across_web_processes_and_fail_open_without_the_cache(tmp_path, redis_server):
    """With CACHE_URL, two Daphne processes share one throttle count: of 8 evaluations on fresh
    connections (which the kernel spreads over both processes) exactly 3 pass a 3/minute rate,
    where per-process counts would let up to 6 through. With that Redis stopped, evaluations
    still answer (the throttle lets them through) instead of failing."""
    cache_url = redis_server.url.removesuffix("/0") + "/1"
    stack = Stack(tmp_path, name="planner_shared_cache", users={USER: PASSWORD}, redis_url=redis_server.url,
                  env={"CACHE_URL": cache_url, "THROTTLE_EVALUATE": "3/minute"})
    try:
        stack.start("web", processes=2)
        client = Client(stack.url)
        codes = [client.call("POST", "/api/plans/ff2-pcie-2zone/evaluate/", {})[0] for _ in range(8)]
        assert sorted(codes) == [200] * 3 + [429] * 5, codes
        redis_server.stop()
        status, answer = client.call("POST", "/api/plans/ff2-pcie-2zone/evaluate/", {})
        assert status == 200 and answer["result"]["cluster"]["gpus"] == 9920, answer
        logs = "".join((ARTIFACTS / f"{stack.name}-{role}.log").read_text(errors="replace") for role in ("web", "web1"))
        assert "the cache (Redis) is unreachable, answering as an empty cache" in logs
    finally:
        stack.stop()


def test_the_web_the_workers_and_the_twin_driver_log_json_lines_in_utc(tmp_path, redis_server):
    """Every line the three processes log is one JSON object with an ISO 8601 UTC time and its level;
    the web's carry their request's id and the worker's, inside a task, the task's id."""
    stack = Stack(tmp_path, name="planner_json_logs", users={USER: PASSWORD}, redis_url=redis_server.url)
    for role in ("web", "worker", "driver"):
        (ARTIFACTS / f"{stack.name}-{role}.log").unlink(missing_ok=True)  # logs are appended to; start afresh
    try:
        for role in ("web", "worker", "driver"):
            stack.start(role)
        stack.wait_for_log("worker", "ready.")
        stack.wait_for_log("driver", "driving twins")
        client = Client(stack.url)
        status, sweep = client.call("POST", "/api/sweeps/", {"plan": "ff2-pcie-2zone",
                                                             "axes": {"cluster.node_count": [8, 16]}})
        assert status == 201, sweep
        wait_until(lambda: sweep_of(client, sweep["id"])["status"] == "done", 60, what="the sweep done")
    finally:
        stack.stop()
    records = {}
    for role in ("web", "worker", "driver"):
        # Celery writes one notice straight to the console as it stops ("worker: Warm shutdown
        # (MainProcess)", celery/apps/worker.py's safe_say), outside logging: the only line left out.
        lines = [line for line in (ARTIFACTS / f"{stack.name}-{role}.log").read_text().splitlines()
                 if line.strip() and not line.startswith("worker: Warm shutdown")]
        records[role] = []
        for line in lines:
            try:
                records[role].append(json.loads(line))
            except json.JSONDecodeError:
                raise AssertionError(f"{role} logged a line that is not JSON: {line!r}") from None
        for record in records[role]:
            moment = datetime.fromisoformat(record["time"])
            assert moment.utcoffset() == timedelta(0) and record["level"] in {"DEBUG", "INFO", "WARNING", "ERROR"}
    assert any(r["logger"] == "planner.access" and r["request_id"] != "-" for r in records["web"])
    assert any(r["task_id"] != "-" for r in records["worker"])
    assert [r["message"] for r in records["driver"]][:1] == ["driving twins every 0.2 s"]


SITE = {"price_book": "usd-2026",
        "facility": {"power_mw": 200, "floor_racks": 4000, "rack_power_kw": 130, "cooling": "liquid",
                     "hall": "hyperscale", "storage_write_gbyte_s": 2000},
        "goal": {"workload": "llama3-70b-class-1152", "objective": "by_date", "deadline": "2027-12-01"}}


def test_one_users_burst_of_site_plans_takes_neither_the_pool_nor_the_server_from_another(tmp_path, redis_server):
    """12 site plans of 64 builds sent at once by one user (the sampled check runs in the request)
    gave 4 x 500 (the database pool's PoolTimeout) and another user's reads 11 s waits. Now at most
    HEAVY_REQUESTS_PER_USER run at once (the others 429 with Retry-After, at once), none answers 500,
    and the other user's reads keep answering within 1 s throughout."""
    reader, reader_password = "reader", "pw-reader-faults-1234"
    stack = Stack(tmp_path, name="planner_heavy", users={USER: PASSWORD, reader: reader_password},
                  redis_url=redis_server.url, env={"CACHE_URL": redis_server.url.removesuffix("/0") + "/1"})
    try:
        stack.start("web")
        attacker, other = Client(stack.url), Client(stack.url, reader, reader_password)
        presets = [plan["slug"] for plan in attacker.call("GET", "/api/plans/?page_size=100")[1]["results"]]
        builds = presets + [f"{presets[i % len(presets)]}-{i}" for i in range(64 - len(presets))]
        for i, slug in enumerate(builds[len(presets):]):
            assert attacker.call("POST", f"/api/plans/{presets[i % len(presets)]}/clone/", {"slug": slug})[0] == 201
        answers, slowest_s = [], 0.0

        def site_plan():
            client = Client.__new__(Client)
            client.base, client.token = stack.url, attacker.token
            status, body = client.call("POST", "/api/sweeps/site/", {**SITE, "builds": builds})
            answers.append((status, client.headers.get("Retry-After"), body))

        burst = [threading.Thread(target=site_plan) for _ in range(12)]
        for thread in burst:
            thread.start()
        while any(thread.is_alive() for thread in burst):
            started = time.monotonic()
            assert other.call("GET", "/api/plans/?page_size=1")[0] == 200
            slowest_s = max(slowest_s, time.monotonic() - started)
            time.sleep(0.1)
        statuses = sorted(status for status, _, _ in answers)
        assert set(statuses) <= {201, 429} and statuses.count(201) >= 2, [(s, str(b)[:200]) for s, _, b in answers]
        assert all(retry == "1" and "HEAVY_REQUESTS_PER_USER" in body["detail"]
                   for status, retry, body in answers if status == 429)
        assert slowest_s < 1.0, f"another user's read waited {slowest_s:.1f} s during the burst"
    finally:
        stack.stop()
