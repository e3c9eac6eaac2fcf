"""A procurement script's client generated from the served schema with openapi-python-client
(a pinned test dependency) imports whole, and lists a page, creates, updates, evaluates with
options, uploads a file, downloads a NetBox file and deletes through it, against the server as
deployed; its error answers parse as the schema's problem documents, naming the field."""
import importlib
import io
import json
import pkgutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.stack import Stack

USERNAME, PASSWORD = "scripted", "pw-scripted-client-1234"
GENERATOR = Path(sys.executable).parent / "openapi-python-client"
# As docs/api.md configures the generator: every download read as bytes (it reads text/* as text and
# skips media types it does not know); no post hooks (its formatting is not what is tested).
CONFIG = """post_hooks: []
content_type_overrides:
  text/csv: application/octet-stream
  application/vnd.openxmlformats-officedocument.spreadsheetml.sheet: application/octet-stream
  application/vnd.apache.parquet: application/octet-stream
  application/yaml: application/octet-stream
  application/zip: application/octet-stream
"""
GEMM_CSV = b"m,n,k,dtype,tflops\n8192,8192,8192,bf16,250\n16384,16384,16384,bf16,262\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("client"), name="planner_client", users={USERNAME: PASSWORD})
    try:
        stack.start("web")
        yield stack
    finally:
        stack.stop()


