"""Helpers shared by the websocket tests."""
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client

HOST = (b"host", b"localhost")  # the address a browser on a page of http://localhost connects to
ANONYMOUS = [(b"origin", b"http://localhost"), HOST]


def session_headers(user, origin: bytes = b"http://localhost") -> list[tuple[bytes, bytes]]:
    """Headers of a browser signed in as ``user`` on a page of http://localhost: an Origin, its
    session cookie and the Host it connects to."""
    client = Client()
    client.force_login(user)
    return [(b"origin", origin), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()), HOST]


def connect_attempt(application, path: str, headers) -> tuple[bool, int]:
    """Open the websocket at ``path`` with ``headers`` and close it again: (accepted, close code)."""
    async def attempt():
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return connected, code

    return async_to_sync(attempt)()
