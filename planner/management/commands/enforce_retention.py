from django.core.management.base import BaseCommand

from planner.services.retention import retention_enforce


class Command(BaseCommand):
    help = ("Delete finished sweeps and trace reads, twin events, samples and kernel-log ingests older than the "
            "RETENTION_*_DAYS settings "
            "(Celery beat runs this hourly when Redis is configured).")

    def handle(self, *args, **options):
        removed = retention_enforce()
        counts = ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in removed.items())
        self.stdout.write(f"{counts} removed")
