"""Benchmark: a site-first plan for a 20 MW site and a Llama 3 70B-class goal, from the POST to the
ranked builds, on the stack as deployed (``config.server`` and one Celery worker, tests/stack.py)
over Redis (REDIS_URL, else redis://127.0.0.1:6379/6) and PostgreSQL when DATABASE_URL names it,
else SQLite. Prints the points, the chunks, the seconds from the POST's answer to the sweep done,
and the top of the ranking:
  .venv/bin/python scripts/bench_site.py
"""
import datetime
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.stack import Stack  # noqa: E402

USER = {"bench-site": "pw-bench-site-1234"}
TOKEN = """
from django.contrib.auth import get_user_model
from planner.services.accounts import token_issue
print("token", token_issue(get_user_model().objects.get(username="bench-site")))
"""
SITE = {"price_book": "usd-2026",
        "facility": {"power_mw": 20, "floor_racks": 400, "rack_power_kw": 130, "cooling": "liquid",
                     "hall": "hyperscale", "storage_write_gbyte_s": 2000},
        "goal": {"workload": "llama3-70b-class-1152", "objective": "by_date",
                 "deadline": (datetime.date.today() + datetime.timedelta(days=365)).isoformat()}}


def call(url: str, token: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


def main():
    stack = Stack(Path(tempfile.mkdtemp()), name="planner_bench_site", users=USER,
                  redis_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/6"))
    try:
        token = next(line.split()[1] for line in stack.manage("shell", "-c", TOKEN).splitlines()
                     if line.startswith("token "))
        stack.start("web")
        stack.start("worker")
        stack.wait_for_log("worker", "ready.")
        began = time.perf_counter()
        sweep = call(stack.url + "/api/sweeps/site/", token, SITE)
        posted = time.perf_counter()
        while sweep["status"] not in ("done", "failed", "cancelled"):
            time.sleep(0.2)
            sweep = call(f"{stack.url}/api/sweeps/{sweep['id']}/", token)
        done = time.perf_counter()
        print(f"points {sweep['total_points']:,} in {sweep['chunk_count']} chunks; status {sweep['status']}")
        print(f"POST answered in {posted - began:.1f} s; ranked builds {done - began:.1f} s after the POST")
        for rank, row in enumerate(sweep["site_result"]["builds"][:5], start=1):
            print(f"{rank}. {row['name']}, {row['layers']} layers, {row['ownership']}: {row['gpus']:,.0f} GPUs, "
                  f"{row['time_to_train_days']:.0f} days, cost {row['cost']:,.0f}; binds: {row['binding']['limit']}")
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
