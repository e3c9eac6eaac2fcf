"""Issue 69 item 9: quotas that hold under concurrency. Requests of one user that each pass the quota's
count before any of them inserts (a pause between the count and the insert opens that window) make at
most the quota: the count is taken again, and the insert made, on the owner's row locked
(planner.services.quotas)."""
import os
import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from planner.models import ClusterPlan, MeasuredRun, Sweep, Workload
from planner.services import runs, sweeps

POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
RACE = (pytest.mark.skipif(not POSTGRES, reason="the race needs PostgreSQL's concurrent transactions; CI sets "
                                                "DATABASE_URL"),
        pytest.mark.django_db(transaction=True, serialized_rollback=True))


def at_once(count: int, work) -> list:
    """``work(i)`` in ``count`` threads started together: each one's result or the exception it raised."""
    results = [None] * count
    start = threading.Barrier(count, timeout=30)

    def run(i):
        start.wait()
        try:
            results[i] = work(i)
        except Exception as error:  # noqa: BLE001 - the refusals are what is counted
            results[i] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def slow_between_count_and_insert(monkeypatch, module, name):
    """The quota's count followed by a pause: without the lock every racer counts before any inserts."""
    check = getattr(module, name)

    def paused(*args, **kwargs):
        check(*args, **kwargs)
        time.sleep(0.5)

    monkeypatch.setattr(module, name, paused)


@RACE[0]
@RACE[1]
def test_runs_created_at_once_stop_at_the_bound(monkeypatch):
    owner = get_user_model().objects.create_user("racer", password="pw-racer-1234")
    plan = ClusterPlan.objects.get(slug="dgx-a100-3layer")
    plan.pk, plan.slug, plan.owner, plan.visibility, plan.node_count = None, "racer-dgx", owner, "private", 64
    plan.save()
    workload = Workload.objects.get(slug="llama-13b-512")
    monkeypatch.setattr(runs, "MAX_RUNS_PER_USER", 3)
    slow_between_count_and_insert(monkeypatch, runs, "_room_for_one_more")
    made = at_once(8, lambda i: runs.run_create(owner=owner, plan=plan, workload=workload, measured_s=10.0 + i,
                                                source="our cluster"))
    assert MeasuredRun.objects.filter(owner=owner).count() == 3
    refused = [r for r in made if not isinstance(r, MeasuredRun)]
    assert len(refused) == 5 and all(getattr(r, "status", None) == 409 for r in refused), refused


@RACE[0]
@RACE[1]
def test_sweeps_submitted_at_once_stay_within_the_points_quota(monkeypatch, settings):
    owner = get_user_model().objects.create_user("racer", password="pw-racer-1234")
    plan, workload = ClusterPlan.objects.get(slug="ff2-pcie-2zone"), Workload.objects.get(slug="llama-13b-512")
    settings.SWEEP_USER_MAX_QUEUED_POINTS = 2_000
    slow_between_count_and_insert(monkeypatch, sweeps, "check_quotas")
    made = at_once(2, lambda i: sweeps.sweep_record(owner=owner, plan=plan, workload=workload, name=f"s{i}",
                                                    base={"i": i}, spec={"axes": {"i": [i]}}, size=1_200))
    assert Sweep.objects.filter(owner=owner).count() == 1, made
    assert sum(getattr(r, "status", None) == 429 for r in made) == 1


@pytest.mark.django_db
def test_a_lock_is_a_lease_renewed_while_held_and_freed_soon_after_its_holder_dies():
    """Issue 69 item 8: a web process killed while it holds a twin's ingest lock held the twin for 600 s.
    The lock is now a lease renewed while its block runs: held as long as the block, gone within a lease
    once nobody renews it."""
    from django.core.cache import cache
    from rest_framework.exceptions import APIException

    from planner.api.limits import one_at_a_time

    class Busy(APIException):
        status_code = 409

    with one_at_a_time("lease-test", Busy(), lease_s=0.3):
        time.sleep(1.0)  # three leases: renewed meanwhile
        with pytest.raises(Busy), one_at_a_time("lease-test", Busy(), lease_s=0.3):
            pass
    assert cache.get("lease-test") is None  # freed as the block ends
    # A holder that died: its key taken for one lease and never renewed.
    assert cache.add("lease-test", 1, timeout=0.3)
    time.sleep(0.5)
    with one_at_a_time("lease-test", Busy(), lease_s=0.3):
        assert cache.get("lease-test") == 1
