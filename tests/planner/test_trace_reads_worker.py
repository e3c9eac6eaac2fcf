"""A large profiler trace read by a real Celery worker over this machine's Redis and PostgreSQL (CI
sets REDIS_URL and DATABASE_URL): the upload answers 202 at once and holds its owner's one slot, the
worker reads it and stores its measurement; a trace recorded by a request that died before queueing
it is found by the workers' watch and read."""
import pytest

from planner.models import TraceRead
from tests.planner import test_sweeps_worker
from tests.planner.test_sweeps_worker import Worker, broker, wait_for  # noqa: F401  (broker: a fixture)
from tests.planner.test_trace_measurements import WORKLOAD, trace_file

pytestmark = test_sweeps_worker.pytestmark  # needs Redis and PostgreSQL; a transactional database


@pytest.fixture
def queue(broker):  # noqa: F811
    with broker.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")


def upload(client, plan):
    return client.post("/api/measurements/", {"kind": "trace", "file": trace_file(), "plan": plan.slug,
                                              "workload": WORKLOAD, "dense_layers": 1}, format="multipart")


def test_a_worker_reads_a_large_trace_after_its_request(reader_client, my_plan, queue, tmp_path, settings):
    settings.TRACE_INLINE_MAX_BYTES = 1_000  # the synthetic step's JSON is about 2 kB
    response = upload(reader_client, my_plan)
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "queued"  # no worker has it yet
    refused = upload(reader_client, my_plan)
    assert refused.status_code == 429 and refused["Content-Type"] == "application/problem+json"
    worker = Worker(tmp_path / "trace.log", "trace", queues="celery")
    try:
        assert wait_for(lambda: reader_client.get(response["Location"]).json()["status"] in ("done", "failed")), \
            worker.log_tail()
    finally:
        worker.stop()
    read = reader_client.get(response["Location"]).json()
    assert read["status"] == "done", read
    measurement = reader_client.get(f"/api/measurements/{read['measurement']}/").json()
    assert {row["part"]: row["traced_us"] for row in measurement["comparison"]["rows"]}["gemm"] == 40_000.0
    assert TraceRead.objects.get(pk=read["id"]).content == b""
    assert upload(reader_client, my_plan).status_code == 202  # the slot is free again


def test_a_trace_recorded_by_a_request_that_died_before_queueing_it_is_queued_again(
        reader_client, my_plan, queue, tmp_path, settings, monkeypatch):
    """The web killed between recording a large trace and queueing its read would hold its owner's
    slot (429) for CELERY_TASK_TIME_LIMIT: a worker's watch finds the read neither queued nor claimed
    in two scans and queues it again."""
    settings.TRACE_INLINE_MAX_BYTES = 1_000
    monkeypatch.setattr("planner.api.measurement_views.trace_read_enqueue", lambda read: read)  # never queued
    monkeypatch.setenv("SWEEP_WATCH_S", "1")
    response = upload(reader_client, my_plan)
    assert response.status_code == 202 and upload(reader_client, my_plan).status_code == 429
    worker = Worker(tmp_path / "watch.log", "watch", queues="celery")
    try:
        assert wait_for(lambda: reader_client.get(response["Location"]).json()["status"] in ("done", "failed"),
                        timeout=60), worker.log_tail()
        log = worker.log_tail(100_000)
    finally:
        worker.stop()
    read = reader_client.get(response["Location"]).json()
    assert read["status"] == "done", read
    assert f"queued lost trace reads again: [{read['id']}]" in log
    assert my_plan.measurements.count() == 1
