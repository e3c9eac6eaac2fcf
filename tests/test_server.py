"""The server as deployed (``config.server``: Daphne with each request body counted as it comes in
and each response held to its client's pace).

Bodies: an oversized declared length is refused before its body is sent, a chunked body the moment
it passes the limit, and neither grows the server's memory. Downloads: three users' sweep CSVs
opened at once and not read hold the server's memory to a part each (Django would otherwise gather
each whole), each arrives complete when read, and a user's second download waits for the first to
be sent."""
import json
import select
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.stack import Stack

USERS = {f"downloader{i}": f"pw-downloader-{i}-1234" for i in range(3)}
# 1,200 x 4 x 25 = 120,000 points: a CSV of about 44 MB each.
AXES = {"cluster.node_count": {"start": 40, "stop": 1239, "step": 1}, "workload.gpus": [64, 128, 256, 512],
        "workload.moe_imbalance": {"start": 1.0, "stop": 1.24, "step": 0.01}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("server"), name="planner_server", users=USERS)
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


def open_request(stack, method: str, path: str, headers: dict) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", stack.port))
    fields = {"Host": "127.0.0.1", "Connection": "close", **headers}
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    conn.sendall(head.encode() + b"\r\n")
    return conn


def open_post(stack, path: str, headers: dict) -> socket.socket:
    return open_request(stack, "POST", path, headers)


def test_a_3_gb_declared_body_is_refused_before_any_of_it_is_sent(server):
    before = rss_bytes(server)
    started = time.monotonic()
    conn = open_post(server, "/api/evaluate/", {"Content-Type": "application/json", "Authorization": "Token x",
                                                "Content-Length": 3_000_000_000})
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
    """Without a declared length the body is counted as it comes: 413 once it passes 2 MiB (64 KiB
    without credentials), and the connection closed, so the client cannot go on to send 200 MB."""
    before = rss_bytes(server)
    for credentials, detail in (({"Authorization": "Token x"}, "at most 2,097,152 bytes here (API_MAX_BODY_BYTES)"),
                                ({}, "at most 65,536 bytes without credentials: sign in or send a token "
                                     "(ANONYMOUS_MAX_BODY_BYTES)")):
        conn = open_post(server, "/api/evaluate/", {"Content-Type": "application/json", "Transfer-Encoding": "chunked",
                                                    **credentials})
        sent = send_chunked(conn, 200_000_000)
        status, _, body = read_response(conn)
        assert status == 413 and json.loads(body)["detail"] == f"request body; {detail}"
        assert sent < 50_000_000  # the server closed the connection long before the 200 MB were sent
    assert rss_bytes(server) - before < 20_000_000


def test_a_kernel_log_upload_has_its_own_larger_limit(server):
    """The kernel-log path takes up to KERNEL_LOG_MAX_BYTES (32 MiB): 3 MiB with credentials passes
    the server and reaches the application (which answers for the bad token), 40 MB declared does
    not, and without credentials nothing over ANONYMOUS_MAX_BODY_BYTES does."""
    conn = open_post(server, "/api/twins/1/ingest-log/", {"Content-Type": "application/octet-stream",
                                                          "Authorization": "Token not-a-token",
                                                          "Content-Length": 3 * 1024 * 1024})
    conn.sendall(b"x" * (3 * 1024 * 1024))
    status, _, _ = read_response(conn)
    assert status in (401, 403)
    conn = open_post(server, "/api/twins/1/ingest-log/", {"Content-Type": "application/octet-stream",
                                                          "Cookie": "sessionid=stale", "Content-Length": 40_000_000})
    status, _, body = read_response(conn)
    assert status == 413 and json.loads(body)["detail"].endswith("at most 33,554,432 bytes here (KERNEL_LOG_MAX_BYTES)")
    conn = open_post(server, "/api/twins/1/ingest-log/", {"Content-Type": "application/octet-stream",
                                                          "Content-Length": 3 * 1024 * 1024})
    status, _, body = read_response(conn)
    assert status == 413 and json.loads(body)["detail"] == (
        "request body of 3,145,728 bytes; at most 65,536 bytes without credentials: sign in or send a token "
        "(ANONYMOUS_MAX_BODY_BYTES)")


def call(stack, method: str, path: str, body=None, token=None):
    request = urllib.request.Request(stack.url + path, method=method, headers={"Content-Type": "application/json"},
                                     data=None if body is None else json.dumps(body).encode())
    if token:
        request.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def open_export(stack, sweep_id: int, token: str, kind: str = "csv") -> socket.socket:
    path = f"/api/sweeps/{sweep_id}/export/?file={kind}"
    return open_request(stack, "GET", path, {"Authorization": f"Token {token}"})


