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
