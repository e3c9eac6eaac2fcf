"""Large downloads (sweep exports, twin event logs): sent as they are produced, in bounded memory,
and no more than one at a time per user, counted until the last byte is sent.

Under ASGI, Django gathers a synchronous iterator whole before sending any of it (three 1M-point
CSVs at once added 1.96 GB to the server). Here each part is pulled in a worker thread by an
asynchronous iterator instead, and ``config.server`` holds the next part back while the client has
not read the last (a push producer on the connection), so a download holds one part in memory. The
user's slot (in the shared cache) is taken before the file is built and freed when the response
closes: sent, abandoned by its client, or failed. A process builds one file at a time: a build is
CPU-bound (about 3 s for a 1M-point CSV), so builds in turn end about as soon as builds side by
side would, in the memory of one (three side by side grew the server by 220 MB, measured with
scripts/bench_downloads.py)."""
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from asgiref.sync import sync_to_async
from django.core.cache import cache
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from rest_framework.exceptions import Throttled

from planner.api.limits import CacheUnavailable

PART_BYTES = 256 * 1024
# A slot outlives a process killed while sending by this much at most.
SLOT_TIMEOUT_S = 3600
_BUILDING = threading.Lock()


class _Parts:
    """A download's parts; Django calls ``close`` when the response ends, which frees the slot."""

    def __init__(self, parts: Iterable[bytes], release: Callable[[], None]):
        self._parts: Iterator[bytes] = iter(parts)
        self._release = release

    def close(self):
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()
        self._release()


class _SyncParts(_Parts):
    def __iter__(self):
        return self._parts


class _AsyncParts(_Parts):
    async def __aiter__(self):
        pull = sync_to_async(next)  # thread-sensitive: the request's thread, its database connection
        while (part := await pull(self._parts, None)) is not None:
            yield part


def file_parts(file) -> Iterator[bytes]:
    """A file's content, PART_BYTES at a time; the file is closed at the end."""
    with file:
        while part := file.read(PART_BYTES):
            yield part


def text_parts(texts: Iterable[str]) -> Iterator[bytes]:
    """Text blocks as UTF-8, gathered into parts of about PART_BYTES."""
    held, size = [], 0
    for text in texts:
        held.append(data := text.encode())
        size += len(data)
        if size >= PART_BYTES:
            yield b"".join(held)
            held, size = [], 0
    if held:
        yield b"".join(held)


def export_slot(user) -> Callable[[], None]:
    """Take the user's download slot, or refuse: 429 while another download of theirs is being built
    or sent, 503 when the shared cache cannot be reached. Returns what frees it (once)."""
    key = f"download:{user.pk}"
    if not cache.add(key, 1, timeout=SLOT_TIMEOUT_S):
        if cache.get(key) is None:
            raise CacheUnavailable()
        raise Throttled(detail="a download of yours is being built or sent; finish or cancel it, then ask for "
                               "the next")
    freed = []

    def release():
        if not freed:
            freed.append(True)
            cache.delete(key)
    return release


def download(request, build: Callable[[], IO[bytes] | Iterable[str]], *, content_type: str,
             filename: str) -> StreamingHttpResponse:
    """A streamed attachment of what ``build()`` returns (a file, sent with its length, or blocks
    of text), holding the user's slot from the build to the end of the response."""
    release = export_slot(request.user)
    try:
        with _BUILDING:
            built = build()
    except BaseException:
        release()
        raise
    parts = file_parts(built) if hasattr(built, "read") else text_parts(built)
    asgi = isinstance(getattr(request, "_request", request), ASGIRequest)
    response = StreamingHttpResponse((_AsyncParts if asgi else _SyncParts)(parts, release), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    if hasattr(built, "fileno"):
        response["Content-Length"] = os.fstat(built.fileno()).st_size
    return response
