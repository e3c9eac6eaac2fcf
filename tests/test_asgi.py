"""HTTP through the ASGI application, as Daphne serves it: the middleware chain and the view run
in one call on the sync thread (config.asgi.OneHopASGIHandler), the middleware still applies, and
the start-up heap is frozen out of the garbage collector's full collections."""
import gc
import json

import pytest
from asgiref import sync
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator

from planner.services.accounts import token_issue

# The request runs on the sync thread that async_to_sync starts, with its own connection.
ASGI_DB = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def asgi_request(path, *, method="GET", body=b"", headers=()):
    from config.asgi import application

    communicator = HttpCommunicator(application, method, path, body=body,
                                    headers=[(b"host", b"127.0.0.1"), *headers])
    return async_to_sync(communicator.get_response)()


@pytest.fixture
def sync_turns(monkeypatch):
    """Counts the calls handed from the event loop to a sync thread."""
    turns = []
    original = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        turns.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    return turns


@ASGI_DB
def test_a_request_takes_one_turn_for_the_middleware_and_view(catalog, user, sync_turns):
    token = token_issue(user)
    response = asgi_request("/api/catalog/switches/qm8700/", headers=[(b"authorization", f"Token {token}".encode())])
    assert response["status"] == 200
    assert json.loads(response["body"])["slug"] == "qm8700"
    assert sync_turns.count("BaseHandler.get_response") == 1
    # Besides it only the request-started signal and closing the response. Django's own handler
    # took 16 turns for this request: one for each middleware's process_request, process_view and
    # process_response, one for the view and one to render it, each queued behind other requests.
    assert len(sync_turns) == 3, sync_turns


@ASGI_DB
def test_the_middleware_still_answers_over_asgi(catalog, user, settings):
    headers = dict(asgi_request("/healthz/")["headers"])
    assert headers[b"X-Frame-Options"] == b"DENY" and headers[b"X-Content-Type-Options"] == b"nosniff"
    settings.API_MAX_BODY_BYTES = 100
    token = token_issue(user)
    response = asgi_request("/api/evaluate/", method="POST", body=b"{" + b" " * 200 + b"}",
                            headers=[(b"authorization", f"Token {token}".encode()),
                                     (b"content-type", b"application/json"), (b"content-length", b"202")])
    assert response["status"] == 413


def test_the_start_up_heap_is_frozen():
    import config.asgi  # noqa: F401

    assert gc.get_freeze_count() > 50_000
