"""Issue 18: login lockout on every path, hashed tokens, the engine work budget, retention, health,
request ids, metrics and the Content-Security-Policy header."""
import json
import logging
import os
import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from planner.models import AccessToken, ClusterPlan, Sweep
from planner.models.tokens import token_key_digest
from planner.services.accounts import token_issue

PASSWORD = "pw-victim-1234"
FF = "ff2-pcie-2zone"


@pytest.fixture
def victim(db):
    return get_user_model().objects.create_user("victim", password=PASSWORD, is_staff=True)  # the admin admits staff


def _page_login(client, password, username="victim"):
    return client.post("/login/", {"username": username, "password": password})


def _admin_login(client, password, username="victim"):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def _token_login(client, password, username="victim"):
    return client.post("/api/auth/token/", {"username": username, "password": password},
                       content_type="application/json")


def _logged_in(path, response):
    if path is _token_login:
        return response.status_code == 200 and "token" in response.json()
    return response.status_code == 302  # the login forms redirect on success


LOGIN_PATHS = [_page_login, _admin_login, _token_login]


@pytest.fixture(autouse=True)
def minute_long_waits(settings):
    """Waits of a minute and more (60, 120, 240 ... s), so that none runs out while a test runs on a
    slow machine; the tests move a pair's last failure back instead of waiting."""
    settings.LOGIN_DELAY_BASE_S = 60.0


def _retry_after_s(response) -> int:
    return int(response["Retry-After"])


def _pair_failures(username="victim") -> int:
    return sum(AccessAttempt.objects.filter(username=username).values_list("failures_since_start", flat=True))


def _let_time_pass(seconds: float):
    """As if ``seconds`` had passed since the pair's last failure (axes' record of it)."""
    for attempt in AccessAttempt.objects.all():
        AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=attempt.attempt_time - timedelta(
            seconds=seconds))


@pytest.mark.parametrize("login", LOGIN_PATHS, ids=["page", "admin", "token"])
def test_failures_on_a_pair_make_each_next_attempt_wait_twice_as_long(login, victim, settings):
    """Three failures are free; then each attempt waits 60, 120, 240 ... s from the last failure. An
    attempt during the wait is refused unchecked (the right password too) and is not counted; once
    waited, the right password works and clears the pair."""
    client = Client()
    free = settings.LOGIN_DELAY_AFTER_FAILURES
    assert {login(client, f"wrong-{i}").status_code for i in range(free)} <= {200, 400}
    waits = []
    for failure in range(free, free + 4):
        cache.clear()  # the token endpoint's per-minute request throttle, not the delay
        refused = login(client, PASSWORD)  # at once: refused, unchecked and uncounted
        assert refused.status_code == 429 and _pair_failures() == failure
        assert "wait" in refused.content.decode() and "before the next try" in refused.content.decode()
        waits.append(_retry_after_s(refused))
        _let_time_pass(60 * 2 ** (failure - free))
        assert login(client, f"wrong-{failure}").status_code in (200, 400)  # waited: checked, and wrong
    # What is left of each wait (Retry-After rounds up): the base doubled per failure, less the
    # second or so the test took since that failure.
    assert all(0 <= full - left < 5 for full, left in zip((60, 120, 240, 480), waits)), waits
    _let_time_pass(960)
    assert _logged_in(login, login(client, PASSWORD))
    assert _pair_failures() == 0 and login(client, "wrong-again").status_code in (200, 400)


def test_the_wait_is_at_most_the_lockout_window(victim, settings):
    client = Client()
    for i in range(settings.LOGIN_DELAY_AFTER_FAILURES):
        _page_login(client, f"wrong-{i}")
    AccessAttempt.objects.update(failures_since_start=60)  # a long guessing run (under the address's window)
    refused = _page_login(client, PASSWORD)
    assert refused.status_code == 429 and 15 * 60 - 5 < _retry_after_s(refused) <= 15 * 60
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert _page_login(client, PASSWORD).status_code == 302  # the window has passed: the failures with it


@pytest.mark.parametrize("login", LOGIN_PATHS, ids=["page", "admin", "token"])
def test_staff_clear_a_waiting_account(login, victim, settings):
    client = Client()
    for i in range(settings.LOGIN_DELAY_AFTER_FAILURES):
        login(client, f"wrong-{i}")
    assert login(client, PASSWORD).status_code == 429
    staff = get_user_model().objects.create_superuser("ops", password="pw-ops-1234")
    admin = Client()
    admin.force_login(staff)
    attempts = AccessAttempt.objects.filter(username="victim")
    response = admin.post("/admin/axes/accessattempt/", {
        "action": "delete_selected", "_selected_action": [a.pk for a in attempts], "post": "yes"})
    assert response.status_code == 302 and not AccessAttempt.objects.filter(username="victim").exists()
    cache.delete("throttle_login_127.0.0.1")  # the token endpoint's request rate
    assert _logged_in(login, login(client, PASSWORD))


