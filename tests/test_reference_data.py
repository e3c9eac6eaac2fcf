"""The validation record's case file against its JSON Schema (the engine's tests read the cases; this
checks the file's form, as the catalogue's data files are checked against theirs)."""
import json

import jsonschema
import yaml

from simcore.tools.references import CASES_PATH, SCHEMA_PATH


def test_the_reference_case_file_meets_its_schema_and_the_schema_refuses_a_case_without_a_tolerance():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    data = yaml.safe_load(CASES_PATH.read_text())
    assert not list(validator.iter_errors(data))
    case = data["cases"][0]
    broken = {**data, "cases": [{k: v for k, v in case.items() if k != "rel_tolerance"},
                                {**case, "predict": {**case["predict"], "measure": "ratio"}},
                                {**case, "trains": {"family": "hopper", "kind": "sparse"}}]}
    paths = sorted(error.json_path for error in validator.iter_errors(broken))
    assert paths == ["$.cases[0]", "$.cases[1].predict", "$.cases[2].trains.kind"]


def test_the_fitted_constants_file_meets_its_schema_and_names_only_rows_of_the_record():
    from simcore.fitted import FITTED_PATH
    from simcore.tools.references import CASES

    schema = json.loads(FITTED_PATH.with_name("fitted_constants.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    data = yaml.safe_load(FITTED_PATH.read_text())
    assert not list(validator.iter_errors(data))
    keys = {case.key for case in CASES}
    for entry in data["constants"]:
        low, high = entry["bounds"]
        assert low <= entry["value"] <= high
        assert {key for members in entry["groups"].values() for key in members} <= keys
        assert {group["group"] for group in entry["leave_one_group_out"]} == set(entry["groups"])
    one_group = {**data["constants"][0], "groups": {"all": ["sc21-t2-174.6b-zero3-384"]}}
    assert [error.json_path for error in validator.iter_errors({**data, "constants": [one_group]})] == \
        ["$.constants[0].groups"]  # a constant needs two groups at least, to leave one out
