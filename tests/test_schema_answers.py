"""Real answers against the schema (issue 72): every operation of the API, called with real arguments,
answers as expected with a body the served schema describes (Schemathesis's response checks): each
field it marks required present, each type, null and enum as declared, each download under its
declared media type. The operations that read or run a plan are called on every preset plan; the
others (catalogue, workloads, tokens, sweeps, runs, measurements, twins) once each. A client generated
from the schema (tests/test_generated_client.py) relies on exactly this; the fuzz
(tests/test_api_fuzz.py) sends generated input and mostly sees its refusals."""
import pytest
from django.core.cache import cache
from schemathesis.checks import not_a_server_error, response_schema_conformance

from planner.services.catalog import DATA_DIR
from tests.test_api_fuzz import OPERATIONS, fuzz_token  # noqa: F401  (fuzz_token: a fixture)

PRESETS = sorted(path.stem for path in (DATA_DIR / "plans").glob("*.yaml"))
# The catalogue lacks a rack height for the Fire-Flyer parts (the paper gives none): a NetBox file
# of those builds needs them given.
HEIGHTS = {"u_height": ["ff-pcie-a100=4", "ff-3fs-storage=2", "deepseek-h800=8"]}
CHECKS = [not_a_server_error, response_schema_conformance]


def _call(token: str, label: str, *, expect: int = 200, **parts):
    operation = OPERATIONS[label]
    case = operation.Case(media_type="application/json" if "body" in parts else None, **parts)
    response = case.call(headers={"Authorization": f"Token {token}"})
    assert response.status_code == expect, (label, parts, response.status_code, response.text[:500])
    case.validate_response(response, checks=CHECKS)
    return response


@pytest.mark.parametrize("slug", PRESETS)
def test_every_plan_operation_answers_as_the_schema_says_on_every_preset(slug, fuzz_token, settings):  # noqa: F811
    settings.API_WORK_BUDGET_S = 5.0  # (the largest presets' NetBox files take more than the default second)
    token, path = fuzz_token, {"slug": slug}
    workload = "llama-13b-512"
    plan = _call(token, "GET /api/plans/{slug}/", path_parameters=path).json()
    _call(token, "POST /api/plans/{slug}/evaluate/", path_parameters=path, body={})
    _call(token, "POST /api/plans/{slug}/evaluate/", path_parameters=path, body={"workload": workload})
    preview = {key: value for key, value in plan.items() if key not in (
        "slug", "owner", "created_at", "updated_at", "visibility", "shared_with", "etag")}
    _call(token, "POST /api/plans/preview/", body={**preview, "workload": workload})
    # Each operation once a preset, its formats spread over them (a comparison evaluates both plans).
    one, other = PRESETS.index(slug) % 2, "dgx-a100-3layer" if slug == "ff2-pcie-2zone" else "ff2-pcie-2zone"
    for query in ({}, {"format": ("csv", "xlsx")[one]}):
        _call(token, "GET /api/plans/{slug}/bom/", path_parameters=path, query=query)
    _call(token, "GET /api/plans/{slug}/bom/file/", path_parameters=path, query={"format": ("xlsx", "csv")[one]})
    compared = {"ids": f"{slug},{other}", "workload": workload}
    _call(token, "GET /api/plans/compare/", query=compared)
    _call(token, "GET /api/plans/compare/file/", query={**compared, "format": ("csv", "xlsx")[one]})
    for query in ({"file": "sites"}, {"file": "devices", **HEIGHTS}):
        _call(token, "GET /api/plans/{slug}/netbox/", path_parameters=path, query=query)


CATALOG = ["accelerators", "compute-node-types", "cpus", "link-parts", "nics", "price-books", "storage-node-types",
           "switches"]
READ_ONLY = ("owner", "created_at", "updated_at", "etag", "url", "id", "items", "used_by", "is_preset")


@pytest.fixture
def staff_token(fuzz_token, django_user_model):  # noqa: F811
    """A staff account's token (the catalogue's writes need its permissions)."""
    from planner.services.accounts import token_issue

    return token_issue(django_user_model.objects.create_user("schema-staff", password="pw-schema-staff-1234",
                                                             is_staff=True, is_superuser=True))


