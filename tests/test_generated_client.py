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
    (where / "config.yaml").write_text("post_hooks: []\n")
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
    assert sites.status_code == 200 and sites.parsed.splitlines() == ["name,slug,status",
                                                                    "scripted-ff,scripted-ff,planned"]
    for module, slug in ((plans + "destroy", "scripted-ff"), (workloads + "destroy", "scripted-13b")):
        assert _module(generated, module).sync_detailed(slug=slug, client=client).status_code == 204
    gone = _module(generated, plans + "retrieve").sync_detailed(slug="scripted-ff", client=client)
    assert gone.status_code == 404 and (gone.parsed.status, gone.parsed.title) == (404, "Not Found")
