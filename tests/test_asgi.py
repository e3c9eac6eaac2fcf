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


@ASGI_DB
def test_a_download_over_asgi_is_sent_part_by_part_as_the_sync_one(catalog, user, client, settings, monkeypatch):
    """Over ASGI a download's parts are pulled one by one in the request's thread (Django would
    gather a sync iterator whole first), reading the database there: the twin's events CSV arrives
    as the sync handler sends it. (tests/test_server.py measures the memory this saves.)"""
    from planner.api import downloads
    from tests.twin.test_log_ingests import BOOT_ISO, day_of_dmesg

    monkeypatch.setattr(downloads, "PART_BYTES", 2048)
    seen = []
    pull = downloads._AsyncParts.__aiter__

    def counted(self):
        seen.append(type(self).__name__)
        return pull(self)

    monkeypatch.setattr(downloads._AsyncParts, "__aiter__", counted)
    client.force_login(user)
    twin = client.post("/api/twins/", {"plan": "ff2-pcie-2zone"}, content_type="application/json").json()
    from twin.models import Twin

    log = day_of_dmesg(Twin.objects.get(pk=twin["id"]), 8000, 40).decode()
    ingested = client.post(f"/api/twins/{twin['id']}/ingest-log/", {"node": 1, "log": log, "boot_time": BOOT_ISO},
                           content_type="application/json")
    assert ingested.status_code == 201, ingested.json()
    path = f"/api/twins/{twin['id']}/events/export/"
    expected = b"".join(client.get(path).streaming_content)
    assert expected.count(b"\r\n") > 40 and seen == []  # the sync handler: a sync iterator

    from config.asgi import application

    token = token_issue(user)
    communicator = HttpCommunicator(application, "GET", path, headers=[(b"host", b"127.0.0.1"),
                                                                      (b"authorization", f"Token {token}".encode())])

    async def messages():
        await communicator.send_input({"type": "http.request"})
        start = await communicator.receive_output(10)
        bodies = []
        while True:
            message = await communicator.receive_output(10)
            bodies.append(message.get("body", b""))
            if not message.get("more_body"):
                return start, bodies

    start, bodies = async_to_sync(messages)()
    assert start["status"] == 200
    assert b"".join(bodies) == expected and seen == ["_AsyncParts"]


def test_a_socket_closing_while_the_channel_layer_times_out_logs_a_warning_not_an_error(caplog):
    """Issue 56 item 12: a Redis read timeout while a viewer leaves its group is a warning; the twin
    viewer's batching task is cancelled all the same."""
    import asyncio
    import logging
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from redis.exceptions import TimeoutError as RedisTimeout

    from twin.consumers import TwinConsumer

    class TimingOut:
        async def group_discard(self, group, channel):
            raise RedisTimeout("Timeout reading from socket")

    async def close():
        consumer = TwinConsumer()
        consumer.channel_layer, consumer.channel_name, consumer.group = TimingOut(), "c1", "twin.1"
        consumer.flusher = SimpleNamespace(cancelled=False, cancel=lambda: setattr(consumer.flusher, "cancelled", True))
        await consumer.disconnect(1001)
        return consumer.flusher.cancelled

    with caplog.at_level(logging.WARNING, logger="planner.consumers"), ThreadPoolExecutor(1) as thread:
        assert thread.submit(asyncio.run, close()).result()  # a loop of its own: a browser test's may be running
    [record] = [r for r in caplog.records if r.name == "planner.consumers"]
    assert record.levelno == logging.WARNING and "lapses by itself" in record.getMessage()
    assert not record.exc_info
