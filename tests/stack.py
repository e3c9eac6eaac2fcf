"""The production-style stack as real processes, for the browser and fault tests.

Daphne (as ``config.server`` runs it, bounding request bodies) serves the ASGI app with DEBUG off
and collected static files (WhiteNoise), on a database of its own (a fresh PostgreSQL database
when DATABASE_URL names PostgreSQL, else a SQLite file) loaded with the catalogue and the given
users. With a Redis URL, Celery and the channel layer use it and a Celery worker and the
``run_twins`` driver can run beside Daphne.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
# As docker-compose.yml runs Daphne: its Apache-style access lines off (the app logs each request as JSON).
DAPHNE_LOGS = ("--access-log", "/dev/null")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh_database_url(tmp: Path, name: str) -> str:
    """A new empty database ``name`` beside DATABASE_URL's (PostgreSQL), or a SQLite file."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return f"sqlite:///{tmp / f'{name}.sqlite3'}"
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def wait_until(predicate, timeout: float, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"{what} not reached in {timeout:g} s")


class Stack:
    def __init__(self, tmp: Path, *, name: str, users: dict[str, str], redis_url: str | None = None,
                 env: dict[str, str] | None = None):
        self.tmp, self.name = tmp, name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(DJANGO_SETTINGS_MODULE="config.settings.base", DEBUG="false", SECRET_KEY="stack-" + "k" * 60,
                        ALLOWED_HOSTS="127.0.0.1,localhost", PLANNER_VAR_DIR=str(tmp / "var"),
                        STATIC_ROOT=str(tmp / "static"), DATABASE_URL=fresh_database_url(tmp, name),
                        PYTHONUNBUFFERED="1", **(env or {}))
        if redis_url:
            self.env["REDIS_URL"] = redis_url
        self.processes: dict[str, subprocess.Popen] = {}
        self._prepare(users)
        ARTIFACTS.mkdir(exist_ok=True)

    def _prepare(self, users: dict[str, str]):
        """Migrate, load the catalogue, collect the static files and make the users, in one process
        (the commands a deployment runs, without a cold start for each)."""
        script = ("import json, sys, django; django.setup(); from django.core.management import call_command; "
                  "from planner.services.accounts import demo_user_ensure; "
                  "call_command('migrate', interactive=False, verbosity=0); call_command('load_catalog'); "
                  "call_command('collectstatic', interactive=False, verbosity=0); "
                  "[demo_user_ensure(username=u, password=p) for u, p in json.loads(sys.argv[1]).items()]")
        done = subprocess.run([sys.executable, "-c", script, json.dumps(users)], cwd=ROOT, env=self.env,
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"preparing {self.name} failed: {done.stderr[-2000:]}")

    def manage(self, *args) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True)
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def start(self, role: str, *extra: str, processes: int = 1):
        """Start ``web`` (Daphne; with ``processes`` > 1, that many Daphne processes, each accepting on
        its own listening socket bound to the one port with SO_REUSEPORT, so that the kernel spreads
        new connections evenly over them), ``worker`` (Celery on the sim and default queues) or
        ``driver``."""
        if role == "web" and processes > 1:
            for i in range(processes):
                listener = socket.create_server(("127.0.0.1", self.port), backlog=512, reuse_port=True)
                command = [sys.executable, "-m", "config.server", "--fd", str(listener.fileno()), *DAPHNE_LOGS,
                           "config.asgi:application"]
                self._spawn(f"web{i}" if i else "web", command, pass_fds=(listener.fileno(),))
                listener.close()
            wait_until(self._healthy, 60, 0.3, f"{self.name} web servers")
            return
        commands = {
            "web": [sys.executable, "-m", "config.server", "-b", "127.0.0.1", "-p", str(self.port), *DAPHNE_LOGS,
                    "config.asgi:application"],
            "worker": [sys.executable, "-m", "celery", "-A", "config", "--quiet", "worker", "-Q", "sim,celery",
                       "--pool", "solo", "--without-mingle", "--without-gossip", "--loglevel", "INFO",
                       "-n", f"{self.name}@%h"],
            "driver": [sys.executable, "manage.py", "run_twins", "--tick", "0.2"],
        }
        self._spawn(role, [*commands[role], *extra])
        if role == "web":
            wait_until(self._healthy, 60, 0.3, f"{self.name} web server (see {ARTIFACTS}/{self.name}-web.log)")

    def wait_for_log(self, role: str, text: str, timeout: float = 120):
        """Wait until a process's log shows ``text`` (a worker's "ready.", say)."""
        log = ARTIFACTS / f"{self.name}-{role}.log"
        wait_until(lambda: text in log.read_text(errors="replace"), timeout, 0.3, f"{role} logging {text!r}")

    def _spawn(self, role: str, command: list[str], pass_fds=()):
        log = open(ARTIFACTS / f"{self.name}-{role}.log", "ab")
        self.processes[role] = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True, pass_fds=pass_fds)

    def _healthy(self) -> bool:
        if self.processes["web"].poll() is not None:
            raise RuntimeError(f"the web server exited; see {ARTIFACTS}/{self.name}-web.log")
        try:
            urllib.request.urlopen(self.url + "/healthz/", timeout=2)
            return True
        except OSError:
            return False

    def kill(self, role: str):
        process = self.processes.pop(role)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.processes.clear()
