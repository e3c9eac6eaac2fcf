"""Retention: what the planner keeps, and for how long (settings ``RETENTION_*_DAYS``; 0 keeps forever).

* Finished sweeps (done, failed or cancelled) whose finish is older than RETENTION_SWEEP_DAYS, with
  their stored chunks; a sweep still shown by a newer one that reused its results is kept.
* Twin events and twin samples written longer ago than RETENTION_TWIN_EVENT_DAYS and
  RETENTION_TWIN_SAMPLE_DAYS; the twins themselves, and their saved state, stay.
* Finished kernel-log ingests (their reports list the events they made) with the twin events:
  finished longer ago than RETENTION_TWIN_EVENT_DAYS.
"""
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from planner.models import Sweep
from twin.models import LogIngest, TwinEvent, TwinSample


def _cutoff(now: datetime, days: float) -> datetime | None:
    return None if days <= 0 else now - timedelta(days=days)


@transaction.atomic
def retention_enforce(*, now: datetime | None = None) -> dict[str, int]:
    """Delete what is older than the retention settings; returns how many rows of each kind went."""
    now = now or timezone.now()
    removed = {"sweeps": 0, "twin_events": 0, "twin_samples": 0, "log_ingests": 0}
    if cutoff := _cutoff(now, settings.RETENTION_SWEEP_DAYS):
        expired = Sweep.objects.filter(status__in=Sweep.FINAL).filter(
            Q(finished_at__lt=cutoff) | Q(finished_at__isnull=True, created_at__lt=cutoff))
        # Reusers first (their results live in the sweep they reused), then every expired sweep that
        # no kept sweep still reuses.
        for rows in (expired.filter(reused_from__isnull=False), expired.filter(reused_by__isnull=True)):
            removed["sweeps"] += Sweep.objects.filter(pk__in=list(rows.values_list("pk", flat=True))).delete()[1].get(
                "planner.Sweep", 0)
    if cutoff := _cutoff(now, settings.RETENTION_TWIN_EVENT_DAYS):
        removed["twin_events"] = TwinEvent.objects.filter(created_at__lt=cutoff).delete()[0]
        removed["log_ingests"] = LogIngest.objects.filter(finished_at__lt=cutoff).delete()[0]
    if cutoff := _cutoff(now, settings.RETENTION_TWIN_SAMPLE_DAYS):
        removed["twin_samples"] = TwinSample.objects.filter(created_at__lt=cutoff).delete()[0]
    return removed
