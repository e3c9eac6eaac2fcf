"""A profiler trace as a measurement through the API: uploaded against a plan with the workload and
layers it ran, compared part by part with the engine, its calibrated shares an override of that
plan's evaluations; refused, naming the field, when it cannot be compared."""
import gzip
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from simcore.tools import trace as t
from tests.simcore.test_trace import STEP

WORKLOAD = "llama-13b-512"
# The synthetic step of tests/simcore/test_trace.py stretched to milliseconds: one LLaMa-13B layer on an A100 at
# a realistic scale (its GEMMs' 40 ms slower than the engine's, so the calibrated share is below the family's).
SLOW_STEP = [{**event, "ts": event["ts"] * 1000, "dur": event["dur"] * 1000} for event in STEP]


def trace_file(events=SLOW_STEP, name="step.json.gz"):
    document = {"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}], "traceEvents": events}
    return SimpleUploadedFile(name, gzip.compress(json.dumps(document).encode()))


def upload(client, **fields):
    return client.post("/api/measurements/", {"kind": "trace", "file": trace_file(), **fields}, format="multipart")


def test_a_trace_uploads_beside_the_engine_and_its_calibration_overrides_the_plans_shares(reader_client, my_plan):
    response = upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1, note="one layer, rank 0")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["kind"] == "trace" and body["provenance"]["workload"] == WORKLOAD
    assert body["provenance"]["span_us"] == 100_000.0 and body["provenance"]["devices"] == ["NVIDIA A100-SXM4-80GB"]
    rows = {row["part"]: row for row in body["comparison"]["rows"]}
    assert rows["gemm"]["traced_us"] == 40_000.0 and rows["communication"]["predicted_us"] is None
    assert rows["gemm"]["calibrated_us"] == pytest.approx(40_000.0, rel=1e-3)
    assert rows["gemm"]["error_pct"] == pytest.approx((rows["gemm"]["predicted_us"] - 40_000) / 40_000 * 100)
    assert set(body["fitted"]) == {"gemm_fraction", "attention_scale", "hbm_fraction"}
    assert rows["attention"]["calibrated_us"] == pytest.approx(rows["attention"]["traced_us"], rel=1e-6)
    assert body["fitted"]["gemm_fraction"]["value"] < body["fitted"]["gemm_fraction"]["family_value"]
    assert body["fitted"]["hbm_fraction"]["rows"] == 2  # casts and other compute, together
    before = reader_client.post(f"/api/plans/{my_plan.slug}/evaluate/", {}, format="json").json()
    assert before["overrides"] == {}
    marked = reader_client.patch(f"/api/measurements/{body['id']}/", {"use_as_override": True}, format="json")
    assert marked.status_code == 200
    after = reader_client.post(f"/api/plans/{my_plan.slug}/evaluate/", {}, format="json").json()
    assert after["overrides"]["gemm_fraction"]["kind"] == "trace"
    assert after["result"]["calibration"]["gemm_fraction"] == {"value": body["fitted"]["gemm_fraction"]["value"],
                                                               "source": "measured"}
    # The stored comparison stays on the family's own shares, not on the override it made.
    again = reader_client.get(f"/api/measurements/{body['id']}/").json()["comparison"]
    assert again["rows"] == body["comparison"]["rows"]
    # The same comparison as a workbook: the parts, what it calibrates, and the run.
    from openpyxl import load_workbook

    workbook = reader_client.get(f"/api/measurements/{body['id']}/workbook/")
    assert workbook.status_code == 200 and workbook["Content-Disposition"].endswith(f'measurement-{body["id"]}.xlsx"')
    book = load_workbook(io.BytesIO(workbook.content))
    compared = list(book["Compared"].iter_rows(values_only=True))
    header = compared[0]
    gemm = dict(zip(header, next(row for row in compared[1:] if row[0] == "gemm")))
    assert gemm["traced_us"] == 40_000.0 and gemm["calibrated_us"] == pytest.approx(rows["gemm"]["calibrated_us"])
    fitted = {row[0]: row[1] for row in book["Fitted"].iter_rows(min_row=2, values_only=True)}
    assert fitted == pytest.approx({name: fit["value"] for name, fit in body["fitted"].items()})
    run = {row[0]: row[1] for row in book["Run"].iter_rows(min_row=2, values_only=True)}
    assert run["workload"] == WORKLOAD and run["kind"] == "trace"


