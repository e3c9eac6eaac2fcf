"""Real answers against the schema (issue 72): every operation that reads or runs a plan, called with
real arguments on every preset plan, answers 2xx with a body the served schema describes: each field
it marks required present, each type and enum as declared, each non-JSON download under its declared
media type. A client generated from the schema (tests/test_generated_client.py) relies on exactly
this; the fuzz (tests/test_api_fuzz.py) sends generated input and mostly sees its refusals."""
import pytest
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
    for query in ({}, {"format": "json"}, {"format": "csv"}, {"format": "xlsx"}):
        _call(token, "GET /api/plans/{slug}/bom/", path_parameters=path, query=query)
    other = "dgx-a100-3layer" if slug == "ff2-pcie-2zone" else "ff2-pcie-2zone"
    for query in ({}, {"workload": workload}, {"format": "csv"}, {"format": "xlsx"}):
        _call(token, "GET /api/plans/compare/", query={"ids": f"{slug},{other}", **query})
    for query in ({"file": "sites"}, {"file": "devices", **HEIGHTS}):
        _call(token, "GET /api/plans/{slug}/netbox/", path_parameters=path, query=query)