def test_every_catalogue_operation_answers_as_the_schema_says(staff_token):
    for table in CATALOG:
        base = f"/api/catalog/{table}/"
        listed = _call(staff_token, f"GET {base}", query={"page_size": 2}).json()["results"]
        slug = listed[0]["slug"]
        entry = _call(staff_token, f"GET {base}{{slug}}/", path_parameters={"slug": slug}).json()
        body = {key: value for key, value in entry.items() if key not in READ_ONLY}
        body.update(slug=f"schema-{slug}"[:100], name=f"{entry.get('name', slug)} (a copy)")
        _call(staff_token, f"POST {base}", body=body, expect=201)
        copy = {"slug": body["slug"]}
        _call(staff_token, f"PUT {base}{{slug}}/", path_parameters=copy, body=body)
        _call(staff_token, f"PATCH {base}{{slug}}/", path_parameters=copy, body={"name": "renamed"})
        _call(staff_token, f"DELETE {base}{{slug}}/", path_parameters=copy, expect=204)
    _call(staff_token, "GET /api/catalog/matching-parts/", query={"node_type": "dgx-h200", "switch": "qm9700"})
    _call(staff_token, "POST /api/catalog/price-books/{slug}/copy/", path_parameters={"slug": "usd-2026"},
          body={"slug": "schema-quotes"}, expect=201)
    _call(staff_token, "POST /api/catalog/price-books/{slug}/items/", path_parameters={"slug": "schema-quotes"}, body={
        "part_kind": "compute-node", "part_slug": "dgx-h200", "unit_price": "300000.00", "basis": "a vendor's quote",
        "confidence": "measured"})
    _call(staff_token, "POST /api/auth/token/", body={"username": "schema-staff", "password": "pw-schema-staff-1234"})


