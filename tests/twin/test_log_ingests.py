"""Kernel logs too large for their request: recorded, read block by block by a task that records
the lines read, applied in one transaction with their result, one per twin at a time."""
import gzip
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from tests.twin.test_kernel_log import BOOT, _line
from tests.twin.test_twin_api import create, no_background_driver, owner_client  # noqa: F401  (fixtures)
from twin.models import LogIngest, TwinEvent
from twin.services import ingestion, log_ingests

BOOT_ISO = BOOT.isoformat()


def dmesg(twin, faults: int, filler_per_fault: int = 4) -> str:
    """A dmesg log of ``faults`` Xid faults 40 s apart (none merge), each among filler lines."""
    bus = twin.pci_bus_ids[0][5:12]
    lines = []
    for i in range(faults):
        lines += [f"[{10.0 + 40 * i:.6f}] EXT4-fs (nvme0n1p2): re-mounted."] * filler_per_fault
        lines.append(f"[{12.0 + 40 * i:.6f}] {_line([13, 31, 43, 79][i % 4], bus)}")
    return "\n".join(lines)


@pytest.fixture
def small_inline_limit(settings, monkeypatch):
    """Logs past 50 lines go to the task, read in blocks of 20 lines."""
    settings.TWIN_INGEST_INLINE_MAX_LINES = 50
    monkeypatch.setattr(ingestion, "READ_BLOCK_LINES", 20)


def post(client, twin, log, **extra):
    return client.post(f"/api/twins/{twin.pk}/ingest-log/", {"node": 1, "log": log, "boot_time": BOOT_ISO, **extra},
                       format="json")


def test_a_large_log_answers_202_and_its_task_records_each_block_then_the_inline_result(
        catalog, owner_client, small_inline_limit, eager_celery, monkeypatch):  # noqa: F811
    twin, twin_twin = create(owner_client), create(owner_client)
    log = dmesg(twin, 21)  # 105 lines: above the inline limit
    recorded = []
    record = log_ingests._record
    monkeypatch.setattr(log_ingests, "_record", lambda pk, **fields: (recorded.append(fields), record(pk, **fields)))
    response = post(owner_client, twin, log)
    assert response.status_code == 202, response.json()
    ingest = response.json()
    assert response["Location"] == f"/api/twins/{twin.pk}/ingests/{ingest['id']}/"
    # Read in blocks of 20 lines, each recorded as it was read; then the result with every line read.
    assert [fields["lines_read"] for fields in recorded[:-1]] == [20, 40, 60, 80, 100, 105]
    assert recorded[-1]["status"] == "done" and recorded[-1]["log"] == ""
    assert (ingest["status"], ingest["lines_total"], ingest["lines_read"], ingest["progress"]) == ("done", 105, 105,
                                                                                                  1.0)
    assert (ingest["result"]["lines"], ingest["result"]["faults"], ingest["result"]["skipped_lines"]) == (105, 21, 84)
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() == 21
    assert LogIngest.objects.get(pk=ingest["id"]).log == ""  # the text is not kept once applied
    # The same log sent in its request (a higher limit) gives the same report, events aside.
    inline = ingestion.twin_ingest_log(twin=twin_twin, upload=ingestion.kernel_log_upload(
        twin=twin_twin, node=1, text=log, boot_time=BOOT))
    strip = ("events",)
    assert {k: v for k, v in ingest["result"].items() if k not in strip} == {
        k: v for k, v in inline.items() if k not in strip}
    assert owner_client.get(response["Location"]).json() == ingest
    listed = owner_client.get(f"/api/twins/{twin.pk}/ingests/").json()
    assert listed["count"] == 1 and [row["id"] for row in listed["results"]] == [ingest["id"]]


