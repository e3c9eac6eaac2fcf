"""The live stack for the browser tests (tests/stack.py), and Debian's Chromium driven by Playwright.

With REDIS_URL set, the stack uses Redis (database 7, flushed first) and runs a real Celery worker
and the ``run_twins`` driver beside Daphne; without it, sweeps run in the web process and twins on
its driver thread, as the embedded default does.
"""
import os
import shutil
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.stack import ARTIFACTS, Stack

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
    redis_url = _redis_url()
    stack = Stack(tmp_path_factory.mktemp("e2e"), name="planner_e2e", redis_url=redis_url,
                  users={USERNAME: PASSWORD, VIEWER: VIEWER_PASSWORD})
    try:
        stack.start("web")
        if redis_url:
            stack.start("worker")
            stack.start("driver")
        yield stack.url
    finally:
        stack.stop()


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
        page.on("response", self._response)

    def _console(self, message):
        if message.type == "error" and message.text != EXPECTED_CONSOLE:
            source = message.location.get("url", "")
            self.problems.append(f"console error on {self.page.url}: {message.text} ({source})")

    def _response(self, response):
        """Names the address of a failed response (the console error that goes with it does not)."""
        if response.status >= 400 and response.status != 400:
            self.problems.append(f"HTTP {response.status}: {response.request.method} {response.url}")

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
    for context, _ in tabs:
        context.close()
    problems = [problem for _, tab in tabs for problem in tab.problems]
    assert not problems, f"browser console errors: {problems}"


@pytest.fixture
def page(open_tab):
    return open_tab()
