"""Deployment files: production settings pass ``check --deploy``; compose and Dockerfile hang together."""
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def run_manage(*args, env_overrides):
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_passes_with_production_settings():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env_overrides={
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": secrets.token_urlsafe(64),
            "ALLOWED_HOSTS": "planner.example.org",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_a_missing_secret_key():
    result = run_manage(
        "check",
        env_overrides={"DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": ""},
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_bad_boolean_setting_is_named():
    result = run_manage("check", env_overrides={"DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_docker_compose_services():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"web", "worker", "redis", "postgres", "migrate", "twin-driver", "beat"} <= set(services)
    for name in ("web", "worker", "redis", "postgres", "twin-driver", "beat"):
        assert "healthcheck" in services[name], name
    assert "/healthz/ready/" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    for name in ("web", "worker", "twin-driver"):  # one metrics directory for every process
        assert "metrics:/app/var/metrics" in services[name]["volumes"]
        assert services[name]["environment"]["PROMETHEUS_MULTIPROC_DIR"] == "/app/var/metrics"
    assert services["web"]["command"][:3] == ["python", "-m", "config.server"]  # Daphne, bodies bounded as they arrive
    assert "celery" in " ".join(services["worker"]["command"])
    assert "load_catalog" in " ".join(services["migrate"]["command"])
    assert "run_twins" in " ".join(services["twin-driver"]["command"])
    assert "sim" in services["worker"]["command"][services["worker"]["command"].index("-Q") + 1]
    for name in ("web", "worker", "migrate", "twin-driver", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["REDIS_URL"].startswith("redis://redis:6379")
        assert env["CACHE_URL"].startswith("redis://redis:6379/") and env["CACHE_URL"] != env["REDIS_URL"]
        assert env["DJANGO_SETTINGS_MODULE"] == "config.settings.production"
        assert services[name]["build"] == "." or services[name].get("image") == services["web"].get("image")
    for name in ("web", "worker", "twin-driver", "beat"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        assert depends["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    # Queued work survives a Redis restart only with an append-only file on a volume.
    redis_command = services["redis"]["command"]
    assert redis_command[redis_command.index("--appendonly") + 1] == "yes"
    assert any(volume.endswith(":/data") for volume in services["redis"]["volumes"])
    assert set(compose["volumes"]) >= {"pgdata", "redis-data", "metrics"}


def test_behind_the_declared_proxy_hsts_reaches_clients_and_compose_passes_the_count_through():
    """Issue 56 item 11: the production settings believe X-Forwarded-Proto only with LOGIN_PROXY_COUNT, and
    then a request through the proxy is secure and answered with HSTS; compose lets the operator set it."""
    probe = ("from django.test import Client; "
             "r = Client().get('/healthz/live/', HTTP_X_FORWARDED_PROTO='https', HTTP_X_FORWARDED_FOR='203.0.113.9', "
             "HTTP_HOST='planner.example.org'); print(r.status_code, r.get('Strict-Transport-Security'))")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": secrets.token_urlsafe(64),
           "ALLOWED_HOSTS": "planner.example.org"}
    behind = run_manage("shell", "-v", "0", "-c", probe, env_overrides={**env, "LOGIN_PROXY_COUNT": "1"})
    answer = behind.stdout.strip().splitlines()[-1].split(" ", 1)
    assert answer == ["200", "max-age=31536000; includeSubDomains; preload"], behind.stdout + behind.stderr
    direct = run_manage("shell", "-v", "0", "-c", probe, env_overrides={**env, "LOGIN_PROXY_COUNT": "0"})
    assert direct.stdout.strip().splitlines()[-1] == "200 None"  # a client's own header is not believed
    compose_env = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["x-app-env"]
    assert compose_env["LOGIN_PROXY_COUNT"] == "${LOGIN_PROXY_COUNT:-0}"


def test_dockerfile_installs_the_locked_requirements_with_hash_checking():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir --require-hashes -r requirements.lock" in dockerfile
    assert "collectstatic" in dockerfile
    assert dockerfile.splitlines()[0].startswith("FROM python:3.11")


def test_healthz_reports_the_database(admin_client, db):
    response = admin_client.get("/healthz/")
    assert response.status_code == 200
    assert response.json()["checks"]["database"]["status"] == "ok"


def _pins(path: Path) -> dict[str, str]:
    """name -> version of every ``name==version`` line (extras dropped, names normalised)."""
    pins = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;\\]+)", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(3)
    return pins


@pytest.mark.parametrize("pinned,lock", [("requirements.txt", "requirements.lock"),
                                         ("requirements-dev.txt", "requirements-dev.lock")])
def test_the_lock_holds_every_pin_at_its_version_and_every_package_with_hashes(pinned, lock):
    direct = _pins(ROOT / pinned) if pinned == "requirements.txt" else {**_pins(ROOT / "requirements.txt"),
                                                                        **_pins(ROOT / pinned)}
    locked = _pins(ROOT / lock)
    assert {name: locked.get(name) for name in direct} == direct  # bin/lock after changing a pin
    assert len(locked) > len(direct)  # what the pins pull in is pinned too
    entries = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / lock).read_text())
    packages = [e for e in entries if "==" in e.split("\n", 1)[0]]
    assert len(packages) == len(locked) and all("--hash=sha256:" in e for e in packages)
    assert "--require-hashes" in (ROOT / "bin" / "setup").read_text()


def test_the_two_locks_agree_on_every_package_they_share():
    runtime, dev = _pins(ROOT / "requirements.lock"), _pins(ROOT / "requirements-dev.lock")
    assert set(runtime) <= set(dev)
    assert {name: dev[name] for name in runtime} == runtime


def test_the_embedded_default_runs_without_debug_on_a_generated_secret_and_a_waiting_sqlite(tmp_path):
    """No DEBUG, SECRET_KEY or DATABASE_URL given: DEBUG is off, the secret is random, kept owner-only
    in var/ and the same on the next start, and SQLite logs ahead and waits for its write lock."""
    probe = ("from django.conf import settings; from django.db import connection; "
             "cursor = connection.cursor(); cursor.execute('PRAGMA journal_mode'); "
             "print(settings.DEBUG, len(settings.SECRET_KEY), cursor.fetchone()[0], "
             "settings.DATABASES['default']['OPTIONS']['timeout'])")
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    env.update(PLANNER_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings.base")

    def start():
        result = subprocess.run([sys.executable, "manage.py", "shell", "-c", probe], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()[-4:]

    assert start() == ["False", str(len((tmp_path / "secret_key").read_text().strip())), "wal", "20"]
    key = (tmp_path / "secret_key").read_text()
    assert len(key.strip()) >= 50 and (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    start()
    assert (tmp_path / "secret_key").read_text() == key  # kept across restarts


def test_x_forwarded_proto_is_trusted_only_behind_a_declared_proxy():
    """Without a declared proxy a client could send X-Forwarded-Proto: https and pass for HTTPS."""
    shown = {}
    for proxies in ("0", "1"):
        result = run_manage("shell", "-c", "from django.conf import settings; "
                            "print(getattr(settings, 'SECURE_PROXY_SSL_HEADER', None))",
                            env_overrides={"DJANGO_SETTINGS_MODULE": "config.settings.production",
                                           "SECRET_KEY": secrets.token_urlsafe(64), "LOGIN_PROXY_COUNT": proxies})
        assert result.returncode == 0, result.stderr
        shown[proxies] = result.stdout.strip().splitlines()[-1]
    assert shown == {"0": "None", "1": "('HTTP_X_FORWARDED_PROTO', 'https')"}