@pytest.mark.parametrize("login", LOGIN_PATHS, ids=["page", "admin", "token"])
def test_an_address_is_locked_out_across_usernames(login, victim, settings):
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for i in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        login(attacker, "guess", username=f"someone-{i}")
        cache.delete("throttle_login_203.0.113.9")  # the token endpoint's request rate, not the lockout
    locked = login(attacker, PASSWORD)  # the right password, from that address
    assert locked.status_code == 429 and locked["Retry-After"] == str(15 * 60)
    assert "try again in 15 minutes" in locked.content.decode()
    assert _logged_in(login, login(Client(REMOTE_ADDR="198.51.100.7"), PASSWORD))


@pytest.mark.parametrize("login", LOGIN_PATHS, ids=["page", "admin", "token"])
def test_guessing_interleaved_with_logins_to_an_own_account_is_still_stopped(login, victim, settings):
    """An attacker with an account of their own guesses the victim's password, logging in to their
    own account after every four guesses (which once reset the address's count): past the free
    failures every guess waits, whatever succeeds between; the victim's right password from that
    address waits too, and from the victim's own it works."""
    get_user_model().objects.create_user("mallory", password="pw-mallory-1234", is_staff=True)
    attacker = Client(REMOTE_ADDR="203.0.113.50")
    guesses = []
    for i in range(40):
        guesses.append(login(attacker, f"guess-{i}").status_code)
        if i % 4 == 3:
            cache.delete("throttle_login_203.0.113.50")
            assert _logged_in(login, login(attacker, "pw-mallory-1234", username="mallory"))
    assert set(guesses[settings.LOGIN_DELAY_AFTER_FAILURES:]) == {429}
    assert _pair_failures() == settings.LOGIN_DELAY_AFTER_FAILURES  # the refused guesses were never checked
    assert login(attacker, PASSWORD).status_code == 429
    assert _logged_in(login, login(Client(REMOTE_ADDR="198.51.100.20"), PASSWORD))  # not locked out of it


@pytest.mark.parametrize("login", LOGIN_PATHS, ids=["page", "admin", "token"])
def test_wrong_passwords_from_elsewhere_do_not_delay_the_real_user(login, victim, settings):
    for address in ("203.0.113.60", "203.0.113.61"):
        for i in range(settings.LOGIN_DELAY_AFTER_FAILURES + 2):
            login(Client(REMOTE_ADDR=address), f"wrong-{i}")
    assert _logged_in(login, login(Client(REMOTE_ADDR="198.51.100.30"), PASSWORD))


def test_the_lockout_page_says_what_happened(victim, settings):
    client = Client()
    for i in range(settings.LOGIN_DELAY_AFTER_FAILURES):
        _page_login(client, f"wrong-{i}")
    page = _page_login(client, PASSWORD).content.decode()
    assert "Login paused" in page and re.search(r"wait \d+ s before the next try", page) and "ask staff" in page
    for i in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        _page_login(client, "guess", username=f"someone-{i}")
    page = _page_login(client, PASSWORD).content.decode()
    assert "Login locked" in page and "try again in 15 minutes" in page


def _every_stored_value(table):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table}")
        return [str(value) for row in cursor.fetchall() for value in row]


def test_token_keys_are_stored_only_as_digests(victim):
    client = APIClient()
    client.force_authenticate(victim)
    created = client.post("/api/tokens/", {"name": "nightly", "read_only": True}, format="json").json()
    key = created["key"]
    assert len(key) == 40 and created["prefix"] == key[:8]
    stored = _every_stored_value(AccessToken._meta.db_table)
    assert not any(key in value for value in stored)
    assert token_key_digest(key) in stored
    assert "key" not in client.get("/api/tokens/").json()["results"][0]
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert script.get("/api/plans/").status_code == 200
    script.credentials(HTTP_AUTHORIZATION=f"Token {token_key_digest(key)}")  # the digest is no credential
    assert script.get("/api/plans/").status_code == 401


def test_the_admin_never_shows_a_key(victim):
    key = token_issue(victim, name="ci")
    token = AccessToken.objects.get(name="ci")
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("ops", password="pw-ops-1234"))
    for path in ("/admin/planner/accesstoken/", f"/admin/planner/accesstoken/{token.pk}/change/"):
        page = admin.get(path)
        assert page.status_code == 200 and key[:8] in page.content.decode()
        assert key not in page.content.decode() and token.key_digest not in page.content.decode()
    assert admin.get("/admin/planner/accesstoken/add/").status_code == 403


def test_a_password_login_issues_a_new_key_and_retires_the_old_one(victim):
    client = Client()
    first = _token_login(client, PASSWORD).json()["token"]
    second = _token_login(client, PASSWORD).json()["token"]
    assert first != second
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    assert script.get("/api/plans/").status_code == 401
    script.credentials(HTTP_AUTHORIZATION=f"Token {second}")
    assert script.get("/api/plans/").status_code == 200


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_keys_issued_before_hashing_keep_working_through_the_migration():
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate([("planner", "0006_reliability_profiles_and_racks")])
    old = executor.loader.project_state([("planner", "0006_reliability_profiles_and_racks")]).apps
    user = old.get_model("auth", "User").objects.create(username="legacy")
    old.get_model("planner", "AccessToken").objects.create(user_id=user.pk, key="a" * 40, name="old-script")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    token = AccessToken.objects.get(name="old-script")
    assert token.prefix == "a" * 8 and not any("a" * 40 in v for v in _every_stored_value(AccessToken._meta.db_table))
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Token {'a' * 40}")
    assert script.get("/api/plans/").status_code == 200


