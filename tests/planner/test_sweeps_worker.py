"""Sweeps on a real Celery worker over this machine's Redis and PostgreSQL (CI sets REDIS_URL and
DATABASE_URL): results match direct evaluation, a SIGKILLed worker loses and duplicates nothing,
cancel stops the work, and websocket viewers see progress rise to 100%."""
import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection
from rest_framework.test import APIClient

import simcore
from planner.models import Sweep, SweepChunk
from planner.services import sweep_spec, sweep_store
from simcore.outputs import dig
from simcore.tools.sweep import grid_shape, set_path
from tests.helpers import ANONYMOUS, connect_attempt, session_headers

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(not os.environ.get("REDIS_URL") or not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                       reason="needs REDIS_URL and a PostgreSQL DATABASE_URL (CI sets both)"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
AXES = {"cluster.node_count": {"start": 40, "stop": 1240, "step": 2}, "workload.gpus": [64, 128, 256, 320, 512]}


def worker_env() -> dict:
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    )
    return env


class Worker:
    """A Celery worker process on the given queues, in its own process group."""

    def __init__(self, log_path: Path, name: str, queues: str = "sim"):
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues, "--pool", "solo",
             "--loglevel", "INFO", "-n", f"{name}@%h", "--without-mingle", "--without-gossip"],
            cwd=ROOT, env=worker_env(), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def log_tail(self, chars=3000) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-chars:]

    def kill(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.log.close()

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


@pytest.fixture
def broker():
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("sim")
    return app


@pytest.fixture
def workers(tmp_path, broker):
    started = []

    def start(name="w"):
        worker = Worker(tmp_path / f"{name}.log", f"{name}{len(started)}")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("sweeper", password="pw-sweeper-1234")


@pytest.fixture
def api(owner):
    client = APIClient()
    client.force_authenticate(owner)
    return client


def wait_for(predicate, timeout=90.0, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def stood(sweep: Sweep) -> str:
    """Where a sweep and the broker's unacknowledged tasks stand, for a failure message."""
    from config.celery import app

    sweep.refresh_from_db()
    stored = sorted(SweepChunk.objects.filter(sweep=sweep).values_list("index", flat=True))
    with app.connection_for_write() as conn:
        redis = conn.default_channel.client
        unacked = f"unacked {redis.hlen('unacked')}, restore lock ttl {redis.ttl('unacked_mutex')} s"
    return (f"status {sweep.status} {sweep.error!r}, chunks stored {len(stored)} of {sweep.chunk_count}: {stored}; "
            f"{unacked}")


def submit(api, settings, chunk_points, **extra):
    settings.SWEEP_CHUNK_POINTS = chunk_points
    response = api.post("/api/sweeps/", {"plan": "ff2-pcie-2zone", "workload": "llama-13b-512", "axes": AXES,
                                         **extra}, format="json")
    assert response.status_code == 201, response.json()
    return Sweep.objects.get(pk=response.json()["id"])


def assert_complete_and_exact(sweep: Sweep):
    indices = list(SweepChunk.objects.filter(sweep=sweep).values_list("index", flat=True))
    assert sorted(indices) == list(range(sweep.chunk_count))  # none missing, none twice
    columns = sweep_store.sweep_columns(sweep)
    assert columns["point"].tolist() == list(range(sweep.total_points))
    axes, _, outputs = sweep_spec.sweep_axes(sweep)
    direct = sweep_spec.evaluate_chunk(sweep.base_document, axes, outputs, np.arange(sweep.total_points))
    for path in outputs:
        assert np.array_equal(columns[path], direct[path], equal_nan=True), path
    assert np.array_equal(columns["valid"], direct["valid"])
    # And point by point against plain simcore.evaluate of each point's own scenario document.
    for point in np.linspace(0, sweep.total_points - 1, 25).astype(int):
        document = copy.deepcopy(sweep.base_document["documents"][0])
        for axis, index in zip(axes, np.unravel_index(point, grid_shape(axes))):
            set_path(document, axis.path, float(axis.values[index]))
        result = simcore.evaluate(document)
        for path in ("fabric.switches", "cost.capex_total", "training.step_time_s"):
            expected = dig(result, path)
            stored = columns[path][point]
            assert (expected is None and np.isnan(stored)) or stored == expected, (point, path)


def test_worker_completes_a_sweep_matching_direct_evaluation(api, settings, workers):
    sweep = submit(api, settings, chunk_points=500)
    assert sweep.status == "pending" and sweep.chunk_count == 7
    workers()
    assert wait_for(lambda: Sweep.objects.get(pk=sweep.pk).status == "done"), "sweep did not finish"
    sweep.refresh_from_db()
    assert sweep.completed_chunks == sweep.chunk_count and sweep.progress == 1.0
    assert_complete_and_exact(sweep)


def test_another_users_small_sweep_waits_behind_a_few_chunks_not_a_whole_sweep(api, settings, workers,
                                                                             django_user_model):
    """One user's 61-chunk sweep, then another user's one-chunk sweep: each user has at most
    SWEEP_CHUNKS_IN_FLIGHT_PER_USER (4) chunks queued or running, the next released as these
    finish, so the second sweep is done while the first has finished a handful of its chunks
    (queued whole, it would wait for all 61); the first still completes exactly."""
    big = submit(api, settings, chunk_points=50)
    assert (big.chunk_count, big.released_chunks) == (61, 4)
    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_user("neighbour", password="pw-neighbour-1234"))
    small = other.post("/api/sweeps/", {"plan": "ff2-pcie-2zone", "workload": "llama-13b-512",
                                        "axes": {"workload.gpus": [64, 128]}}, format="json").json()
    workers()
    assert wait_for(lambda: Sweep.objects.get(pk=small["id"]).status == "done"), "the small sweep did not finish"
    small_done = Sweep.objects.get(pk=small["id"]).finished_at
    assert SweepChunk.objects.filter(sweep=big, created_at__lte=small_done).count() <= 5
    assert wait_for(lambda: Sweep.objects.get(pk=big.pk).status == "done", timeout=180), stood(big)
    assert_complete_and_exact(big)


def test_a_site_plan_runs_on_the_worker_and_ranks_the_catalogues_builds(api, workers):
    """A 20 MW site and a Llama 3 70B-class goal: its sweep (one chunk per build) runs on the worker
    within a minute, and the finished sweep holds the ranking its stored points give."""
    from planner.services.site_results import site_ranking
    from tests.planner.test_sites import SITE

    response = api.post("/api/sweeps/site/", SITE, format="json")
    assert response.status_code == 201, response.json()
    sweep = Sweep.objects.get(pk=response.json()["id"])
    assert sweep.status == "pending" and sweep.chunk_count == len(sweep.site["builds"]) == 16

    workers()
    assert wait_for(lambda: Sweep.objects.get(pk=sweep.pk).status == "done", timeout=60), stood(sweep)
    sweep.refresh_from_db()
    assert sweep.site_result == site_ranking(sweep)
    builds = sweep.site_result["builds"]
    assert len(builds) == 64 and builds[0]["point"] is not None and builds[0]["time_band"]["cases"] > 0


def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(api, settings, workers):
    """SIGKILL the worker while chunks remain; a new worker finishes the sweep within a minute of the
    kill, on the default settings (a visibility timeout of an hour, which alone would hold the dead
    worker's chunk that long): the watch finds the chunk with no live claim and queues it again, and
    it is stored exactly once."""
    sweep = submit(api, settings, chunk_points=60)
    assert sweep.chunk_count == 51
    first = workers("first")
    assert wait_for(lambda: SweepChunk.objects.filter(sweep=sweep).count() >= 5), "no progress before the kill"
    first.kill()
    killed_at = time.monotonic()
    stored_at_kill = SweepChunk.objects.filter(sweep=sweep).count()
    assert stored_at_kill < sweep.chunk_count, "the worker finished before it could be killed"
    second = workers("second")
    assert wait_for(lambda: Sweep.objects.get(pk=sweep.pk).status == "done", timeout=120), (
        f"sweep did not resume: {stood(sweep)}\nsecond worker's log:\n{second.log_tail()}")
    assert time.monotonic() - killed_at < 60, stood(sweep)
    sweep.refresh_from_db()
    assert sweep.completed_chunks == sweep.chunk_count
    assert_complete_and_exact(sweep)


def test_a_chunk_lost_in_flight_is_queued_again(api, settings, workers, monkeypatch):
    """A worker killed after taking a chunk off the queue but before recording it as unacknowledged
    loses that message (kombu pops, then records), and no visibility timeout brings it back.
    Simulated by queueing every chunk but one: the watch finds that chunk neither stored, queued
    nor claimed in two scans, queues it again, and the sweep completes exactly."""
    from planner import tasks

    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    sweep = submit(api, settings, chunk_points=500)
    Sweep.objects.filter(pk=sweep.pk).update(released_chunks=sweep.chunk_count)  # all of it is the owner's share
    tasks.sweep_enqueue(sweep, [index for index in range(sweep.chunk_count) if index != 3])
    worker = workers()
    assert wait_for(lambda: SweepChunk.objects.filter(sweep=sweep).count() == sweep.chunk_count - 1)
    assert Sweep.objects.get(pk=sweep.pk).status == "running"
    assert wait_for(lambda: Sweep.objects.get(pk=sweep.pk).status == "done", timeout=60), (
        f"the lost chunk was not queued again: {stood(sweep)}\nworker's log:\n{worker.log_tail()}")
    assert_complete_and_exact(sweep)
    assert f"queued lost sweep chunks again: {{{sweep.pk}: [3]}}" in worker.log_tail(100_000)


def test_the_watch_queues_again_only_chunks_missing_from_the_store_the_queue_and_the_claims(api, settings, broker,
                                                                                            monkeypatch):
    """Of seven chunks: one stored, one waiting in the queue and one claimed by a running worker are
    left alone; the other four are queued again, and only when a second scan, at least half
    SWEEP_WATCH_S after the first, still finds them missing."""
    from planner import chunk_watch, services, tasks

    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    settings.SWEEP_WATCH_S = 0.4
    sweep = submit(api, settings, chunk_points=500)
    assert sweep.chunk_count == 7
    Sweep.objects.filter(pk=sweep.pk).update(released_chunks=sweep.chunk_count)
    sweep.refresh_from_db()
    assert services.sweeps.sweep_run_chunk(sweep_id=sweep.pk, index=0)
    tasks.sweep_enqueue(sweep, [1])
    requeued = []

    def scan():
        with chunk_watch.broker_redis() as redis:
            redis.delete(chunk_watch.SCAN_LOCK)
        return chunk_watch.scan_for_lost_chunks(lambda s, indices: requeued.append((s.pk, indices)))

    with chunk_watch.claimed(sweep.pk, 2):
        assert scan() == {} and requeued == []  # first sighting: a chunk may be between queue and claim
        assert scan() == {}  # too soon for a second look
        time.sleep(0.25)
        assert scan() == {sweep.pk: [3, 4, 5, 6]}
    assert requeued == [(sweep.pk, [3, 4, 5, 6])]
    assert scan() == {}  # chunk 2's claim is released now: seen missing once
    time.sleep(0.25)
    assert scan() == {sweep.pk: [2, 3, 4, 5, 6]}  # the requeue here was recorded, not sent


def test_cancel_stops_the_remaining_chunks(api, settings, workers, monkeypatch):
    sweep = submit(api, settings, chunk_points=30)
    workers()
    assert wait_for(lambda: SweepChunk.objects.filter(sweep=sweep).count() >= 2)
    assert api.post(f"/api/sweeps/{sweep.pk}/cancel/").json()["status"] == "cancelled"
    stored = SweepChunk.objects.filter(sweep=sweep).count()
    time.sleep(3)  # the worker drains the queue, skipping every chunk of the cancelled sweep
    assert SweepChunk.objects.filter(sweep=sweep).count() <= stored + 1  # at most the one in flight
    assert SweepChunk.objects.filter(sweep=sweep).count() < sweep.chunk_count
    assert Sweep.objects.get(pk=sweep.pk).status == "cancelled"


def test_websocket_viewer_sees_progress_rise_to_100_percent(api, owner, settings, workers, monkeypatch):
    from config.asgi import application
    from planner import tasks

    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    sweep = submit(api, settings, chunk_points=150)
    headers = session_headers(owner)

    async def follow():
        communicator = WebsocketCommunicator(application, f"/ws/sweeps/{sweep.pk}/", headers=headers)
        connected, _ = await communicator.connect()
        assert connected
        states = [await communicator.receive_json_from(timeout=10)]
        await sync_to_async(tasks.sweep_enqueue)(sweep)  # on the test's thread and connection
        while states[-1]["status"] != "done":
            states.append(await communicator.receive_json_from(timeout=60))
        await communicator.disconnect()
        return states

    workers()
    states = async_to_sync(follow)()
    progress = [state["progress"] for state in states]
    assert progress[0] == 0.0 and progress[-1] == 1.0
    assert progress == sorted(progress)
    assert len(states) >= 2


def test_websockets_refuse_strangers_and_foreign_origins(api, owner, settings, django_user_model, monkeypatch):
    from config.asgi import application

    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    sweep = submit(api, settings, chunk_points=1000)
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-1234")

    def attempt(headers):
        return connect_attempt(application, f"/ws/sweeps/{sweep.pk}/", headers)

    assert attempt(ANONYMOUS) == (False, 4401)
    assert attempt(session_headers(stranger)) == (False, 4403)
    foreign = session_headers(owner, b"http://evil.example")
    assert attempt(foreign)[0] is False
    assert attempt(session_headers(owner))[0] is True
