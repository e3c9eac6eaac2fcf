"""Property-based fuzzing of every API operation from the OpenAPI schema (schemathesis).

Each operation is its own test with ``API_FUZZ_EXAMPLES`` generated requests (default 5; set
e.g. 100 for a deeper run) from a signed-in user's full-access token, through the WSGI app on the
test database with the seed catalogue. Checked for every response: no 5xx, and the body matches
the schema's response for its status code. Queuing work is replaced by a no-op (the fuzz target
is the API, not the workers); each test's changes are rolled back.
"""
import json
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from config.wsgi import application

EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "5"))
def _schema():
    """The served schema, generated as /api/schema/ generates it (serving it needs a login, and this
    runs at collection, before any user exists), its calls going to the WSGI application."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
    schema = schemathesis.openapi.from_dict(document)
    schema.app = application
    return schema


SCHEMA = _schema()
OPERATIONS = {operation.label: operation for operation in (result.ok() for result in SCHEMA.get_all_operations())}


@pytest.fixture
def fuzz_token(catalog, django_user_model, monkeypatch):
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from planner.services.accounts import token_issue

    monkeypatch.setattr("planner.services.submission.sweep_enqueue", lambda sweep: None)
    monkeypatch.setattr("twin.api.views.ensure_local_driver", lambda: None)
    user = django_user_model.objects.create_user("fuzzer", password="pw-fuzzer-1234")
    # Requests run inside the test's transaction, so the connection must outlive each of them (as
    # Django's own test client arranges); otherwise a pooled connection is handed back mid-test.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield token_issue(user)
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


def test_the_schema_lists_every_operation():
    assert len(OPERATIONS) > 80
    assert {"POST /api/plans/preview/", "POST /api/sweeps/", "POST /api/twins/{id}/inject/"} <= set(OPERATIONS)


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_operation_answers_without_5xx_and_as_documented(label, fuzz_token):
    operation = OPERATIONS[label]

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def fuzz(case):
        response = case.call(headers={"Authorization": f"Token {fuzz_token}"})
        case.validate_response(response, checks=[not_a_server_error, response_schema_conformance])

    fuzz()