HEAVY_SCENARIO = {
    "cluster": {"node_count": 16384, "node": {"gpus": 8, "accelerator": {"family": "ampere",
                                                                         "peak_fp16_tflops": 312, "tdp_w": 400},
                                              "compute_nics": 1, "compute_nic_gbit_s": 200},
                "fabric": {"switch_radix": 64, "switch_gbit_s": 200, "layers": 3},
                "storage": {"external_write_gbyte_s": 2000},
                "reliability": {"profile": "llama3", "restart_s": [60 + 6 * i for i in range(100)]}},
    "workload": {"kind": "transformer", "layers": 40, "hidden": 5120, "heads": 40, "vocab": 32000, "seq_len": 4096,
                 "gpus": 131072, "global_batch": 131072, "micro_batch": 1, "tp": 8, "pp": 4},
    "options": {"monte_carlo_replicas": 1000, "monte_carlo_horizon_h": 87600},
}


def test_a_request_over_the_work_budget_is_refused_before_the_work(reader_client, monkeypatch):
    import simcore.formulas.reliability

    def must_not_run(*args, **kwargs):
        raise AssertionError("the Monte Carlo ran although the request is over the budget")

    monkeypatch.setattr(simcore.formulas.reliability, "ettr_monte_carlo", must_not_run)
    monkeypatch.setattr(simcore.formulas.reliability, "sample_category_counts", must_not_run)
    response = reader_client.post("/api/evaluate/", HEAVY_SCENARIO, format="json")
    assert response.status_code == 400, response.content
    reason = response.json()["options.monte_carlo_replicas"][0]
    assert "s of engine work; at most 1 s per request (the work budget)" in reason
    estimate_s = float(reason.split("needs about ")[1].split(" s")[0])
    assert estimate_s > 5  # 100 points x 1,000 replicas of about a hundred thousand failures each


