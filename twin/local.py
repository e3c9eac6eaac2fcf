"""The embedded default's driver: without Redis the web process drives running twins itself in a
background thread, so that its in-memory channel layer reaches the viewers."""
import logging
import threading

from django.conf import settings
from django.core.signals import request_started
from django.db import DatabaseError, close_old_connections

from twin.services.driver import Driver

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_thread: threading.Thread | None = None


def _loop(driver: Driver):
    """Tick for ever: a database error (SQLite's "database is locked" under a neighbour's write, a
    dropped connection) is logged and the next tick tries again, so running twins never freeze."""
    while True:
        try:
            driver.tick()
        except DatabaseError as error:
            logger.warning("twin driver tick failed, retrying: %s", error)
        finally:
            close_old_connections()
        threading.Event().wait(driver.tick_s)


def ensure_local_driver() -> bool:
    """Start the in-process driver once, when no Redis carries work to a separate driver."""
    global _thread
    if settings.REDIS_URL:
        return False
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, args=(Driver(),), name="twin-driver", daemon=True)
            _thread.start()
    return True


def resume_running_twins(**_) -> None:
    """On the process's first request, start the driver if twins were left running (a restart of the
    web process must not leave them frozen until someone presses Start again)."""
    request_started.disconnect(resume_running_twins)
    if settings.REDIS_URL:
        return
    from twin.models import Twin

    try:
        running = Twin.objects.filter(status=Twin.Status.RUNNING).exists()
    except DatabaseError:  # not migrated yet: nothing is running
        return
    if running:
        ensure_local_driver()
