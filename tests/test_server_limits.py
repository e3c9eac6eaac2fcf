"""Request bodies bounded while they arrive, on the server as deployed (``config.server``: Daphne
with each body counted as it comes in): an oversized declared length is refused before its body is
sent, a chunked body the moment it passes the limit, and neither grows the server's memory."""
import json
import socket
import time
from pathlib import Path

import pytest

from tests.stack import Stack

USER, PASSWORD = "uploader", "pw-uploader-limits-1234"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("limits"), name="planner_server_limits", users={USER: PASSWORD})
    try:
        stack.start("web")
        yield stack
    finally:
        stack.stop()


def rss_bytes(stack) -> int:
    status = Path(f"/proc/{stack.processes['web'].pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) * 1024


def read_response(conn: socket.socket) -> tuple[int, dict, bytes]:
    """The status, headers and body of the answer on ``conn`` (read to the server's close)."""
    raw = b""
    conn.settimeout(10)
    while chunk := conn.recv(65536):
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def open_post(stack, path: str, headers: dict) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", stack.port))
    fields = {"Host": "127.0.0.1", "Connection": "close", **headers}
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    conn.sendall(head.encode() + b"\r\n")
    return conn


def test_a_3_gb_declared_body_is_refused_before_any_of_it_is_sent(server):
    before = rss_bytes(server)
    started = time.monotonic()
    conn = open_post(server, "/api/evaluate/", {"Content-Type": "application/json", "Content-Length": 3_000_000_000})
    status, headers, body = read_response(conn)
    assert status == 413 and headers["Content-Type"] == "application/problem+json"
    assert json.loads(body)["detail"] == ("request body of 3,000,000,000 bytes; at most 2,097,152 bytes here "
                                          "(API_MAX_BODY_BYTES)")
    assert time.monotonic() - started < 5  # answered without waiting for a body that never came
    assert rss_bytes(server) - before < 20_000_000


def send_chunked(conn: socket.socket, total_bytes: int, chunk_bytes: int = 64 * 1024) -> int:
    """Send a chunked body of ``total_bytes`` of JSON-ish text until the server stops reading;
    returns the bytes of body sent."""
    sent = 0
    chunk = b"%x\r\n%s\r\n" % (chunk_bytes, b"x" * chunk_bytes)
    try:
        while sent < total_bytes:
            conn.sendall(chunk)
            sent += chunk_bytes
        conn.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


def test_a_chunked_body_is_refused_as_it_passes_the_limit(server):
    """Without a declared length the body is counted as it comes: 413 once it passes 2 MiB, and
    the connection closed, so the client cannot go on to send 200 MB."""
    before = rss_bytes(server)
    conn = open_post(server, "/api/evaluate/", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    sent = send_chunked(conn, 200_000_000)
    status, _, body = read_response(conn)
    assert status == 413
    assert json.loads(body)["detail"] == "request body; at most 2,097,152 bytes here (API_MAX_BODY_BYTES)"
    assert sent < 50_000_000  # the server closed the connection long before the 200 MB were sent
    assert rss_bytes(server) - before < 20_000_000


def test_a_kernel_log_upload_has_its_own_larger_limit(server):
    """The kernel-log path takes up to KERNEL_LOG_MAX_BYTES (32 MiB): 3 MiB passes the server and
    reaches the application (which answers for the missing credentials), 40 MB declared does not."""
    conn = open_post(server, "/api/twins/1/ingest-log/", {"Content-Type": "application/octet-stream",
                                                          "Content-Length": 3 * 1024 * 1024})
    conn.sendall(b"x" * (3 * 1024 * 1024))
    status, _, _ = read_response(conn)
    assert status in (401, 403)
    conn = open_post(server, "/api/twins/1/ingest-log/", {"Content-Type": "application/octet-stream",
                                                          "Content-Length": 40_000_000})
    status, _, body = read_response(conn)
    assert status == 413 and json.loads(body)["detail"].endswith("at most 33,554,432 bytes here (KERNEL_LOG_MAX_BYTES)")