def _get(stack, path: str, token: str | None = None, body: dict | None = None) -> bytes:
    request = urllib.request.Request(stack.url + path, data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Token {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


@pytest.fixture(scope="module")
def generated(server, tmp_path_factory):
    """The package generated from the server's /api/schema/ (no post hooks: its formatting is not
    what is tested), imported under the name ``planner_client``."""
    where = tmp_path_factory.mktemp("generated")
    token = json.loads(_get(server, "/api/auth/token/", body={"username": USERNAME, "password": PASSWORD}))["token"]
    (where / "schema.yaml").write_bytes(_get(server, "/api/schema/", token))
    (where / "config.yaml").write_text(CONFIG)
    done = subprocess.run([str(GENERATOR), "generate", "--path", "schema.yaml", "--meta", "none", "--output-path",
                           "planner_client", "--config", "config.yaml"], cwd=where, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module("planner_client")
    finally:
        sys.path.remove(str(where))
        for name in [n for n in sys.modules if n == "planner_client" or n.startswith("planner_client.")]:
            del sys.modules[name]


def _module(generated, name: str):
    return importlib.import_module(f"planner_client.{name}")


def test_every_operation_module_imports(generated):
    names = [m.name for m in pkgutil.walk_packages(generated.__path__, "planner_client.")]
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - each failure is reported with its module
            failed[name] = repr(error)
    assert failed == {}
    assert sum(".api." in n for n in names) >= 100


def _login(server, generated):
    client = generated.Client(base_url=server.url, raise_on_unexpected_status=True)
    tokens = _module(generated, "api.tokens.auth_token_create")
    body = _module(generated, "models").ObtainTokenRequest(username=USERNAME, password=PASSWORD)
    issued = tokens.sync(client=client, body=body)
    return generated.AuthenticatedClient(base_url=server.url, token=issued.token,  # as Bearer, its default
                                         raise_on_unexpected_status=True)


def test_a_script_creates_updates_evaluates_and_deletes_through_the_generated_client(server, generated):
    models = _module(generated, "models")
    client = _login(server, generated)
    plans, workloads = "api.plans.plans_", "api.workloads.workloads_"

    page = _module(generated, plans + "list").sync(client=client, page_size=2)
    assert isinstance(page, models.PaginatedClusterPlanList) and len(page.results) == 2 and "page=2" in page.next_

    workload = models.WorkloadRequest(slug="scripted-13b", name="13B as a script wrote it", global_batch=4096,
                                      layers=40, hidden=5120, heads=40, ffn_hidden=13824, vocab=32000,
                                      seq_len=2048, micro_batch=1, gpus=512, tp=2, pp=4, zero_stage=1)
    created = _module(generated, workloads + "create").sync_detailed(client=client, body=workload)
    assert created.status_code == 201 and created.parsed.owner == USERNAME
    workload.global_batch = 2048
    updated = _module(generated, workloads + "update").sync(slug="scripted-13b", client=client, body=workload)
    assert updated.global_batch == 2048

    clone = _module(generated, plans + "clone_create").sync_detailed(
        slug="ff2-pcie-2zone", client=client, body=models.CloneRequest(slug="scripted-ff"))
    assert clone.status_code == 201 and clone.parsed.slug == "scripted-ff"
    patched = _module(generated, plans + "partial_update").sync(
        slug="scripted-ff", client=client, body=models.PatchedClusterPlanRequest(node_count=400))
    assert patched.node_count == 400

    evaluate = _module(generated, plans + "evaluate_create")
    options = models.EvaluateRequestOptions.from_dict({"message_bytes": 195035136})
    evaluation = evaluate.sync(slug="scripted-ff", client=client,
                               body=models.EvaluateRequest(workload="scripted-13b", options=options))
    result = evaluation.result.to_dict()
    assert result["cluster"]["nodes"] == 400 and result["training"]["step_time_s"] > 0
    bad = evaluate.sync_detailed(slug="scripted-ff", client=client, body=models.EvaluateRequest(
        workload="scripted-13b", options=models.EvaluateRequestOptions.from_dict({"message_bytes": -1})))
    assert bad.status_code == 400 and isinstance(bad.parsed, models.Problem)
    assert "options.message_bytes" in bad.parsed.errors.to_dict()

    upload = models.MeasurementUploadRequest(kind=models.MeasurementKindEnum.GEMM, plan="scripted-ff",
                                             file=generated.types.File(payload=io.BytesIO(GEMM_CSV),
                                                                       file_name="gemm.csv"))
    measured = _module(generated, "api.measurements.measurements_create").sync_detailed(client=client, body=upload)
    assert measured.status_code == 201 and measured.parsed.plan == "scripted-ff"
    assert _module(generated, "api.measurements.measurements_destroy").sync_detailed(
        id=measured.parsed.id, client=client).status_code == 204

    sites = _module(generated, plans + "netbox_retrieve").sync_detailed(
        "scripted-ff", client=client, file=_module(generated, "models").PlansNetboxRetrieveFile.SITES)
    assert sites.status_code == 200
    assert sites.parsed.payload.read().decode().splitlines() == ["name,slug,status", "scripted-ff,scripted-ff,planned"]
    for module, slug in ((plans + "destroy", "scripted-ff"), (workloads + "destroy", "scripted-13b")):
        assert _module(generated, module).sync_detailed(slug=slug, client=client).status_code == 204
    gone = _module(generated, plans + "retrieve").sync_detailed(slug="scripted-ff", client=client)
    assert gone.status_code == 404 and (gone.parsed.status, gone.parsed.title) == (404, "Not Found")


# A build of each kind a buyer compares: PCIe (Fire-Flyer 2), DGX, HGX B200, GB200 NVL72 and AMD.
PRESETS = ["ff2-pcie-2zone", "dgx-h200-1024", "hgx-b200-1152", "gb200-nvl72-1152", "mi355x-1152"]
# The Fire-Flyer parts' rack heights, which the paper does not give (the NetBox files need them).
HEIGHTS = ["ff-pcie-a100=4", "ff-3fs-storage=2"]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_procurement_script_runs_the_whole_workflow_through_the_generated_client(server, generated, preset):
    """Clone, evaluate with a workload, preview, a sweep and its exports in every format, the bill as
    JSON, CSV and XLSX, the NetBox files with the rack heights given, a quote, a run, deletes: every
    answer parsed by the generated client as the schema declares it (no KeyError on a field the schema
    marks required, no JSON parser given a file)."""
    models = _module(generated, "models")
    client = _login(server, generated)
    plans, mine = "api.plans.plans_", f"scripted-{preset}"
    clone = _module(generated, plans + "clone_create").sync_detailed(
        slug=preset, client=client, body=models.CloneRequest(slug=mine))
    assert clone.status_code == 201, clone.content[:300]
    evaluation = _module(generated, plans + "evaluate_create").sync(
        slug=mine, client=client, body=models.EvaluateRequest(workload="llama-13b-512"))
    assert evaluation.result.to_dict()["cluster"]["gpus"] > 0
    preview = _module(generated, plans + "preview_create").sync(
        client=client, body=models.PlanPreviewRequest.from_dict({**_preview_fields(models, clone.parsed),
                                                                 "workload": "llama-13b-512"}))
    assert preview.result.to_dict()["cluster"]["gpus"] == evaluation.result.to_dict()["cluster"]["gpus"]

    bom = _module(generated, plans + "bom_retrieve").sync(slug=mine, client=client)
    assert bom.lines and bom.total > 0 and bom.currency in ("USD", "REL")  # (Fire-Flyer's book: relative prices)
    bom_file = _module(generated, plans + "bom_file_retrieve")
    formats = _module(generated, "models").PlansBomFileRetrieveFormat
    csv = bom_file.sync(slug=mine, client=client, format_=formats.CSV).payload.read()
    assert csv.startswith(b"part") or b"," in csv.splitlines()[0]
    xlsx = bom_file.sync(slug=mine, client=client, format_=formats.XLSX).payload.read()
    assert xlsx[:2] == b"PK"  # a ZIP: the workbook

    netbox = _module(generated, plans + "netbox_retrieve")
    archive = netbox.sync_detailed(mine, client=client, u_height=HEIGHTS)
    assert archive.status_code == 200 and archive.content[:2] == b"PK", archive.content[:300]
    devices = netbox.sync_detailed(mine, client=client, file=models.PlansNetboxRetrieveFile.DEVICES, u_height=HEIGHTS)
    assert devices.status_code == 200 and len(devices.content.splitlines()) > 2

    quote = models.PriceItemRequest(part_kind=models.PartKindEnum.COMPUTE_NODE, part_slug=clone.parsed.node_type,
                                    unit_price="123456.00", basis="our vendor's quote",
                                    confidence=models.ConfidenceEnum.MEASURED)
    quoted = _module(generated, plans + "quotes_create").sync_detailed(mine, client=client, body=quote)
    assert quoted.status_code == 200, quoted.content[:300]

    axes = models.SweepCreateRequestAxes.from_dict({"cluster.node_count": [clone.parsed.node_count // 2,
                                                                           clone.parsed.node_count]})
    sweep = _module(generated, "api.sweeps.sweeps_create").sync(
        client=client, body=models.SweepCreateRequest(plan=mine, axes=axes, workload="llama-13b-512"))
    sweep = _module(generated, "api.sweeps.sweeps_retrieve").sync(id=sweep.id, client=client)
    assert sweep.status == models.SweepStatusEnum.DONE and sweep.total_points == 2
    export = _module(generated, "api.sweeps.sweeps_export_retrieve")
    for kind, start in (("CSV", b"cluster"), ("PARQUET", b"PAR1"), ("NPZ", b"PK")):
        payload = export.sync(id=sweep.id, client=client, file=models.SweepsExportRetrieveFile[kind]).payload.read()
        assert payload.startswith(start) or (kind == "CSV" and b"," in payload.splitlines()[0]), (kind, payload[:80])

    run = _module(generated, "api.runs.runs_create").sync_detailed(client=client, body=models.MeasuredRunCreateRequest(
        plan=mine, workload="llama-13b-512", measured_s=12.5, source="our cluster, job 42"))
    assert run.status_code == 201, run.content[:300]
    assert _module(generated, "api.runs.runs_destroy").sync_detailed(id=run.parsed.id, client=client).status_code == 204
    assert _module(generated, "api.sweeps.sweeps_destroy").sync_detailed(id=sweep.id, client=client).status_code == 204
    assert _module(generated, plans + "destroy").sync_detailed(slug=mine, client=client).status_code == 204


def _preview_fields(models, plan) -> dict:
    """The plan's fields a preview takes, as the plan came back."""
    taken = {field.name for field in models.PlanPreviewRequest.__attrs_attrs__}
    return {key: value for key, value in plan.to_dict().items() if key in taken}