def test_work_within_the_budget_runs(reader_client):
    light = {**HEAVY_SCENARIO, "options": {"monte_carlo_replicas": 20, "monte_carlo_horizon_h": 720}}
    light["cluster"] = {**HEAVY_SCENARIO["cluster"], "reliability": {"profile": "llama3"}}
    response = reader_client.post("/api/evaluate/", light, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["reliability"]["monte_carlo"]["replicas"] == 20


def test_the_budget_guards_plan_evaluations_and_twin_creation(catalog, reader_client, settings):
    settings.API_WORK_BUDGET_S = 0.05
    heavy = {"monte_carlo_replicas": 1000, "monte_carlo_horizon_h": 87600}  # about 0.25 s of draws
    response = reader_client.post(f"/api/plans/{FF}/evaluate/", {"workload": "llama-13b-512", "options": heavy},
                                  format="json")
    assert response.status_code == 400 and "at most 0.05 s" in response.json()["options.monte_carlo_replicas"][0]
    light = {"monte_carlo_replicas": 10, "monte_carlo_horizon_h": 720}
    assert reader_client.post(f"/api/plans/{FF}/evaluate/", {"workload": "llama-13b-512", "options": light},
                              format="json").status_code == 200
    settings.API_WORK_BUDGET_S = 1e-6
    twin = reader_client.post("/api/twins/", {"plan": FF}, format="json")
    assert twin.status_code == 400 and "work budget" in str(twin.json()["plan"])


def _sweep(plan, owner, *, finished_days_ago, status=Sweep.Status.DONE, reused_from=None):
    now = timezone.now()
    sweep = Sweep.objects.create(owner=owner, name="s", plan=plan, spec={}, base_document={}, status=status,
                                 total_points=1, chunk_size=1, chunk_count=1, engine_version="x", input_hash="h",
                                 reused_from=reused_from)
    finished = None if status not in Sweep.FINAL else now - timedelta(days=finished_days_ago)
    Sweep.objects.filter(pk=sweep.pk).update(finished_at=finished, created_at=now - timedelta(days=finished_days_ago))
    return sweep


def test_retention_removes_exactly_what_is_older_than_the_settings(catalog, victim, settings):
    from twin.models import LogIngest, Twin, TwinEvent, TwinSample
    from twin.services.creation import twin_create

    settings.RETENTION_SWEEP_DAYS, settings.RETENTION_TWIN_EVENT_DAYS, settings.RETENTION_TWIN_SAMPLE_DAYS = 90, 30, 7
    plan = ClusterPlan.objects.get(slug=FF)
    old = _sweep(plan, victim, finished_days_ago=91)
    kept = _sweep(plan, victim, finished_days_ago=89)
    running = _sweep(plan, victim, finished_days_ago=200, status=Sweep.Status.RUNNING)
    reused_old = _sweep(plan, victim, finished_days_ago=120)
    _sweep(plan, victim, finished_days_ago=10, reused_from=reused_old)  # still shows reused_old's results
    both_old = _sweep(plan, victim, finished_days_ago=150)
    _sweep(plan, victim, finished_days_ago=100, reused_from=both_old)
    twin = twin_create(owner=victim, plan=plan)
    now = timezone.now()
    for seq, age in enumerate([31, 29, 45]):
        event = TwinEvent.objects.create(twin=twin, seq=seq + 1, sim_time_s=seq, kind="fault")
        TwinEvent.objects.filter(pk=event.pk).update(created_at=now - timedelta(days=age))
    for age in (8, 6):
        sample = TwinSample.objects.create(twin=twin, sim_time_s=age, data={})
        TwinSample.objects.filter(pk=sample.pk).update(created_at=now - timedelta(days=age))
    for lines, finished_days_ago in ((1, 31), (2, 29)):
        LogIngest.objects.create(twin=twin, node=0, lines_total=lines, log="", status="done",
                                 finished_at=now - timedelta(days=finished_days_ago))
    from planner.models import TraceRead, Workload

    for size_bytes, finished_days_ago in ((1, 91), (2, 89)):
        TraceRead.objects.create(owner=victim, plan=plan, workload=Workload.objects.get(slug="llama-13b-512"),
                                 status="done", size_bytes=size_bytes,
                                 finished_at=now - timedelta(days=finished_days_ago))
    queued = LogIngest.objects.create(twin=twin, node=0, lines_total=3, log="x")
    LogIngest.objects.filter(pk=queued.pk).update(created_at=now - timedelta(days=45))  # not finished: kept
    before = set(Sweep.objects.values_list("pk", flat=True))
    call_command("enforce_retention")
    after = set(Sweep.objects.values_list("pk", flat=True))
    assert before - after == {old.pk, both_old.pk, both_old.pk + 1}
    assert {kept.pk, running.pk, reused_old.pk} <= after
    assert sorted(TwinEvent.objects.filter(twin=twin).values_list("seq", flat=True)) == [2]
    assert list(TwinSample.objects.filter(twin=twin).values_list("sim_time_s", flat=True)) == [6]
    assert sorted(LogIngest.objects.filter(twin=twin).values_list("lines_total", flat=True)) == [2, 3]
    assert list(TraceRead.objects.values_list("size_bytes", flat=True)) == [2]
    assert Twin.objects.filter(pk=twin.pk).exists()


def test_retention_zero_keeps_everything(catalog, victim, settings):
    settings.RETENTION_SWEEP_DAYS = 0
    plan = ClusterPlan.objects.get(slug=FF)
    sweep = _sweep(plan, victim, finished_days_ago=10_000)
    call_command("enforce_retention")
    assert Sweep.objects.filter(pk=sweep.pk).exists()


def test_liveness_and_readiness_report_each_service(admin_client, client, db):
    assert client.get("/healthz/live/").json() == {"status": "ok"}
    assert client.get("/healthz/ready/").json() == {"status": "ok"}  # strangers learn up or down, no more
    client = admin_client
    ready = client.get("/healthz/ready/")
    assert ready.status_code == 200
    checks = ready.json()["checks"]
    assert set(checks) == {"database", "broker", "channel_layer", "cache"}
    assert all(check["status"] == "ok" for check in checks.values())
    assert client.get("/healthz/").json()["checks"].keys() == checks.keys()


def test_readiness_names_the_service_that_is_down(admin_client, client, db, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    anonymous = client.get("/healthz/ready/")
    assert anonymous.status_code == 503 and anonymous.json() == {"status": "error"}
    ready = admin_client.get("/healthz/ready/")
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["broker"]["status"] == "error" and checks["database"]["status"] == "ok"


def test_every_response_and_log_line_carries_the_request_id(reader_client, caplog):
    with caplog.at_level(logging.INFO, logger="planner.access"):
        response = reader_client.get("/api/plans/", HTTP_X_REQUEST_ID="trace-42")
        fresh = reader_client.get("/api/plans/", HTTP_X_REQUEST_ID="bad id with spaces")
    assert response["X-Request-ID"] == "trace-42"
    assert len(fresh["X-Request-ID"]) == 32 and fresh["X-Request-ID"] != "bad id with spaces"
    lines = [r for r in caplog.records if r.name == "planner.access"]
    assert [r.request_id for r in lines] == ["trace-42", fresh["X-Request-ID"]]
    assert lines[0].status == 200 and lines[0].path == "/api/plans/"


def test_log_lines_are_json_with_the_request_id_and_a_utc_time():
    from datetime import datetime, timedelta

    from django.conf import settings
    from django.utils.module_loading import import_string

    from config.observability import RequestIdFilter, request_id_var

    configured = settings.LOGGING["formatters"]["json"]
    options = {("fmt" if k == "format" else k): v for k, v in configured.items() if k != "()"}
    formatter = import_string(configured["()"])(**options)
    record = logging.LogRecord("planner", logging.WARNING, __file__, 1, "disk %s", ("full",), None)
    token = request_id_var.set("abc123")
    RequestIdFilter().filter(record)
    request_id_var.reset(token)
    line = json.loads(formatter.format(record))
    assert line["request_id"] == "abc123" and line["message"] == "disk full" and line["level"] == "WARNING"
    assert line["task_id"] == "-" and datetime.fromisoformat(line["time"]).utcoffset() == timedelta(0)
    assert datetime.fromisoformat(line["time"]).timestamp() == pytest.approx(record.created, abs=0.001)


def test_metrics_count_evaluations_for_the_scraper_and_staff_only(catalog, reader_client):
    reader_client.post(f"/api/plans/{FF}/evaluate/", {"options": {"message_bytes": 3 * 2**20}}, format="json")
    scraper = Client(REMOTE_ADDR="127.0.0.1").get("/metrics/")
    assert scraper.status_code == 200
    text = scraper.content.decode()
    assert 'planner_evaluations_total{kind="evaluation"}' in text
    assert "django_http_requests_total_by_method_total" in text
    assert Client(REMOTE_ADDR="198.51.100.7").get("/metrics/").status_code == 403
    # A proxy on the same host makes every client 127.0.0.1: a request it forwarded is a client's.
    proxied = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.7").get("/metrics/")
    assert proxied.status_code == 403


def test_pages_send_a_content_security_policy_without_inline_script(client, victim):
    client.force_login(victim)
    policy = client.get("/plans/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "unsafe-inline" not in policy and directives["frame-ancestors"] == "'none'"
    for path in ("/plans/", "/sweeps/", "/twins/", "/tokens/", "/compare/", "/workloads/new/"):
        page = client.get(path).content.decode()
        assert "<script>" not in page and '<script type="module">' not in page, path


@override_settings(DEBUG=False)
def test_an_unknown_api_path_answers_a_problem_and_a_bearer_token_is_a_token(user):
    missing = Client().get("/api/no-such-thing/")
    assert (missing.status_code, missing["Content-Type"], missing.json()) == (
        404, "application/problem+json", {"type": "about:blank", "title": "Not Found", "status": 404,
                                          "detail": "Not found."})
    assert "text/html" in Client().get("/no-such-page/")["Content-Type"]
    wrong_host = Client(HTTP_HOST="elsewhere.example").get("/api/plans/")
    assert (wrong_host.status_code, wrong_host["Content-Type"], wrong_host.json()["detail"]) == (
        400, "application/problem+json", "the Host header names no host this server answers for (ALLOWED_HOSTS)")
    key = token_issue(user, name="bearer-client")
    for scheme in ("Token", "Bearer", "bearer"):
        answer = Client().get("/api/plans/", HTTP_AUTHORIZATION=f"{scheme} {key}")
        assert answer.status_code == 200, scheme
    assert Client().get("/api/plans/", HTTP_AUTHORIZATION="Bearer").status_code == 401
    assert Client().get("/api/plans/", HTTP_AUTHORIZATION="Basic abc").status_code == 401


def test_the_schema_version_is_the_project_version(reader_client):
    import tomllib

    from django.conf import settings

    import simcore

    root = Path(settings.BASE_DIR)
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    engine = tomllib.loads((root / "engine" / "pyproject.toml").read_text())["project"]["version"]
    schema = reader_client.get("/api/schema/?format=json").json()
    assert schema["info"]["version"] == project == engine == simcore.__version__
    export = schema["paths"]["/api/sweeps/{id}/export/"]["get"]["responses"]["200"]["content"]
    assert set(export) == {"text/csv", "application/vnd.apache.parquet", "application/octet-stream"}


def test_every_operation_documents_the_errors_it_can_give(reader_client):
    schema = reader_client.get("/api/schema/?format=json").json()
    assert schema["components"]["schemas"]["Problem"]["required"] == ["type", "title", "status", "detail"]
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            codes = set(operation["responses"])
            anonymous = {} in operation.get("security", [])
            assert {"429"} <= codes and (anonymous or {"401"} <= codes), (method, path)
            if method in ("post", "put", "patch"):
                assert {"400", "413"} <= codes, (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            if method == "delete":
                assert "409" in codes, (method, path)
    plan = schema["paths"]["/api/plans/{slug}/"]["patch"]["responses"]["400"]["content"]["application/problem+json"]
    assert plan["schema"] == {"$ref": "#/components/schemas/Problem"}


def test_every_error_under_the_api_is_one_problem_document(reader_client, catalog):
    """RFC 9457: bad fields (under errors, each also a member of its own), an impossible plan, a
    missing login, a missing object, a too-large body: one shape, application/problem+json."""
    bad = reader_client.post("/api/plans/", {"slug": "x"}, format="json")
    body = bad.json()
    assert bad["Content-Type"] == "application/problem+json"
    assert (body["type"], body["title"], body["status"]) == ("about:blank", "Bad Request", 400)
    assert body["errors"]["name"] and body["name"] == body["errors"]["name"] and "name: " in body["detail"]
    infeasible = reader_client.post("/api/plans/preview/", {"node_type": "ff-pcie-a100", "node_count": 100_000,
                                                            "switch": "qm8700", "price_book": "ff-relative"},
                                    format="json")
    assert infeasible.status_code == 400 and infeasible["Content-Type"] == "application/problem+json"
    assert infeasible.json()["status"] == 400 and infeasible.json()["detail"]
    anonymous = APIClient().get("/api/plans/")
    assert (anonymous.status_code, anonymous["Content-Type"], anonymous.json()["status"]) == (
        401, "application/problem+json", 401)
    gone = reader_client.get("/api/plans/no-such-plan/")
    assert (gone.status_code, gone.json()["title"]) == (404, "Not Found")
    schema = reader_client.get("/api/schema/?format=json").json()
    problem = schema["paths"]["/api/plans/"]["post"]["responses"]["400"]["content"]
    assert problem == {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}


def test_a_long_list_is_refused_for_its_answer_before_any_work(reader_client, monkeypatch):
    """50,000 node counts: the engine itself would take a tenth of a second, but the JSON answer
    (about 2.8 kB a point, 139 MB) seconds more; the budget counts both and refuses it up front."""
    import simcore.stages.scenario

    def must_not_run(*args, **kwargs):
        raise AssertionError("the engine ran although the answer is over the budget")

    long_list = {**HEAVY_SCENARIO, "options": {}, "workload": {**HEAVY_SCENARIO["workload"], "gpus": 512},
                 "cluster": {**HEAVY_SCENARIO["cluster"], "node_count": list(range(100, 50_100)),
                             "reliability": {"profile": "llama3"}}}
    monkeypatch.setattr(simcore.stages.scenario, "evaluate_parsed", must_not_run)
    response = reader_client.post("/api/evaluate/", long_list, format="json")
    assert response.status_code == 400
    reason = response.json()["errors"]["(document)"][0]
    assert "50,000 scenario points" in reason and float(reason.split("needs about ")[1].split(" s")[0]) >= 4


@pytest.mark.parametrize("kind, field, value", [
    ("plans", "init_s_per_rank", 1e308), ("plans", "restart_s", 1e-320), ("plans", "node_count", 10**19),
    ("workloads", "weight_bytes", 1e308), ("workloads", "optimizer_bytes_per_param", 1e308),
])
def test_a_number_past_the_engines_range_is_refused_on_write_and_nothing_changes(catalog, reader_client,
                                                                                kind, field, value):
    """Stored with 200, such values broke every evaluation, comparison, sweep and twin of the entry."""
    if kind == "plans":
        reader_client.post("/api/plans/ff2-pcie-2zone/clone/", {"slug": f"my-{kind}"}, format="json")
    else:
        preset = reader_client.get("/api/workloads/llama-13b-512/").json()
        created = reader_client.post("/api/workloads/", {**preset, "slug": f"my-{kind}", "visibility": "private"},
                                     format="json")
        assert created.status_code == 201, created.json()
    before = reader_client.get(f"/api/{kind}/my-{kind}/").json()
    response = reader_client.patch(f"/api/{kind}/my-{kind}/", {field: value}, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]
    assert reader_client.get(f"/api/{kind}/my-{kind}/").json() == before


def test_failure_rate_overrides_past_the_engines_range_are_refused(catalog, reader_client):
    reader_client.post("/api/plans/ff2-pcie-2zone/clone/", {"slug": "my-rates"}, format="json")
    response = reader_client.patch("/api/plans/my-rates/", {"category_rates": {"xid-79": 1e308}}, format="json")
    assert response.status_code == 400 and "xid-79" in str(response.json()["errors"]["category_rates"])
    assert reader_client.post("/api/plans/my-rates/evaluate/", {}, format="json").status_code == 200


def test_methods_a_view_lacks_answer_405_and_the_ingests_list_is_documented_as_a_page(catalog, reader_client):
    for method in ("TRACE", "PROPFIND"):
        response = reader_client.generic(method, "/api/catalog/matching-parts/?node_type=dgx-a100")
        assert response.status_code == 405 and response["Content-Type"].startswith("application/problem+json")
    schema = reader_client.get("/api/schema/?format=json").json()
    listed = schema["paths"]["/api/twins/{id}/ingests/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listed["schema"] == {"$ref": "#/components/schemas/PaginatedLogIngestList"}


def test_work_run_one_at_a_time_answers_503_while_the_cache_is_down(catalog, reader_client, settings):
    """The one-at-a-time keys live in the shared cache; with it unreachable nobody can hold one, so
    the answer is 503 (try again), not 409 or 429 (someone else is at it)."""
    twin = reader_client.post("/api/twins/", {"plan": FF, "seed": 1}, format="json").json()["id"]
    settings.CACHES = {"default": {"BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": "redis://127.0.0.1:9/0",
                                   "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
    response = reader_client.post(f"/api/twins/{twin}/ingest-log/", {"node": 1, "log": "kernel: hello\n"},
                                  format="json")
    assert response.status_code == 503 and "cache (Redis) is unreachable" in response.json()["detail"]


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="parallel logins need PostgreSQL (SQLite locks its tables); CI sets DATABASE_URL")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # threads see committed rows; the seed returns
def test_a_burst_of_parallel_guesses_checks_no_more_passwords_than_the_ceiling(settings, monkeypatch):
    """40 wrong passwords, 8 at a time, from one address, each check slow as a real password hash is: each
    attempt is counted against the address before its password is checked, so at most the ceiling's
    20 are checked, and the right password after them is refused too."""
    from concurrent.futures import ThreadPoolExecutor

    from django.contrib.auth.backends import ModelBackend
    from django.db import connection

    get_user_model().objects.create_user("victim", password=PASSWORD)
    settings.LOGIN_DELAY_AFTER_FAILURES = 1000  # only the address's ceiling, not the pair's wait
    checked, check = [], ModelBackend.authenticate

    def slow_check(self, request, **credentials):
        checked.append(credentials.get("username"))
        time.sleep(0.2)
        return check(self, request, **credentials)

    def guess(i):
        try:
            return _page_login(Client(REMOTE_ADDR="203.0.113.50"), f"wrong-{i}").status_code
        finally:
            connection.close()  # back to the pool: the threads outnumber nothing but the guesses

    monkeypatch.setattr(ModelBackend, "authenticate", slow_check)
    with ThreadPoolExecutor(max_workers=8) as pool:  # 8 at once: fewer than the pool's connections
        codes = list(pool.map(guess, range(40)))
    assert len(checked) == settings.LOGIN_ADDRESS_FAILURE_LIMIT == 20
    assert set(codes) <= {200, 429} and codes.count(429) >= 20  # 200: the form again, with its error
    assert _page_login(Client(REMOTE_ADDR="203.0.113.50"), PASSWORD).status_code == 429
    # A success gives its reservation back: logins from another address keep working all along.
    for _ in range(25):
        assert _page_login(Client(REMOTE_ADDR="198.51.100.20"), PASSWORD).status_code == 302


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="the connection pool is PostgreSQL's; CI sets DATABASE_URL")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # threads see committed rows; the seed returns
def test_a_burst_of_logins_never_takes_the_pool_from_other_requests(settings, monkeypatch):
    """60 logins for 60 usernames from 60 addresses at once, each password check slow (1.5 s, as an
    attacker's chosen hash work might make it) against a pool of 8 connections: at most
    LOGIN_CHECKS_AT_ONCE (4) are checked at a time, those that find no turn within 2 s answer 503
    with Retry-After, none answers 500, and another user's request, sent in the middle of the
    burst, is answered at once."""
    from concurrent.futures import ThreadPoolExecutor

    from django.contrib.auth.backends import ModelBackend

    assert settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"] == 8 and settings.LOGIN_CHECKS_AT_ONCE == 4
    reader = get_user_model().objects.create_user("reader", password=PASSWORD)
    token = token_issue(reader)
    checking, most, check = [], [0], ModelBackend.authenticate

    def slow_check(self, request, **credentials):
        checking.append(1)
        most[0] = max(most[0], len(checking))
        time.sleep(1.5)
        checking.pop()
        return check(self, request, **credentials)

    def login(i):
        try:
            response = _page_login(Client(REMOTE_ADDR=f"203.0.113.{i + 1}"), "wrong", username=f"user-{i}")
            return response.status_code, response.get("Retry-After")
        finally:
            connection.close()

    def other_user():
        time.sleep(0.5)  # the burst has begun
        began = time.monotonic()
        try:
            status = APIClient().get("/api/plans/", HTTP_AUTHORIZATION=f"Token {token}").status_code
            return status, time.monotonic() - began
        finally:
            connection.close()

    monkeypatch.setattr(ModelBackend, "authenticate", slow_check)
    with ThreadPoolExecutor(max_workers=61) as pool:
        reading = pool.submit(other_user)
        answers = list(pool.map(login, range(60)))
    codes = [code for code, _ in answers]
    assert set(codes) <= {200, 503}, codes  # 200: the form again, with its error
    assert most[0] == settings.LOGIN_CHECKS_AT_ONCE
    assert codes.count(200) >= 8 and codes.count(503) >= 20
    assert {retry for code, retry in answers if code == 503} == {"1"}
    status, seconds = reading.result()
    assert status == 200 and seconds < 1.5, seconds


def test_logins_count_against_the_database_while_the_cache_is_down(victim, settings):
    """With the shared cache unreachable a failed login still answers (the form again), and the
    address's ceiling is read from axes' records in the database."""
    settings.CACHES = {"default": {"BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": "redis://127.0.0.1:9/0",
                                   "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
    settings.LOGIN_DELAY_AFTER_FAILURES = 1000
    attacker = Client(REMOTE_ADDR="203.0.113.77")
    assert _page_login(attacker, "wrong", username="someone").status_code == 200
    assert _page_login(attacker, PASSWORD).status_code == 302  # the victim's own pair is clean
    AccessAttempt.objects.filter(username="someone").update(failures_since_start=settings.LOGIN_ADDRESS_FAILURE_LIMIT)
    assert _page_login(Client(REMOTE_ADDR="203.0.113.77"), PASSWORD).status_code == 429  # the address's ceiling


def test_engine_requests_take_a_users_slot_and_a_process_turn(catalog, settings):
    """A request that runs the engine needs one of its user's HEAVY_REQUESTS_PER_USER slots (429 with
    Retry-After when all are held, named) and one of the process's HEAVY_REQUESTS_AT_ONCE turns (503
    with Retry-After after HEAVY_QUEUE_WAIT_S); reads need neither."""
    from config.limits import process_turns

    user = get_user_model().objects.create_user("heavy", password=PASSWORD)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {token_issue(user)}")
    settings.HEAVY_REQUESTS_AT_ONCE, settings.HEAVY_QUEUE_WAIT_S = 1, 0.1
    assert client.post("/api/plans/ff2-pcie-2zone/evaluate/", {}, format="json").status_code == 200
    turns = process_turns("heavy", 1)
    assert turns.acquire(timeout=1)  # another request holds the process's one turn
    try:
        busy = client.post("/api/plans/ff2-pcie-2zone/evaluate/", {}, format="json")
        assert busy.status_code == 503 and busy["Retry-After"] == "1"
        assert "HEAVY_REQUESTS_AT_ONCE" in busy.json()["detail"]
        assert client.get("/api/plans/ff2-pcie-2zone/").status_code == 200
    finally:
        turns.release()
    cache.set(f"heavy-requests:{user.pk}", settings.HEAVY_REQUESTS_PER_USER, timeout=60)  # all held elsewhere
    refused = client.post("/api/plans/ff2-pcie-2zone/evaluate/", {}, format="json")
    assert refused.status_code == 429 and refused["Retry-After"] == "1"
    assert refused.json()["detail"].startswith("you have 2 requests running the engine already")
    cache.set(f"heavy-requests:{user.pk}", 1, timeout=60)
    assert client.post("/api/plans/ff2-pcie-2zone/evaluate/", {}, format="json").status_code == 200
    assert cache.get(f"heavy-requests:{user.pk}") == 1  # the slot it held is given back


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # threads see committed rows; the seed returns
def test_requests_waiting_for_a_turn_hold_no_pooled_connection(catalog, settings, monkeypatch):
    """Issue 69, item 4: ten users each sending two engine requests at once (within their own limit
    of two) against two turns and a pool of 8. Each request looked its token up (a connection) before
    it waited for its turn; eighteen waiters held the pool, and the requests past it answered 500.
    Now the connection goes back to the pool before the wait: at most the turns' holders hold one,
    every request answers 200, and an uninvolved user's read is answered at once."""
    from concurrent.futures import ThreadPoolExecutor

    import planner.api.plan_views as plan_views

    assert settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"] == 8
    settings.HEAVY_REQUESTS_AT_ONCE, settings.HEAVY_QUEUE_WAIT_S = 2, 30.0
    tokens = [token_issue(get_user_model().objects.create_user(f"burst-{i}", password=PASSWORD)) for i in range(11)]
    answer = plan_views.evaluation_response
    in_use, sampling = [0], [True]

    def slow_evaluation(*args, **kwargs):
        time.sleep(0.4)
        return answer(*args, **kwargs)

    def evaluate(i):
        try:
            client = APIClient(HTTP_AUTHORIZATION=f"Token {tokens[i // 2]}")
            return client.post(f"/api/plans/{FF}/evaluate/", {}, format="json").status_code
        finally:
            connection.close()

    def sample():
        time.sleep(1.0)  # every request has looked its token up: from here on, most are waiting for a turn
        while sampling[0]:
            stats = connection.pool.get_stats()
            in_use[0] = max(in_use[0], stats["pool_size"] - stats["pool_available"])
            time.sleep(0.01)

    def other_user():
        time.sleep(1.0)  # every request has looked its token up, and most are waiting
        began = time.monotonic()
        try:
            status = APIClient(HTTP_AUTHORIZATION=f"Token {tokens[10]}").get("/api/plans/").status_code
            return status, time.monotonic() - began
        finally:
            connection.close()

    monkeypatch.setattr(plan_views, "evaluation_response", slow_evaluation)
    connection.ensure_connection()
    with ThreadPoolExecutor(max_workers=22) as pool:
        sampler = pool.submit(sample)
        reading = pool.submit(other_user)
        codes = list(pool.map(evaluate, range(20)))
        sampling[0] = False
        sampler.result()
    assert codes == [200] * 20, codes
    assert in_use[0] <= settings.HEAVY_REQUESTS_AT_ONCE + 2, in_use[0]  # the turns' holders, the reader, this test
    # (8, the whole pool, before the fix)
    status, seconds = reading.result()
    assert status == 200 and seconds < 1.0, seconds
