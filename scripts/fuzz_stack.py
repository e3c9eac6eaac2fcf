"""Schemathesis against the production-style stack, by hand before a release (CI runs the in-process
fuzz of tests/test_api_fuzz.py; this one needs minutes).

Starts the stack of the browser and fault tests (tests/stack.py: Daphne as ``config.server`` runs
it, a Celery worker, PostgreSQL and Redis, the shared Redis cache as in docker-compose.yml) on a
database of its own, signs one user in and runs ``st run`` on the OpenAPI schema with every phase
(examples, coverage, fuzzing and the stateful phase, which creates objects and follows links),
``--workers`` at once, for ``--seconds``, checking that nothing answers a server error. Prints
Schemathesis's summary and the 5xx lines the web server logged. Needs a PostgreSQL DATABASE_URL
and REDIS_URL:

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379/0 \\
      .venv/bin/python scripts/fuzz_stack.py [--seconds 600] [--workers 2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.stack import ARTIFACTS, Stack  # noqa: E402

USER, PASSWORD = "fuzzer", "pw-fuzzer-stack-1234"


def token_for(stack: Stack) -> str:
    request = urllib.request.Request(stack.url + "/api/auth/token/", method="POST",
                                     headers={"Content-Type": "application/json"},
                                     data=json.dumps({"username": USER, "password": PASSWORD}).encode())
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())["token"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    redis = os.environ["REDIS_URL"].rsplit("/", 1)[0]
    web_log = ARTIFACTS / "planner_fuzz-web.log"
    earlier_bytes = web_log.stat().st_size if web_log.exists() else 0  # the stack appends to its logs
    stack = Stack(Path(tempfile.mkdtemp()), name="planner_fuzz", users={USER: PASSWORD}, redis_url=f"{redis}/5",
                  env={"CACHE_URL": f"{redis}/6"})
    try:
        stack.start("web")
        stack.start("worker")
        command = [str(ROOT / ".venv/bin/st"), "run", stack.url + "/api/schema/", "-H",
                   f"Authorization: Token {token_for(stack)}", "--checks", "not_a_server_error",
                   "--workers", str(args.workers), "--max-time", str(args.seconds),
                   "--phases", "examples,coverage,fuzzing,stateful", "--continue-on-failure",
                   "--request-timeout", "60", "--warnings", "off"]
        done = subprocess.run(command, cwd=ROOT)
    finally:
        stack.stop()
    with open(web_log, "rb") as file:
        file.seek(earlier_bytes)
        log = file.read().decode(errors="replace").splitlines()
    server_errors = [line for line in log if '"status": 5' in line]
    print(f"server errors the web logged: {len(server_errors)}")
    print("\n".join(server_errors[:20]))
    return done.returncode or bool(server_errors)


if __name__ == "__main__":
    sys.exit(main())