def test_downloads_go_at_their_clients_pace_one_per_user(server):
    tokens, sweeps = [], []
    for username, password in USERS.items():
        status, issued = call(server, "POST", "/api/auth/token/", {"username": username, "password": password})
        tokens.append(issued["token"])
        status, sweep = call(server, "POST", "/api/sweeps/", {"plan": "ff2-pcie-2zone", "workload": "llama-13b-512",
                                                              "axes": AXES}, tokens[-1])
        assert status == 201 and sweep["status"] == "done" and sweep["total_points"] == 120_000, sweep
        sweeps.append(sweep["id"])
    # The first export loads pyarrow (about 40 MB) and warms the allocator.
    assert read_response(open_export(server, sweeps[0], tokens[0]))[0] == 200
    before = rss_bytes(server)
    opened = [open_export(server, sweep_id, token) for sweep_id, token in zip(sweeps, tokens)]
    for conn in opened:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    time.sleep(8)  # long enough to build each file and, unheld, to gather it whole
    held_bytes = rss_bytes(server) - before
    status, refused = call(server, "GET", f"/api/sweeps/{sweeps[0]}/export/?file=npz", token=tokens[0])
    assert status == 429 and "being built or sent" in refused["detail"]
    for conn in opened:
        status, headers, body = read_response(conn)
        assert status == 200 and len(body) == int(headers["Content-Length"]) > 40_000_000
        assert body.count(b"\n") == 120_001
    assert held_bytes < 40_000_000, f"{held_bytes / 1e6:.0f} MB held for three unread 44 MB downloads"
    status, _ = call(server, "GET", f"/api/sweeps/{sweeps[0]}/results/?page_size=1", token=tokens[0])
    assert status == 200
    # The slot was freed when the first was sent; one abandoned after its first bytes frees it too.
    abandoned = open_export(server, sweeps[0], tokens[0], "parquet")
    assert abandoned.recv(100).startswith(b"HTTP/1.1 200")
    abandoned.close()
    deadline = time.monotonic() + 10
    while (status := read_response(open_export(server, sweeps[0], tokens[0], "npz"))[0]) == 429:
        assert time.monotonic() < deadline, "the abandoned download still holds its slot"
        time.sleep(0.2)
    assert status == 200


def multipart(fields: dict[str, str], file_bytes: bytes) -> tuple[str, bytes]:
    """A multipart/form-data body of ``fields`` and a ``file`` part: its content type and bytes."""
    boundary = "----planner-test-boundary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="dmesg.txt"\r\n'
                 f"Content-Type: text/plain\r\n\r\n".encode() + file_bytes + f"\r\n--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}", b"".join(parts)


def post_whole(stack, path: str, headers: dict, body: bytes, piece_bytes: int = 1 << 20) -> tuple[int, dict, bytes]:
    """POST ``body`` a piece at a time until it is all sent or the server answers (it has half a
    second to answer the headers alone), and read the answer."""
    conn = open_post(stack, path, {**headers, "Content-Length": len(body)})
    for start in range(0, len(body), piece_bytes):
        if select.select([conn], [], [], 0.5 if start == 0 else 0)[0]:
            break  # answered before it was all sent
        conn.sendall(body[start:start + piece_bytes])
    return read_response(conn)


def slowest_read_s(stack, token: str, attack) -> tuple[float, object]:
    """Run ``attack()`` in a thread while another user reads their plans every 0.1 s: the slowest
    read's seconds (the reads go on until the attack has been answered), and the attack's answer."""
    answer, slowest_s = [], 0.0
    attacker = threading.Thread(target=lambda: answer.append(attack()))
    attacker.start()
    while attacker.is_alive():
        started = time.monotonic()
        status, _ = call(stack, "GET", "/api/plans/?page_size=1", token=token)
        assert status == 200
        slowest_s = max(slowest_s, time.monotonic() - started)
        time.sleep(0.1)
    attacker.join()
    return slowest_s, answer[0]


def test_no_multipart_body_stalls_another_users_reads_logged_in_or_not(server):
    """30 MiB of newlines as a kernel-log file, sent with no credentials, with a bad token or by the
    twin's owner, and 2 MiB to the login endpoint: none holds another user's reads past 1 s (Twisted
    parsed every multipart body on the event loop before Django ran: 16.5 s without credentials),
    each is answered with its reason, and the server keeps no memory of them."""
    owner, reader = [call(server, "POST", "/api/auth/token/", {"username": name, "password": USERS[name]})[1]["token"]
                     for name in list(USERS)[:2]]
    status, twin = call(server, "POST", "/api/twins/", {"plan": "ff2-pcie-2zone", "seed": 3}, owner)
    assert status == 201, twin
    content_type, newlines = multipart({"node": "1"}, b"\n" * (30 * 1024 * 1024))
    path = f"/api/twins/{twin['id']}/ingest-log/"
    before = rss_bytes(server)
    for credentials, expected in (({}, 413), ({"Authorization": "Token not-a-token"}, 401),
                                  ({"Authorization": f"Token {owner}"}, 400)):
        slowest_s, (status, _, body) = slowest_read_s(
            server, reader, lambda headers={"Content-Type": content_type, **credentials}: post_whole(
                server, path, headers, newlines))
        assert status == expected, body[:300]
        assert slowest_s < 1.0, f"another user's read waited {slowest_s:.1f} s during a {expected} upload"
    assert json.loads(body)["errors"] == {"file": ["more than 100,000 lines; send it in parts"]}
    content_type, login = multipart({"username": "x", "password": "y"}, b"\n" * (2 * 1024 * 1024))
    slowest_s, (status, _, body) = slowest_read_s(
        server, reader, lambda: post_whole(server, "/api/auth/token/", {"Content-Type": content_type}, login))
    assert status == 413 and "ANONYMOUS_MAX_BODY_BYTES" in json.loads(body)["detail"] and slowest_s < 1.0
    assert rss_bytes(server) - before < 100_000_000, f"{(rss_bytes(server) - before) / 1e6:.0f} MB kept"
