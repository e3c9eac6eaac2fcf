"""The twin's retention (registered with :func:`planner.services.retention.register_retention`):

* Twin events and twin samples written longer ago than RETENTION_TWIN_EVENT_DAYS and
  RETENTION_TWIN_SAMPLE_DAYS; the twins themselves, and their saved state, stay.
* Finished kernel-log ingests (their reports list the events they made) with the twin events:
  finished longer ago than RETENTION_TWIN_EVENT_DAYS.
"""
from datetime import datetime

from django.conf import settings

from planner.services.retention import retention_cutoff
from twin.models import LogIngest, TwinEvent, TwinSample


def twin_retention(now: datetime) -> dict[str, int]:
    removed = {"twin_events": 0, "twin_samples": 0, "log_ingests": 0}
    if cutoff := retention_cutoff(now, settings.RETENTION_TWIN_EVENT_DAYS):
        removed["twin_events"] = TwinEvent.objects.filter(created_at__lt=cutoff).delete()[0]
        removed["log_ingests"] = LogIngest.objects.filter(finished_at__lt=cutoff).delete()[0]
    if cutoff := retention_cutoff(now, settings.RETENTION_TWIN_SAMPLE_DAYS):
        removed["twin_samples"] = TwinSample.objects.filter(created_at__lt=cutoff).delete()[0]
    return removed
