"""Retention: what is kept, and for how long (settings ``RETENTION_*_DAYS``; 0 keeps forever).

Each app registers what it keeps (:func:`register_retention`, from its ``AppConfig.ready``), and
:func:`retention_enforce` runs every registered policy in one transaction, hourly by Celery beat or by
``manage.py enforce_retention``. The planner's own:

* Finished sweeps (done, failed or cancelled) whose finish is older than RETENTION_SWEEP_DAYS, with
  their stored chunks; a sweep still shown by a newer one that reused its results is kept.
* Finished trace reads (their measurements stay) likewise older than RETENTION_SWEEP_DAYS.

The twin's are in :mod:`twin.services.retention`.
"""
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from planner.models import Sweep, TraceRead

RetentionPolicy = Callable[[datetime], dict[str, int]]
_policies: list[RetentionPolicy] = []


def register_retention(policy: RetentionPolicy) -> None:
    """Have :func:`retention_enforce` run ``policy(now)``, which deletes what its app no longer keeps
    and returns how many rows of each kind went (registering one twice runs it once)."""
    if policy not in _policies:
        _policies.append(policy)


def retention_cutoff(now: datetime, days: float) -> datetime | None:
    """The time before which rows kept ``days`` days go; None when 0 keeps them forever."""
    return None if days <= 0 else now - timedelta(days=days)


def planner_retention(now: datetime) -> dict[str, int]:
    """The planner's policy: expired finished sweeps and trace reads."""
    removed = {"sweeps": 0, "trace_reads": 0}
    if cutoff := retention_cutoff(now, settings.RETENTION_SWEEP_DAYS):
        expired = Sweep.objects.filter(status__in=Sweep.FINAL).filter(
            Q(finished_at__lt=cutoff) | Q(finished_at__isnull=True, created_at__lt=cutoff))
        # Reusers first (their results live in the sweep they reused), then every expired sweep that
        # no kept sweep still reuses.
        for rows in (expired.filter(reused_from__isnull=False), expired.filter(reused_by__isnull=True)):
            removed["sweeps"] += Sweep.objects.filter(pk__in=list(rows.values_list("pk", flat=True))).delete()[1].get(
                "planner.Sweep", 0)
        removed["trace_reads"] = TraceRead.objects.filter(finished_at__lt=cutoff).delete()[0]
    return removed


@transaction.atomic
def retention_enforce(*, now: datetime | None = None) -> dict[str, int]:
    """Delete what is older than the retention settings, by every registered policy; returns how many
    rows of each kind went."""
    now = now or timezone.now()
    removed = {}
    for policy in _policies:
        removed.update(policy(now))
    return removed
