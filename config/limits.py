"""Request limits that act before a view reads anything."""
import re
import threading
from contextlib import contextmanager

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

# Kernel logs come large: a day of a node's dmesg runs to 100,000 lines (about 9 MB).
KERNEL_LOG_PATH = re.compile(r"^/api/twins/\d+/ingest-log/$")


def body_limit(path: str, credentials: bool = True) -> tuple[int, str]:
    """The largest request body this path takes, and the setting that says so: a request carrying no
    credentials (no Authorization header, no session cookie) ANONYMOUS_MAX_BODY_BYTES, whatever its
    path (logging in takes a few hundred bytes, and nobody else may send anything); else
    KERNEL_LOG_MAX_BYTES for a kernel-log upload, API_MAX_BODY_BYTES for anything else."""
    if not credentials:
        return settings.ANONYMOUS_MAX_BODY_BYTES, "ANONYMOUS_MAX_BODY_BYTES"
    if KERNEL_LOG_PATH.match(path):
        return settings.KERNEL_LOG_MAX_BYTES, "KERNEL_LOG_MAX_BYTES"
    return settings.API_MAX_BODY_BYTES, "API_MAX_BODY_BYTES"


def too_large_detail(length: int | None, limit_bytes: int, setting: str) -> str:
    size = "request body" if length is None else f"request body of {length:,} bytes"
    where = "without credentials: sign in or send a token" if setting == "ANONYMOUS_MAX_BODY_BYTES" else "here"
    return f"{size}; at most {limit_bytes:,} bytes {where} ({setting})"


class NulQueryMiddleware:
    """Answer 400 to a query parameter holding a NUL character, naming it: no view could use it
    (PostgreSQL's text cannot hold NUL; a lookup with one answered 500), and none is typed by hand."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        refused = {name: ["contains a NUL character"] for name, values in request.GET.lists()
                   if "\x00" in name or any("\x00" in value for value in values)}
        if refused:
            return JsonResponse(refused, status=400)
        return self.get_response(request)


class BodySizeLimitMiddleware:
    """Answer 413 to a request whose declared body is larger than its limit (:func:`body_limit`),
    before the body is read. Under ``config.server`` the server has refused it already, chunked bodies included;
    this covers other ASGI and WSGI servers (where a body without a declared length is held to
    DATA_UPLOAD_MAX_MEMORY_SIZE by Django, which answers 400). The smaller limit of callers without
    credentials is the server's alone: it is what keeps their bodies from being read at all."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "Content-Length must be a whole number of bytes"}, status=400)
        limit_bytes, setting = body_limit(request.path)
        if length > limit_bytes:
            return JsonResponse({"detail": too_large_detail(length, limit_bytes, setting)}, status=413)
        return self.get_response(request)


_turns: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_turns_lock = threading.Lock()


def process_turns(name: str, count: int) -> threading.BoundedSemaphore:
    """This process's ``count`` turns at the work ``name`` (logins checked, engine requests run)."""
    with _turns_lock:
        return _turns.setdefault((name, count), threading.BoundedSemaphore(count))


@contextmanager
def turn(name: str, count: int, wait_s: float):
    """Hold one of this process's ``count`` turns at ``name`` for the block, waiting at most
    ``wait_s`` for it: yields whether one came. The request's database connection (opened already
    by its token or session lookup) goes back to the pool before it waits, and the block's before
    its turn does, so that only the turns' holders hold connections: waiters hold none."""
    turns = process_turns(name, count)
    _give_back_connection()
    if not turns.acquire(timeout=wait_s):
        yield False
        return
    try:
        yield True
    finally:
        _give_back_connection()
        turns.release()


def _give_back_connection() -> None:
    """Return this thread's database connection to the pool (it opens again at its next query);
    a test's transaction keeps its connection."""
    if not connection.in_atomic_block:
        connection.close()