def test_a_queued_ingest_holds_the_twin_until_it_ends_or_its_worker_is_lost(
        catalog, owner_client, small_inline_limit):  # noqa: F811
    twin = create(owner_client)
    queued = LogIngest.objects.create(twin=twin, node=0, lines_total=100, log="x")
    busy = post(owner_client, twin, dmesg(twin, 1))  # a small log: still refused while the large one waits
    assert busy.status_code == 409 and "being ingested" in busy.json()["detail"]
    # No progress for longer than a task may run: its worker is gone, the record says so, the twin is free.
    LogIngest.objects.filter(pk=queued.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    assert post(owner_client, twin, dmesg(twin, 1)).status_code == 201
    queued.refresh_from_db()
    assert queued.status == "failed" and "its worker stopped" in queued.error and queued.log == ""


def test_a_task_refusing_its_log_records_the_field_and_applies_nothing(
        catalog, owner_client, small_inline_limit, eager_celery):  # noqa: F811
    twin = create(owner_client)
    response = owner_client.post(f"/api/twins/{twin.pk}/ingest-log/", {"node": 1, "log": dmesg(twin, 21)},
                                 format="json")  # dmesg's seconds since boot, and no boot time
    assert response.status_code == 202
    ingest = response.json()
    assert ingest["status"] == "failed" and list(ingest["errors"]) == ["boot_time"] and ingest["result"] is None
    assert not TwinEvent.objects.filter(twin=twin, kind="ingested").exists()


def test_a_task_delivered_twice_applies_its_log_once(catalog, owner_client, small_inline_limit):  # noqa: F811
    twin = create(owner_client)
    log = dmesg(twin, 21)
    upload = ingestion.kernel_log_upload(twin=twin, node=1, text=log, boot_time=BOOT)
    ingest = log_ingests.log_ingest_create(twin=twin, upload=upload, boot_time=BOOT, year=None,
                                           timezone_name="UTC")
    LogIngest.objects.filter(pk=ingest.pk).update(status="running")  # a worker killed mid-way: redelivered
    assert log_ingests.log_ingest_run(ingest_id=ingest.pk) is True
    assert log_ingests.log_ingest_run(ingest_id=ingest.pk) is False  # finished: the next delivery does nothing
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() == 21


def test_a_large_log_is_refused_whole_when_the_queue_is_down(
        catalog, owner_client, small_inline_limit, monkeypatch):  # noqa: F811
    from kombu.exceptions import OperationalError

    from twin import tasks

    def unreachable(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    twin = create(owner_client)
    monkeypatch.setattr(tasks.ingest_kernel_log, "apply_async", unreachable)
    response = post(owner_client, twin, dmesg(twin, 21))
    assert response.status_code == 503 and "kernel log was not queued" in response.json()["detail"]
    assert not LogIngest.objects.filter(twin=twin).exists()
    assert post(owner_client, twin, dmesg(twin, 1)).status_code == 201  # nothing left holding the twin


def test_another_users_ingests_are_not_theirs_to_read(catalog, owner_client, django_user_model):  # noqa: F811
    from rest_framework.test import APIClient

    twin = create(owner_client)
    ingest = LogIngest.objects.create(twin=twin, node=0, lines_total=1, log="x")
    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user("stranger", password="pw-stranger-1234"))
    assert stranger.get(f"/api/twins/{twin.pk}/ingests/{ingest.pk}/").status_code == 404
    assert owner_client.get(f"/api/twins/{twin.pk}/ingests/{ingest.pk + 1}/").status_code == 404
    assert owner_client.get(f"/api/twins/{twin.pk}/ingests/{ingest.pk}/").json()["status"] == "queued"


def day_of_dmesg(twin, lines: int, faults: int) -> bytes:
    """A node's dmesg as a day would leave it: ``lines`` lines of about 90 bytes, ``faults`` of them
    Xid faults spread evenly (none merge)."""
    bus = twin.pci_bus_ids[0][5:12]
    every = lines // faults
    text = [f"[{0.5 * i:12.6f}] {_line([13, 31, 43, 79][(i // every) % 4], bus)}" if i % every == every - 1
            else f"[{0.5 * i:12.6f}] EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro. Quota mode: none."
            for i in range(lines)]
    return "\n".join(text).encode()


def test_a_day_of_dmesg_is_taken_as_a_plain_or_gzip_file_up_to_its_documented_size(
        catalog, owner_client, eager_celery, settings):  # noqa: F811
    """100,000 lines (9 MB, past the 2 MiB limit of other API bodies) come as a multipart file, plain
    or gzip-compressed, and are ingested in full; the limit is KERNEL_LOG_MAX_BYTES, sent and once
    decompressed, and what passes it is refused naming the field, not read."""
    twin, other = create(owner_client), create(owner_client)
    log = day_of_dmesg(twin, 100_000, 25)
    assert len(log) > 9_000_000 > settings.API_MAX_BODY_BYTES
    url = f"/api/twins/{twin.pk}/ingest-log/"
    for target, name, content in ((twin, "dmesg.txt", log), (other, "dmesg.txt.gz", gzip.compress(log))):
        upload = SimpleUploadedFile(name, content)
        response = owner_client.post(f"/api/twins/{target.pk}/ingest-log/",
                                     {"node": 1, "boot_time": BOOT_ISO, "file": upload}, format="multipart")
        assert response.status_code == 202, response.json()
        result = response.json()["result"]
        assert (result["lines"], result["faults"], result["skipped_lines"]) == (100_000, 25, 99_975), name
        assert TwinEvent.objects.filter(twin=target, kind="ingested").count() == 25

    settings.KERNEL_LOG_MAX_BYTES = 5_000_000
    bomb = SimpleUploadedFile("big.gz", gzip.compress(log))  # 9 MB of text from a small file
    refused = owner_client.post(url, {"node": 1, "file": bomb}, format="multipart")
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"file": ["more than 5,000,000 bytes of log once decompressed "
                                                 "(KERNEL_LOG_MAX_BYTES); send it in parts"]}
    broken = SimpleUploadedFile("broken.gz", gzip.compress(log)[:5000])
    refused = owner_client.post(url, {"node": 1, "file": broken}, format="multipart")
    assert refused.status_code == 400 and refused.json()["errors"]["file"][0].startswith("not a readable gzip file")
    too_large = owner_client.post(url, {"node": 1, "file": SimpleUploadedFile("dmesg.txt", log)}, format="multipart")
    assert too_large.status_code == 413
    assert too_large.json()["detail"].endswith("at most 5,000,000 bytes here (KERNEL_LOG_MAX_BYTES)")
    assert TwinEvent.objects.filter(twin=twin, kind="ingested").count() == 25