def test_a_trace_that_cannot_be_compared_is_refused_naming_the_field(reader_client, my_plan):
    cases = ((dict(plan=my_plan.slug, dense_layers=1), "workload"),
             (dict(plan=my_plan.slug, workload=WORKLOAD), "moe_layers"),
             (dict(node_type="dgx-a100", workload=WORKLOAD, dense_layers=1), "plan"),
             (dict(plan=my_plan.slug, workload="nope", dense_layers=1), "workload"))
    for fields, field in cases:
        response = upload(reader_client, **fields)
        assert response.status_code == 400 and field in response.json(), (fields, response.json())
    empty = reader_client.post("/api/measurements/", {"kind": "trace", "file": trace_file(events=[]),
                                                      "plan": my_plan.slug, "workload": WORKLOAD, "dense_layers": 1},
                               format="multipart")
    assert empty.status_code == 400 and "no GPU events" in str(empty.json()["file"])
    assert my_plan.measurements.count() == 0


def test_the_plan_page_shows_the_trace_part_by_part(client, reader_client, my_plan, user):
    body = upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1).json()
    client.force_login(user)
    page = client.get(f"/plans/{my_plan.slug}/").content.decode()
    section = page[page.index(f'id="measurement-{body["id"]}"'):]
    assert "Profiler trace" in section and f"workload <code>{WORKLOAD}</code>" in section
    assert '<tr data-part="gemm"><th scope="row">GEMMs</th><td class="num">40 ms</td>' in section  # readable units
    assert "Calibrated <code>gemm_fraction</code>" in section and t.PART_LABELS["communication"] in section
    form = page[page.index('<form id="measurement-form"'):]
    assert f'href="/api/measurements/{body["id"]}/workbook/"' in section
    assert '<option value="trace">' in form and f'<option value="{WORKLOAD}">' in form and 'name="moe_layers"' in form


def test_a_trace_of_marked_steps_keeps_the_steps_asked_for_and_spreads_over_them(reader_client, my_plan):
    """Three profiler steps, the last twice as slow: kept whole, a part's spread runs over the steps;
    steps 1 to 2 alone leave the slow one out; a range given by half, backwards or outside the trace
    is refused naming the field."""
    from tests.simcore.test_trace import stepped

    events = stepped({1: 1.0, 2: 1.0, 3: 2.0}, scale=1000)  # milliseconds, as SLOW_STEP
    upload_steps = lambda **steps: upload(reader_client, file=trace_file(events, "steps.json.gz"),  # noqa: E731
                                          plan=my_plan.slug, workload=WORKLOAD, dense_layers=1, **steps)
    whole = upload_steps().json()
    gemm = next(row for row in whole["comparison"]["rows"] if row["part"] == "gemm")
    assert whole["provenance"]["steps"] == [1, 2, 3] and (gemm["low_us"], gemm["high_us"]) == (40_000.0, 80_000.0)
    assert whole["fitted"]["gemm_fraction"]["low"] < whole["fitted"]["gemm_fraction"]["high"]
    first_two = upload_steps(first_step=1, last_step=2).json()
    gemm = next(row for row in first_two["comparison"]["rows"] if row["part"] == "gemm")
    assert first_two["provenance"]["steps"] == [1, 2] and (gemm["traced_us"], gemm["low_us"], gemm["high_us"]) == (
        40_000.0, 40_000.0, 40_000.0)
    for steps, field in (({"first_step": 1}, "first_step"), ({"first_step": 2, "last_step": 1}, "last_step"),
                         ({"first_step": 7, "last_step": 9}, "first_step")):
        refused = upload_steps(**steps)
        assert refused.status_code == 400 and field in refused.json()["errors"], refused.json()


