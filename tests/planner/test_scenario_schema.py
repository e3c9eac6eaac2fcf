"""The scenario document's JSON Schema, generated from the engine's field spec and served in the
OpenAPI schema for /api/evaluate/: every field, with its unit."""
import jsonschema
import yaml

from simcore.document import SPEC, Num, field_docs, json_schema
from simcore.tools.references import FF_2ZONE, LLAMA_13B


def _node(schema: dict, path: str) -> dict:
    for key in path.split("."):
        schema = schema["properties"][key]
    return schema


def _numbers_with_units(spec=SPEC, prefix=""):
    for key, rule in spec.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(rule, dict):
            yield from _numbers_with_units(rule, path)
        elif isinstance(rule, Num) and rule.unit:
            yield path, rule.unit


def test_the_served_schema_lists_every_field_with_its_unit(reader_client):
    served = yaml.safe_load(reader_client.get("/api/schema/").content)
    scenario = served["paths"]["/api/evaluate/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    for path, *_ in field_docs():
        assert _node(scenario, path), path
    units = dict(_numbers_with_units())
    assert len(units) > 40
    for path, unit in units.items():
        assert _node(scenario, path)["x-unit"] == unit, path


def test_the_schema_accepts_what_the_engine_accepts_and_refuses_what_it_refuses():
    validator = jsonschema.Draft202012Validator(json_schema())
    assert not list(validator.iter_errors({"cluster": FF_2ZONE, "workload": LLAMA_13B}))
    assert not list(validator.iter_errors({"cluster": {**FF_2ZONE, "node_count": [100, 200, 400]}}))
    assert list(validator.iter_errors({"cluster": {**FF_2ZONE, "node_count": -3}}))
    assert list(validator.iter_errors({"cluster": {**FF_2ZONE, "nodes": 3}}))  # no such field
    assert list(validator.iter_errors({"workload": LLAMA_13B}))  # the cluster is required
