"""Shared start of the benchmark scripts: Django set up on the configured database, migrated,
the catalogue loaded (idempotent) and a "bench" user."""
import os
import sys
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
