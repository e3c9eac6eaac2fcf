"""Every operation's bodies are described, and real answers match their descriptions: no request or
response body in /api/schema/ is a bare object, and the engine's result, evaluations, comparisons,
bills, profiles, sweep rows, twin state and measurements validate against the served schema."""
import json

import jsonschema
import pytest
import yaml

from planner.models import ClusterPlan
from planner.services.measurements import measurement_upload
from twin.services.creation import twin_create

BODY_METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture
def served(reader_client):
    return yaml.safe_load(reader_client.get("/api/schema/").content)


def _resolve(schema: dict, served: dict) -> dict:
    while "$ref" in schema:
        schema = served["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _bare(schema: dict, served: dict) -> bool:
    schema = _resolve(schema, served)
    return schema.get("type") == "object" and not any(k in schema for k in ("properties", "additionalProperties",
                                                                            "oneOf", "anyOf", "allOf"))


def test_the_document_speaks_openapi_3_1_and_names_its_schemas_once(served):
    """No 3.0 ``nullable`` in a 3.1 document (null among the types instead), no ``oneOf`` that null or
    anything satisfies twice (a nullable field of any JSON), no schema named twice "Request", integer
    ids, and each request body declared one way, as JSON but where a file is the point (a client
    generated from a body declared three ways sent multipart; openapi-python-client 0.29.1 generates
    code that cannot import for an operation declaring two)."""
    text = json.dumps(served)
    assert served["openapi"].startswith("3.1") and '"nullable"' not in text
    assert served["components"]["schemas"]["PaginatedCPUList"]["properties"]["next"]["type"] == ["string", "null"]
    assert '"oneOf": [{}' not in text
    assert not [name for name in served["components"]["schemas"] if name.endswith("RequestRequest")]
    assert {"EvaluateRequest", "CloneRequest"} <= set(served["components"]["schemas"])
    forms = {path: sorted(operation["requestBody"]["content"]) for path, methods in served["paths"].items()
             for operation in methods.values() if "requestBody" in operation
             and set(operation["requestBody"]["content"]) != {"application/json"}}
    assert forms == {"/api/twins/{id}/ingest-log/": ["multipart/form-data"],
                     "/api/measurements/": ["multipart/form-data"]}  # JSON but where a file is the point
    ingest = served["paths"]["/api/twins/{id}/ingests/{ingest_id}/"]["get"]["parameters"]
    assert {p["name"]: p["schema"]["type"] for p in ingest} == {"id": "integer", "ingest_id": "integer"}


def test_every_list_has_one_shape_and_honours_page_size(served, reader_client, catalog):
    """A list answers {count, next, previous, results} and takes page and page_size (no bare arrays,
    no shape of its own; a sweep's sample is a spread of ``points`` over the grid, not a page); each
    list that needs no object in its path gives one row for page_size=1 and refuses 501 naming
    page_size."""
    lists = []
    for path, methods in served["paths"].items():
        ok = methods.get("get", {}).get("responses", {}).get("200", {}).get("content", {}).get("application/json")
        if not ok:
            continue
        schema = _resolve(ok["schema"], served)
        assert schema.get("type") != "array", path
        if "results" in schema.get("properties", {}) and not path.endswith("/sample/"):  # a chart's spread
            assert {"count", "next", "previous", "results"} <= set(schema["properties"]), path
            assert {"page", "page_size"} <= {p["name"] for p in methods["get"]["parameters"]}, path
            lists.append(path)
    assert len(lists) == 20  # (the 20th: your trace reads, /api/measurements/reads/)
    reader_client.post("/api/tokens/", {"name": "one"}, format="json")
    reader_client.post("/api/tokens/", {"name": "two"}, format="json")
    paged = []
    for path in (p for p in lists if "{" not in p):
        page = reader_client.get(path, {"page_size": 1}).json()
        assert len(page["results"]) == min(1, page["count"]), path
        assert (page["next"] is None) == (page["count"] <= 1), path
        paged += [path] if page["count"] > 1 else []
        assert reader_client.get(path, {"page_size": 501}).json()["errors"] == {
            "page_size": ["a whole number from 1 to 500"]}, path
    assert {"/api/tokens/", "/api/outputs/", "/api/plans/", "/api/catalog/accelerators/"} <= set(paged)


def test_every_error_answer_is_a_problem_document(served):
    untyped = [f"{method} {path} {code}" for path, methods in served["paths"].items()
               for method, operation in methods.items() if method in BODY_METHODS
               for code, response in operation["responses"].items() if code[0] in "45"
               and response.get("content", {}).get("application/problem+json", {}).get("schema") !=
               {"$ref": "#/components/schemas/Problem"}]
    assert untyped == []


def test_no_operation_has_a_bare_object_body(served):
    bare = []
    for path, operations in served["paths"].items():
        for method, operation in operations.items():
            if method not in BODY_METHODS:
                continue
            bodies = [("request", c) for c in operation.get("requestBody", {}).get("content", {}).values()]
            bodies += [(code, c) for code, r in operation["responses"].items() for c in r.get("content", {}).values()]
            bare += [f"{method} {path} {where}" for where, content in bodies if _bare(content["schema"], served)]
    assert bare == []


def _check(served, path, method, code, body):
    schema = served["paths"][path][method]["responses"][str(code)]["content"]["application/json"]["schema"]
    jsonschema.Draft202012Validator({**schema, "components": served["components"]}).validate(body)


def test_real_answers_match_their_descriptions(served, reader_client, catalog, user, eager_celery):
    evaluation = reader_client.post("/api/plans/ff2-pcie-2zone/evaluate/", {"workload": "llama-13b-512"},
                                    format="json")
    _check(served, "/api/plans/{slug}/evaluate/", "post", 200, evaluation.json())
    assert evaluation.json()["result"]["training"]["step_time_s"] > 0
    with pytest.raises(jsonschema.ValidationError, match="engine_version"):  # the descriptions do constrain
        _check(served, "/api/plans/{slug}/evaluate/", "post", 200,
               {**evaluation.json(), "result": {**evaluation.json()["result"], "engine_version": 3}})
    with pytest.raises(jsonschema.ValidationError, match="overrides"):
        _check(served, "/api/plans/{slug}/evaluate/", "post", 200,
               {k: v for k, v in evaluation.json().items() if k != "overrides"})
    scenario = {"cluster": {"node_count": [10, 20], "node": {"gpus": 8, "accelerator": {"family": "ampere",
                                                                                        "peak_fp16_tflops": 312,
                                                                                          "tdp_w": 400},
                                                              "compute_nics": 1, "compute_nic_gbit_s": 200},
                            "fabric": {"switch_radix": 40, "switch_gbit_s": 200}}}
    _check(served, "/api/evaluate/", "post", 200, reader_client.post("/api/evaluate/", scenario, format="json").json())
    compare = reader_client.get("/api/plans/compare/", {"ids": "ff2-pcie-2zone,dgx-a100-3layer"}).json()
    _check(served, "/api/plans/compare/", "get", 200, compare)
    _check(served, "/api/plans/{slug}/bom/", "get", 200, reader_client.get("/api/plans/ff2-pcie-2zone/bom/").json())
    _check(served, "/api/reliability-profiles/", "get", 200, reader_client.get("/api/reliability-profiles/").json())

    sweep = reader_client.post("/api/sweeps/", {"plan": "ff2-pcie-2zone", "axes": {"cluster.node_count": [64, 128]}},
                               format="json").json()
    _check(served, "/api/sweeps/{id}/results/", "get", 200,
           reader_client.get(f"/api/sweeps/{sweep['id']}/results/").json())
    _check(served, "/api/sweeps/{id}/sample/", "get", 200,
           reader_client.get(f"/api/sweeps/{sweep['id']}/sample/").json())

    plan = ClusterPlan.objects.get(slug="dgx-a100-3layer")
    plan.pk, plan.slug, plan.owner, plan.node_count = None, "schema-dgx", user, 16
    plan.save()
    twin = twin_create(owner=user, plan=plan, jobs=[{"name": "j", "nodes": 8, "work_s": 1e6, "interval_s": 600,
                                                     "checkpoint_s": 30, "restart_s": 60}])
    injected = reader_client.post(f"/api/twins/{twin.pk}/inject/", {"category": "xid-74", "gpu": 0}, format="json")
    _check(served, "/api/twins/{id}/inject/", "post", 201, injected.json())
    for action in ("state", "events", "metrics"):
        _check(served, f"/api/twins/{{id}}/{action}/", "get", 200,
               reader_client.get(f"/api/twins/{twin.pk}/{action}/").json())
    measurement = measurement_upload(owner=user, kind="gemm", content=b"m,n,k,dtype,tflops\n8192,8192,8192,bf16,250\n",
                                     filename="gemm.csv", plan=plan)
    _check(served, "/api/measurements/{id}/", "get", 200,
           reader_client.get(f"/api/measurements/{measurement.pk}/").json())
