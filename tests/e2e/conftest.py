"""A live stack for the browser tests, and Debian's Chromium driven by Playwright.

The stack is the production-style server: Daphne serving the ASGI app with DEBUG off and static
files collected (WhiteNoise), on a database of its own (a fresh PostgreSQL database when
DATABASE_URL names PostgreSQL, else a SQLite file) loaded with the catalogue and one user. With
REDIS_URL set, the channel layer and Celery use Redis (database 7, flushed first), and a real
Celery worker and the ``run_twins`` driver run beside Daphne; without it, sweeps run in the web
process and twins on its driver thread, as the embedded default does.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
USERNAME, PASSWORD = "architect", "pw-architect-e2e-1234"
VIEWER, VIEWER_PASSWORD = "viewer", "pw-viewer-e2e-1234"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", "--disable-dev-shm-usage"]



def pytest_collection_modifyitems(config, items):
    if os.path.exists(CHROMIUM):
        return
    if os.environ.get("REQUIRE_BROWSER"):
        raise pytest.UsageError(f"REQUIRE_BROWSER is set but {CHROMIUM} is missing (apt-get install chromium)")
    skip = pytest.mark.skip(reason="needs Debian's chromium (bin/test installs it)")
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(skip)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url(tmp: Path) -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return f"sqlite:///{tmp / 'e2e.sqlite3'}"
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS planner_e2e WITH (FORCE)")
        conn.execute("CREATE DATABASE planner_e2e")
    return urlunsplit(parts._replace(path="/planner_e2e"))


def _redis_url() -> str | None:
    url = os.environ.get("REDIS_URL")
    if not url:
        return None
    url = urlunsplit(urlsplit(url)._replace(path="/7"))
    import redis

    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="session")
def live_server_url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.base", DEBUG="false", SECRET_KEY="e2e-" + "k" * 60,
               ALLOWED_HOSTS="127.0.0.1,localhost", PLANNER_VAR_DIR=str(tmp / "var"), STATIC_ROOT=str(tmp / "static"),
               DATABASE_URL=_database_url(tmp), PYTHONUNBUFFERED="1")
    redis_url = _redis_url()
    if redis_url:
        env["REDIS_URL"] = redis_url
    manage = [sys.executable, "manage.py"]
    for command in (["migrate", "--noinput"], ["load_catalog"], ["collectstatic", "--noinput"],
                    ["ensure_demo_user", "--username", USERNAME, "--password", PASSWORD],
                    ["ensure_demo_user", "--username", VIEWER, "--password", VIEWER_PASSWORD]):
        subprocess.run(manage + command, cwd=ROOT, env=env, check=True, capture_output=True)
    commands = [[sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"]]
    if redis_url:
        commands += [[sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "sim,celery", "--pool", "solo",
                      "--without-mingle", "--without-gossip", "--loglevel", "INFO"],
                     manage + ["run_twins", "--tick", "0.2"]]
    ARTIFACTS.mkdir(exist_ok=True)
    processes = []
    for i, command in enumerate(commands):
        log = open(ARTIFACTS / f"e2e-process-{i}.log", "wb")
        processes.append(subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/healthz/", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or processes[0].poll() is not None:
                raise RuntimeError(f"the server did not start; see {ARTIFACTS}/e2e-process-0.log") from None
            time.sleep(0.3)
    yield base
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# Chromium logs every 4xx/5xx response as a console error. A 400 is the API's designed answer to
# bad input (the plan builder shows its field errors), so only that one is expected.
EXPECTED_CONSOLE = "Failed to load resource: the server responded with a status of 400 (Bad Request)"


class Page:
    """A browser tab that records JavaScript errors (console errors, uncaught exceptions, failed
    responses other than the API's 400s) and saves screenshots."""

    def __init__(self, page, base_url, name):
        self.page, self.base, self.name = page, base_url, name
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.problems.append(f"uncaught: {e}"))

    def _console(self, message):
        if message.type == "error" and message.text != EXPECTED_CONSOLE:
            self.problems.append(f"console error: {message.text}")

    def goto(self, path):
        self.page.goto(self.base + path)

    def shot(self, step):
        self.page.screenshot(path=str(ARTIFACTS / f"{self.name}-{step}.png"), full_page=True)

    def login(self, username=USERNAME, password=PASSWORD):
        self.goto("/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("main button[type=submit]")
        self.page.wait_for_url(self.base + "/")


@pytest.fixture
def open_tab(browser, live_server_url, request):
    """Opens tabs, each in its own browser context (its own login); fails the test if any logged errors."""
    tabs = []

    def open_tab(suffix=""):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        tab = Page(context.new_page(), live_server_url, request.node.name + suffix)
        tab.page.set_default_timeout(30_000)
        tabs.append((context, tab))
        return tab

    yield open_tab
    for context, tab in tabs:
        context.close()
    problems = [problem for _, tab in tabs for problem in tab.problems]
    assert not problems, f"browser console errors: {problems}"


@pytest.fixture
def page(open_tab):
    return open_tab()