def test_every_plan_workload_token_and_engine_operation_answers_as_the_schema_says(fuzz_token):  # noqa: F811
    token = fuzz_token
    for kind in ("plans", "workloads"):
        _call(token, f"GET /api/{kind}/", query={"page_size": 2})
    workload = _call(token, "GET /api/workloads/{slug}/", path_parameters={"slug": "llama-13b-512"}).json()
    body = {key: value for key, value in workload.items() if key not in READ_ONLY + ("visibility", "shared_with")}
    body.update(slug="schema-13b", name="13B from the schema test")
    _call(token, "POST /api/workloads/", body=body, expect=201)
    mine = {"slug": "schema-13b"}
    _call(token, "PUT /api/workloads/{slug}/", path_parameters=mine, body={**body, "global_batch": 2048})
    _call(token, "PATCH /api/workloads/{slug}/", path_parameters=mine, body={"global_batch": 1024})
    _call(token, "POST /api/workloads/preview/", body={**body, "slug": "preview-13b", "plan": "dgx-h200-1024"})
    plan = _call(token, "GET /api/plans/{slug}/", path_parameters={"slug": "dgx-h200-1024"}).json()
    fields = {key: value for key, value in plan.items() if key not in READ_ONLY + ("visibility", "shared_with")}
    _call(token, "POST /api/plans/", body={**fields, "slug": "schema-dgx", "name": "DGX from the schema test"},
          expect=201)
    _call(token, "POST /api/plans/{slug}/clone/", path_parameters={"slug": "ff2-pcie-2zone"},
          body={"slug": "schema-ff"}, expect=201)
    mine_plan = {"slug": "schema-dgx"}
    _call(token, "PUT /api/plans/{slug}/", path_parameters=mine_plan,
          body={**fields, "slug": "schema-dgx", "name": "renamed", "node_count": 64, "gpu_count": 512})
    _call(token, "PATCH /api/plans/{slug}/", path_parameters=mine_plan, body={"node_count": 96})
    _call(token, "POST /api/plans/{slug}/quotes/", path_parameters=mine_plan, body={
        "part_kind": "compute-node", "part_slug": plan["node_type"], "unit_price": "300000.00",
        "basis": "our vendor's quote", "confidence": "measured"})
    _call(token, "POST /api/evaluate/", body={"cluster": {"node_count": 100, "node": {
        "gpus": 8, "accelerator": {"family": "ampere", "peak_fp16_tflops": 312, "tdp_w": 400},
        "compute_nics": 1, "compute_nic_gbit_s": 200}, "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}})
    _call(token, "GET /api/outputs/")
    _call(token, "GET /api/reliability-profiles/")
    created = _call(token, "POST /api/tokens/", body={"name": "a script's", "read_only": True}, expect=201).json()
    _call(token, "GET /api/tokens/")
    _call(token, "DELETE /api/tokens/{id}/", path_parameters={"id": created["id"]}, expect=204)
    for kind, slug in (("plans", "schema-dgx"), ("plans", "schema-ff"), ("workloads", "schema-13b")):
        _call(token, f"DELETE /api/{kind}/{{slug}}/", path_parameters={"slug": slug}, expect=204)


@pytest.fixture
def live_token(fuzz_token, eager_celery, monkeypatch):  # noqa: F811
    """The fuzz's token with sweeps and trace reads run (in this process, as the embedded default runs them)."""
    monkeypatch.setattr("planner.services.submission.sweep_enqueue", __import__("planner.tasks").tasks.sweep_enqueue)
    return fuzz_token


def _multipart(token: str, label: str, fields: dict, file: tuple[str, bytes], expect: int, **parts):
    operation = OPERATIONS[label]
    case = operation.Case(media_type="multipart/form-data", body={**fields, "file": file[1]},
                          multipart_content_types={"file": "application/octet-stream"}, **parts)
    response = case.call(headers={"Authorization": f"Token {token}"})
    assert response.status_code == expect, (label, response.status_code, response.text[:500])
    case.validate_response(response, checks=CHECKS)
    return response


def test_every_sweep_run_measurement_and_twin_operation_answers_as_the_schema_says(live_token, settings):
    import gzip
    import json

    from tests.planner.test_trace_measurements import SLOW_STEP

    token = live_token
    _call(token, "POST /api/plans/{slug}/clone/", path_parameters={"slug": "dgx-a100-3layer"},
          body={"slug": "schema-a100"}, expect=201)
    _call(token, "POST /api/plans/{slug}/clone/", path_parameters={"slug": "ff2-pcie-2zone"},
          body={"slug": "schema-ff"}, expect=201)
    sweep = _call(token, "POST /api/sweeps/", expect=201, body={
        "plan": "schema-a100", "workload": "llama-13b-512", "axes": {"cluster.node_count": [32, 64]}}).json()
    one = {"id": sweep["id"]}
    _call(token, "GET /api/sweeps/")
    _call(token, "GET /api/sweeps/{id}/", path_parameters=one)
    _call(token, "GET /api/sweeps/{id}/results/", path_parameters=one)
    _call(token, "GET /api/sweeps/{id}/sample/", path_parameters=one, query={"points": 2})
    for kind in ("csv", "parquet", "npz"):
        _call(token, "GET /api/sweeps/{id}/export/", path_parameters=one, query={"file": kind})
        cache.clear()  # (the test transport never closes a streamed answer, which frees the user's download slot)
    _call(token, "POST /api/sweeps/{id}/cancel/", path_parameters=one)  # (finished: it stays as it is)
    _call(token, "POST /api/sweeps/site/", expect=201, body={
        "name": "a small site", "price_book": "usd-2026", "facility": {"power_mw": 5, "floor_racks": 100},
        "goal": {"workload": "llama-13b-512", "objective": "by_date", "deadline": "2027-12-01"}})
    _call(token, "DELETE /api/sweeps/{id}/", path_parameters=one, expect=204)

    run = _call(token, "POST /api/runs/", expect=201, body={"plan": "schema-a100", "workload": "llama-13b-512",
                                                             "measured_s": 12.5, "source": "job 42"}).json()
    _call(token, "GET /api/runs/")
    _call(token, "GET /api/runs/{id}/", path_parameters={"id": run["id"]})
    _call(token, "PATCH /api/runs/{id}/", path_parameters={"id": run["id"]}, body={"name": "renamed"})
    _call(token, "DELETE /api/runs/{id}/", path_parameters={"id": run["id"]}, expect=204)

    trace = gzip.compress(json.dumps({"traceEvents": SLOW_STEP}).encode())
    fields = {"kind": "trace", "plan": "schema-a100", "workload": "llama-13b-512", "dense_layers": 1}
    measured = _multipart(token, "POST /api/measurements/", fields, ("step.json.gz", trace), 201).json()
    mine = {"id": measured["id"]}
    _call(token, "GET /api/measurements/")
    _call(token, "GET /api/measurements/{id}/", path_parameters=mine)
    _call(token, "PATCH /api/measurements/{id}/", path_parameters=mine, body={"use_as_override": True})
    _call(token, "GET /api/measurements/{id}/workbook/", path_parameters=mine)
    _call(token, "POST /api/measurements/{id}/carry/", path_parameters=mine, body={"plan": "schema-ff"}, expect=201)
    _call(token, "DELETE /api/measurements/{id}/carry/", path_parameters=mine, query={"plan": "schema-ff"},
          expect=204)
    settings.TRACE_INLINE_MAX_BYTES = 1_000
    read = _multipart(token, "POST /api/measurements/", fields, ("step.json.gz", trace), 202).json()
    _call(token, "GET /api/measurements/reads/")
    _call(token, "GET /api/measurements/reads/{read_id}/", path_parameters={"read_id": read["id"]})
    _call(token, "DELETE /api/measurements/{id}/", path_parameters=mine, expect=204)


def test_every_twin_operation_answers_as_the_schema_says(live_token, settings):
    from tests.twin.test_log_ingests import BOOT_ISO, dmesg
    from twin.models import Twin

    token = live_token
    twin = _call(token, "POST /api/twins/", body={"plan": "ff2-pcie-2zone", "seed": 3}, expect=201).json()
    one = {"id": twin["id"]}
    _call(token, "GET /api/twins/")
    for action in ("", "state/", "events/", "metrics/", "ingests/"):
        _call(token, f"GET /api/twins/{{id}}/{action}", path_parameters=one)
    _call(token, "GET /api/twins/{id}/events/export/", path_parameters=one)
    cache.clear()  # (the test transport never closes a streamed answer, which frees the user's download slot)
    for action, body in (("pause/", None), ("resume/", None), ("start/", None), ("speed/", {"speed": 3600})):
        _call(token, f"POST /api/twins/{{id}}/{action}", path_parameters=one, **({"body": body} if body else {}))
    _call(token, "POST /api/twins/{id}/inject/", path_parameters=one, body={"category": "xid-79", "gpu": 17},
          expect=201)
    _call(token, "POST /api/twins/{id}/drain/", path_parameters=one, body={"node": 5, "drained": True}, expect=201)
    addresses = Twin.objects.get(pk=twin["id"]).pci_bus_ids
    _call(token, "POST /api/twins/{id}/pci-bus-ids/", path_parameters=one, body={"pci_bus_ids": addresses})
    line = dmesg(Twin.objects.get(pk=twin["id"]), 1).splitlines()[-1]
    _call(token, "POST /api/twins/{id}/ingest/", path_parameters=one, body={"node": 1, "line": line}, expect=201)
    log = dmesg(Twin.objects.get(pk=twin["id"]), 3)
    sent = {"log": log, "boot_time": BOOT_ISO}
    _call(token, "POST /api/twins/{id}/ingest-log/", path_parameters=one, body={"node": 4, **sent}, expect=201)
    settings.TWIN_INGEST_INLINE_MAX_LINES = 5
    ingest = _call(token, "POST /api/twins/{id}/ingest-log/", path_parameters=one, body={"node": 6, **sent},
                   expect=202).json()
    _call(token, "GET /api/twins/{id}/ingests/{ingest_id}/", path_parameters={**one, "ingest_id": ingest["id"]})
    _call(token, "DELETE /api/twins/{id}/", path_parameters=one, expect=204)
