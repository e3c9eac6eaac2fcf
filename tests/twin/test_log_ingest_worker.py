"""A large kernel log ingested by a real Celery worker over this machine's Redis and PostgreSQL (CI
sets REDIS_URL and DATABASE_URL): the upload answers at once, the worker records the lines read and
applies the log once."""
import pytest
from rest_framework.test import APIClient

from tests.planner import test_sweeps_worker
from tests.planner.test_sweeps_worker import Worker, broker, wait_for  # noqa: F401  (broker: a fixture)
from tests.twin.test_log_ingests import BOOT_ISO, dmesg
from twin.models import LogIngest, Twin, TwinEvent

pytestmark = test_sweeps_worker.pytestmark  # needs Redis and PostgreSQL; a transactional database


@pytest.fixture
def client(django_user_model):
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_user("ingester", password="pw-ingester-1234"))
    return client


def test_a_worker_ingests_a_large_log_after_its_request(client, broker, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr("twin.api.views.ensure_local_driver", lambda: False)
    with broker.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")
    created = client.post("/api/twins/", {"plan": "ff2-pcie-2zone", "seed": 3}, format="json")
    assert created.status_code == 201, created.json()
    twin = Twin.objects.get(pk=created.json()["id"])
    log = dmesg(twin, 6_000)  # 30,000 lines: three times the inline limit
    response = client.post(f"/api/twins/{twin.pk}/ingest-log/", {"node": 1, "log": log, "boot_time": BOOT_ISO},
                           format="json")
    assert response.status_code == 202, response.json()
    assert (response.json()["status"], response.json()["lines_read"]) == ("queued", 0)  # no worker has it yet
    worker = Worker(tmp_path / "ingest.log", "ingest", queues="celery")
    try:
        finished = wait_for(lambda: client.get(response["Location"]).json()["status"] in ("done", "failed"))
        assert finished, worker.log_tail()
    finally:
        worker.stop()
    ingest = client.get(response["Location"]).json()
    assert (ingest["status"], ingest["lines_read"], ingest["result"]["faults"]) == ("done", 30_000, 6_000), ingest
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() == 6_000
    assert LogIngest.objects.get(pk=ingest["id"]).log == ""


def test_a_log_recorded_by_a_request_that_died_before_queueing_it_is_queued_again(
        client, broker, tmp_path, monkeypatch):  # noqa: F811
    """The web killed between recording a large log and queueing its task left the twin refusing
    every log (409) for CELERY_TASK_TIME_LIMIT, with nothing to send it: now a worker's watch finds
    the ingest neither queued nor claimed in two scans and queues it again, and it is applied."""
    monkeypatch.setattr("twin.api.views.ensure_local_driver", lambda: False)
    monkeypatch.setattr("twin.api.views.log_ingest_enqueue", lambda ingest: ingest)  # no task was ever queued
    monkeypatch.setenv("SWEEP_WATCH_S", "1")
    with broker.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")
    twin = Twin.objects.get(pk=client.post("/api/twins/", {"plan": "ff2-pcie-2zone", "seed": 3},
                                           format="json").json()["id"])
    url = f"/api/twins/{twin.pk}/ingest-log/"
    response = client.post(url, {"node": 1, "log": dmesg(twin, 3_000), "boot_time": BOOT_ISO}, format="json")
    assert response.status_code == 202, response.json()
    assert client.post(url, {"node": 1, "log": dmesg(twin, 1), "boot_time": BOOT_ISO}, format="json").status_code == 409
    worker = Worker(tmp_path / "watch.log", "watch", queues="celery")
    try:
        finished = wait_for(lambda: client.get(response["Location"]).json()["status"] in ("done", "failed"), timeout=60)
        assert finished, worker.log_tail()
        log = worker.log_tail(100_000)
    finally:
        worker.stop()
    ingest = client.get(response["Location"]).json()
    assert (ingest["status"], ingest["lines_read"], ingest["result"]["faults"]) == ("done", 15_000, 3_000), ingest
    assert f"queued lost kernel-log ingests again: [{ingest['id']}]" in log
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() == 3_000