def test_a_large_trace_is_read_by_a_task_one_of_a_users_at_a_time(reader_client, my_plan, settings, monkeypatch,
                                                                   eager_celery):
    """Issue 69, item 3: a trace of more than TRACE_INLINE_MAX_BYTES of JSON once gunzipped answers 202
    with its read (the embedded default runs the task at once), whose Location gives the measurement
    stored; while one of the owner's reads is active, their next answers 429 naming the file; a read
    its worker lost frees the slot after a task's time limit; nobody else sees the read."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from planner.models import TraceRead

    inline = upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1)
    assert inline.status_code == 201
    settings.TRACE_INLINE_MAX_BYTES = 1_000  # the synthetic step's JSON is about 2 kB
    queued = upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1, name="by a task")
    assert queued.status_code == 202, queued.json()
    assert queued["Location"] == f"/api/measurements/reads/{queued.json()['id']}/"
    done = reader_client.get(queued["Location"]).json()
    assert done["status"] == "done" and done["errors"] is None and done["finished_at"]
    measurement = reader_client.get(f"/api/measurements/{done['measurement']}/").json()
    assert measurement["name"] == "by a task"
    assert measurement["comparison"]["rows"] == inline.json()["comparison"]["rows"]
    assert TraceRead.objects.get(pk=done["id"]).content == b""  # the file is not kept once read
    assert [row["id"] for row in reader_client.get("/api/measurements/reads/").json()["results"]] == [done["id"]]
    stranger = APIClient()
    stranger.force_authenticate(get_user_model().objects.create_user("stranger", password="pw-stranger-1234"))
    assert stranger.get(queued["Location"]).status_code == 404

    monkeypatch.setattr("planner.api.measurement_views.trace_read_enqueue", lambda read: read)  # a worker holds it
    held = upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1)
    assert held.status_code == 202 and held.json()["status"] == "queued"
    refused = upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1)
    assert refused.status_code == 429 and "another trace of yours is being read" in refused.json()["errors"]["file"][0]
    assert stranger.post("/api/measurements/", {"kind": "trace", "file": trace_file(), "plan": "ff2-pcie-2zone",
                                                "workload": WORKLOAD, "dense_layers": 1},
                         format="multipart").status_code == 403  # (not the stranger's plan; no slot taken)
    TraceRead.objects.filter(pk=held.json()["id"]).update(
        updated_at=TraceRead.objects.get(pk=held.json()["id"]).updated_at
        - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 1))
    assert upload(reader_client, plan=my_plan.slug, workload=WORKLOAD, dense_layers=1).status_code == 202
    lost = reader_client.get(held["Location"]).json()
    assert lost["status"] == "failed" and "its worker stopped" in lost["error"]
    assert my_plan.measurements.count() == 2


def test_a_large_trace_refused_by_its_task_says_why_and_stores_nothing(reader_client, my_plan, settings,
                                                                       eager_celery):
    """A trace read by a task that is no trace, or holds more than TRACE_MAX_JSON_BYTES of JSON (a
    small gzip may hold gigabytes of identical events), ends failed with the field's reasons, as a 400
    would give them, and stores no measurement."""
    settings.TRACE_INLINE_MAX_BYTES = 1_000
    empty = reader_client.post("/api/measurements/", {"kind": "trace", "file": trace_file(events=[{"ph": "X"}] * 200),
                                                      "plan": my_plan.slug, "workload": WORKLOAD, "dense_layers": 1},
                               format="multipart")
    assert empty.status_code == 202
    failed = reader_client.get(empty["Location"]).json()
    assert failed["status"] == "failed" and "no GPU events" in failed["errors"]["file"][0]
    settings.TRACE_MAX_JSON_BYTES = 100_000
    bomb = trace_file(events=SLOW_STEP * 200, name="bomb.json.gz")  # about 400 kB of JSON, 10 kB of gzip
    response = reader_client.post("/api/measurements/", {"kind": "trace", "file": bomb, "plan": my_plan.slug,
                                                         "workload": WORKLOAD, "dense_layers": 1}, format="multipart")
    assert response.status_code == 202
    refused = reader_client.get(response["Location"]).json()
    assert refused["status"] == "failed" and refused["errors"] == {
        "file": ["the trace is over 100,000 bytes of JSON"]}
    assert my_plan.measurements.count() == 0
