"""Benchmark: POST /api/plans/<slug>/evaluate/ through the whole Django stack (middleware,
authentication, ORM, adapter, engine, JSON), in process, against the configured database.

Usage: .venv/bin/python scripts/bench_api.py [--plan ff2-pcie-2zone] [--workload SLUG] [--requests 50]
Prints the median, 95th percentile and maximum latency of new evaluations (the evaluation cache
cleared before each request) and of repeated ones (served from the cache). Uses DATABASE_URL like
the app; the catalogue is loaded first (idempotent) and a benchmark user is created if missing.
"""
import argparse
import statistics
import sys
import time

from benchsetup import bench_user


def main() -> int:
    user = bench_user()
    from django.core.cache import cache
    from rest_framework.test import APIClient

    from planner.services.accounts import token_issue

    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", default="ff2-pcie-2zone")
    parser.add_argument("--workload")
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()

    client = APIClient(SERVER_NAME="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user, name='bench')}")
    body = {"workload": args.workload} if args.workload else {}
    url = f"/api/plans/{args.plan}/evaluate/"
    first = client.post(url, body, format="json")
    if first.status_code != 200:
        print(f"error: {first.status_code} {first.content[:300]!r}", file=sys.stderr)
        return 1
    for label, fresh in (("new document", True), ("repeated document", False)):
        times_ms = []
        for _ in range(args.requests):
            if fresh:
                cache.clear()
            start = time.perf_counter()
            response = client.post(url, body, format="json")
            times_ms.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
        times_ms.sort()
        p95 = times_ms[int(0.95 * (len(times_ms) - 1))]
        print(f"POST {url} {body or ''} ({label}): {args.requests} requests, "
              f"median {statistics.median(times_ms):.1f} ms, p95 {p95:.1f} ms, max {times_ms[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
