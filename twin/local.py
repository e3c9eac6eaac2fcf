"""The embedded default's driver: without Redis the web process drives running twins itself in a
background thread, so that its in-memory channel layer reaches the viewers."""
import threading

from django.conf import settings
from django.db import close_old_connections

from twin.services.driver import Driver

_lock = threading.Lock()
_thread: threading.Thread | None = None


def _loop(driver: Driver):
    while True:
        try:
            driver.tick()
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
