"""The web server: Daphne, with each request body bounded while it arrives, and each response body
held back while its client is not reading.

Daphne hands a request to the application only once Twisted has received its whole body, and then
queues that body in memory, so a limit checked by the application comes too late (a 3 GB POST left
the process at 3.45 GB before its 413; a chunked body of any size was read in full). Here the body
is counted as it arrives: a declared length over its limit (``config.limits.body_limit``: the path's,
or a small one for a caller who sends no credentials) is answered 413 before one byte of the body is
read, and a body without a declared length (chunked) is answered 413 and the connection closed the
moment it passes the limit. Twisted's own parsing of form bodies on the event loop is turned off.

Daphne also writes every part of a response to the connection as the application sends it, so a
client that does not read makes the server hold the whole response. Here each response registers a
push producer on its connection: Twisted pauses it when the connection's send buffer is full and
resumes it when the buffer drains, and the server's ``send`` waits for it before it returns, so an
application streaming a download (``planner.api.downloads``) is held to the client's pace.

Run it as Daphne: ``python -m config.server [daphne's options] config.asgi:application``.
"""
import asyncio
import io
import json
import sys

from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from django.conf import settings

from config.limits import body_limit, too_large_detail


class Drain:
    """A push producer on a response's connection: ``writable`` is clear while the connection's send
    buffer is full."""

    def __init__(self):
        self.writable = asyncio.Event()
        self.writable.set()

    def pauseProducing(self):
        self.writable.clear()

    def resumeProducing(self):
        self.writable.set()

    def stopProducing(self):
        self.writable.set()  # the connection is gone: nothing more will be written to it


class BoundedRequest(WebRequest):
    """A Daphne request whose body may not pass its limit (``config.limits.body_limit``: small for a
    caller with no credentials), whose form body Twisted leaves unparsed, and whose response's drain
    the server waits on."""

    limit_bytes = 0
    limit_setting = ""
    received_bytes = 0
    refused = False
    drain = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Twisted would parse a multipart or urlencoded POST body into ``args`` on the reactor
        # thread before handing the request on, stalling every connection of the process (30 MiB
        # of newlines took 16 s); Daphne never reads ``args``, and Django parses the body itself.
        self._parsePOSTFormSubmission = False

    def gotLength(self, length):
        path = self.channel._path.decode("latin-1").split("?", 1)[0]
        self.limit_bytes, self.limit_setting = body_limit(path, self.carries_credentials())
        super().gotLength(length)
        if length is not None and length > self.limit_bytes:
            self.refuse(length)

    def carries_credentials(self) -> bool:
        """Whether the request says who sends it: an Authorization header or a session cookie.
        Whether they are valid is Django's to judge; without either, the sender is anonymous."""
        return (self.requestHeaders.hasHeader(b"authorization")
                or settings.SESSION_COOKIE_NAME.encode() in self.received_cookies)

    def handleContentChunk(self, data):
        if self.refused:
            return
        self.received_bytes += len(data)
        if self.received_bytes > self.limit_bytes:
            self.refuse(None)
            return
        super().handleContentChunk(data)

    def process(self):
        if not self.refused:
            return super().process()

    def handle_reply(self, message):
        if message["type"] == "http.response.start" and self.drain is None:
            self.drain = Drain()
            self.registerProducer(self.drain, True)
        super().handle_reply(message)

    def finish(self):
        if self.producer is not None:
            self.unregisterProducer()
        super().finish()

    def connectionLost(self, reason):
        if self.drain is not None:
            self.drain.stopProducing()
        super().connectionLost(reason)

    def refuse(self, length: int | None):
        """Answer 413 (problem details naming the limit) and close the connection."""
        self.refused = True
        self.content = io.BytesIO()  # what came of the body is dropped; Twisted may still finish the request
        body = json.dumps({"type": "about:blank", "title": "Content Too Large", "status": 413,
                           "detail": too_large_detail(length, self.limit_bytes, self.limit_setting)}).encode()
        self.channel.transport.write(b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/problem+json\r\n"
                                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        self.channel.loseConnection()


class BoundedHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr):
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = BoundedRequest
        return protocol


class BoundedServer(Server):
    """Daphne's server, its HTTP factory making :class:`BoundedRequest` requests; sending a part of
    a response that is to be followed by more waits until the client has taken the parts before."""

    async def handle_reply(self, protocol, message):
        await super().handle_reply(protocol, message)
        drain = getattr(protocol, "drain", None)
        if drain is not None and message.get("more_body"):
            await drain.writable.wait()

    @property
    def http_factory(self):
        return self._bounded_factory

    @http_factory.setter
    def http_factory(self, factory):
        self._bounded_factory = BoundedHTTPFactory(self) if type(factory) is HTTPFactory else factory


class BoundedCommandLine(CommandLineInterface):
    server_class = BoundedServer


def main(argv: list[str]) -> None:
    BoundedCommandLine().run(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
