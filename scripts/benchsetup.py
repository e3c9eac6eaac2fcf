"""Shared start of the benchmark scripts: Django set up on the configured database, migrated,
the catalogue loaded (idempotent) and a "bench" user."""
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_user():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_catalog", verbosity=0)
    return get_user_model().objects.get_or_create(username="bench")[0]


def rss_bytes(pid: int | str = "self") -> int:
    """A process's resident memory (this one's by default)."""
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


class PeakMemory:
    """The highest resident memory of a process (this one by default) while the block runs,
    sampled on a thread every ``interval_s``."""

    def __init__(self, pid: int | str = "self", interval_s: float = 0.005):
        self.pid, self.interval_s = pid, interval_s

    def __enter__(self):
        self.base = self.peak = rss_bytes(self.pid)
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while self.running:
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(self.interval_s)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()
