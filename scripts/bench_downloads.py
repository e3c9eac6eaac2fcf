"""Benchmark: three users download their 1,000,000-point sweep CSVs at once from the server as deployed
(``config.server``, Daphne), measuring the web process's resident memory.

Starts the stack of the browser and fault tests (tests/stack.py) on its own database (PostgreSQL
when DATABASE_URL names it, else SQLite), creates each user's sweep through the sweep services (the
engine's real outputs), exports one CSV first (pyarrow's import and the allocator's warm-up), then:
three downloads read as fast as the clients can, and three downloads opened and left unread for
10 s before they are read. Each run samples the web process's memory every 10 ms and checks every
file is whole (its Content-Length, one line per point):
  .venv/bin/python scripts/bench_downloads.py [--points 1000000]
"""
import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchsetup import PeakMemory, rss_bytes  # noqa: E402

from tests.stack import Stack  # noqa: E402

USERS = {f"bench-downloader-{i}": f"pw-bench-downloader-{i}" for i in range(3)}
CREATE = """
from django.contrib.auth import get_user_model
from planner.models import ClusterPlan, Workload
from planner.services import sweeps
points = {points}
spec = {{"axes": {{"cluster.node_count": {{"start": 40, "stop": 1239, "step": 1}},
                   "workload.gpus": {{"start": 8, "stop": 8 * max(1, points // 1200), "step": 8}}}}}}
for username in {usernames!r}:
    sweep = sweeps.sweep_create(owner=get_user_model().objects.get(username=username),
                                plan=ClusterPlan.objects.get(slug="ff2-pcie-2zone"),
                                workload=Workload.objects.get(slug="llama-13b-512"), spec=spec, name="bench download")
    for index in range(sweep.chunk_count):
        sweeps.sweep_run_chunk(sweep_id=sweep.pk, index=index)
    print("sweep", sweep.pk, sweep.total_points)
"""
TOKEN = """
from django.contrib.auth import get_user_model
from planner.services.accounts import token_issue
for username in {usernames!r}:
    print("token", token_issue(get_user_model().objects.get(username=username)))
"""


def open_export(port: int, sweep_id: int, token: str) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(f"GET /api/sweeps/{sweep_id}/export/?file=csv HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                 f"Authorization: Token {token}\r\n\r\n".encode())
    return conn


def read_whole(conn: socket.socket, points: int) -> int:
    """Read the answer to the server's close; check it is a whole CSV; return its body's bytes."""
    head, lines, size, raw = b"", 0, 0, b""
    while chunk := conn.recv(1 << 20):
        if not head:
            raw += chunk
            if b"\r\n\r\n" not in raw:
                continue
            head, _, chunk = raw.partition(b"\r\n\r\n")
        size += len(chunk)
        lines += chunk.count(b"\n")
    conn.close()
    fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
    length = int(fields[b"content-length"])
    assert head.startswith(b"HTTP/1.1 200") and size == length and lines == points + 1, (head[:200], size, lines)
    return size


def downloads(stack, sweeps, tokens, points, unread_s: float) -> str:
    with PeakMemory(stack.processes["web"].pid, interval_s=0.01) as memory:
        opened = [open_export(stack.port, sweep_id, token) for sweep_id, token in zip(sweeps, tokens)]
        time.sleep(unread_s)
        held = rss_bytes(stack.processes["web"].pid) - memory.base
        sizes = [0] * len(opened)
        readers = [threading.Thread(target=lambda i=i: sizes.__setitem__(i, read_whole(opened[i], points)))
                   for i in range(len(opened))]
        start = time.perf_counter()
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        seconds = time.perf_counter() - start
    unread = f"; after {unread_s:g} s unread: {held / 1e6:+.0f} MB" if unread_s else ""
    return (f"{len(opened)} x {sizes[0] / 1e6:.0f} MB in {seconds:.1f} s{unread}; peak growth "
            f"{(memory.peak - memory.base) / 1e6:.0f} MB (from {memory.base / 1e6:.0f} to {memory.peak / 1e6:.0f} MB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    args = parser.parse_args()
    stack = Stack(Path(tempfile.mkdtemp()), name="planner_bench_downloads", users=USERS)
    try:
        usernames = list(USERS)
        output = stack.manage("shell", "-c", CREATE.format(points=args.points, usernames=usernames))
        created = [line.split()[1:] for line in output.splitlines() if line.startswith("sweep ")]
        sweeps, points = [int(row[0]) for row in created], int(created[0][1])
        issued = stack.manage("shell", "-c", TOKEN.format(usernames=usernames))
        tokens = [line.split()[1] for line in issued.splitlines() if line.startswith("token ")]
        stack.start("web")
        read_whole(open_export(stack.port, sweeps[0], tokens[0]), points)  # pyarrow's import, the warm-up
        print(f"sweep CSVs of {points:,} points, three users at once, through config.server:")
        print("read at once:  ", downloads(stack, sweeps, tokens, points, 0))
        print("left unread:   ", downloads(stack, sweeps, tokens, points, 10))
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
