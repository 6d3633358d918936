"""Another local user against the worker: token theft on its port, floods, idle connections.

Attacks of the "other local users" part of the local-security issue, each with real
sockets and a real `memlane serve`. The ones that need another uid run when the suite
runs as root (tests/other_user.py) and skip otherwise; each also has a same-user form.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memlane.hooks.relay import flush
from memlane.runtime import (
    CHALLENGE_HEADER,
    PROOF_HEADER,
    WorkerInfo,
    load_or_create_token,
    read_token,
    worker_proof,
    write_runtime,
)
from memlane.service import Memory
from memlane.worker.connections import (
    RESERVED_FDS,
    ConnectionGuard,
    ConnectionLimits,
    guarded_protocol,
)
from memlane.worker.peers import Peer, loopback_peer_uid
from memlane.worker.web.app import create_app
from memlane.worker.web.events import ChangeFeed
from memlane.worker.web.security import SecurityPolicy
from tests.conftest import MEMLANE_CMD
from tests.other_user import spawn_as
from tests.test_web_support import TOKEN, free_port
from tests.test_worker import _env, _memlane, _paths, _start, _wait_for_worker

# A program on the worker's port that is not the worker: it answers every request head
# with a 204 carrying a wrong proof, records every byte it receives, and prints them
# (hex) when its stdin closes. Stdlib only: it also runs as another user.
IMPOSTOR = r"""
import socket, sys, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print(srv.getsockname()[1], flush=True)
received = []
def serve(conn):
    with conn:
        conn.settimeout(10)
        pending = b""
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                received.append(chunk)
                pending += chunk
                while b"\r\n\r\n" in pending:
                    pending = pending.split(b"\r\n\r\n", 1)[1]
                    conn.sendall(b"HTTP/1.1 204 No Content\r\nx-memlane-proof: " + b"0" * 64
                                 + b"\r\n\r\n")
        except OSError:
            pass
def accept():
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
sys.stdin.read()
print(b"".join(received).hex(), flush=True)
"""

# Floods the worker's /health and /api/stats (bad token) from another process; prints
# how many answers were 429.
FLOOD = r"""
import http.client, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
limited = 0
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
for i in range(count):
    path = "/health" if i % 2 else "/api/stats"
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}",
                                       "Authorization": "Bearer not-the-token"})
    response = conn.getresponse()
    response.read()
    limited += response.status == 429
print(limited, flush=True)
"""

# Opens connections and sends nothing; prints how many connected, then, for each line
# read on stdin, how many the worker has not closed.
IDLE = r"""
import socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
held = []
for _ in range(count):
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        held.append(s)
    except OSError:
        s.close()
print(len(held), flush=True)
def still_open(s):
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
for _line in sys.stdin:
    print(sum(still_open(s) for s in held), flush=True)
"""


@pytest.fixture
def worker(home: Path) -> Iterator[tuple[subprocess.Popen[bytes], WorkerInfo]]:
    proc = _start(home, "serve", "--port", str(free_port()), "--rate-limit", "20")
    info = _wait_for_worker(home, proc)
    yield proc, info
    if proc.poll() is None:
        proc.terminate()
        proc.wait(15)


def _run_as(user: object, code: str, *args: str) -> subprocess.Popen[bytes]:
    """``code`` as ``user`` (tests/other_user.py), or as this user when ``user`` is None."""
    if user is None:
        return subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    return spawn_as(user, code, *args)  # type: ignore[arg-type]


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def _get(port: int, path: str, token: str | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": f"127.0.0.1:{port}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


# -- item 3: the token goes only to a listener that proves it is the worker -------------


@pytest.mark.parametrize("who", ["same user", "other user"])
def test_cli_never_sends_the_token_to_another_program_on_the_port(
    home: Path, who: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue("other_user") if who == "other user" else None
    impostor = _run_as(user, IMPOSTOR, "memlane-impostor")
    try:
        assert impostor.stdout is not None and impostor.stdin is not None
        port = int(impostor.stdout.readline())
        paths = _paths(home)
        token = load_or_create_token(paths)
        # What a crash and pid reuse leave: a runtime file naming a live process and a
        # port that some other program now listens on.
        write_runtime(paths, WorkerInfo(impostor.pid, "127.0.0.1", port, time.time(), "x"))

        status = _memlane(home, "status")
        assert status.returncode == 1
        assert f"127.0.0.1:{port} is another program" in status.stdout

        dashboard = _memlane(home, "dashboard", "--no-open")
        assert dashboard.returncode == 6
        line = _one_line_error(dashboard)
        assert line.startswith(f"error: the program listening on 127.0.0.1:{port} is not")
        assert "the token was not sent" in line
    finally:
        out, _err = impostor.communicate(timeout=30)  # closes its stdin: it prints and exits
    received = bytes.fromhex(out.decode().strip())
    assert CHALLENGE_HEADER.encode() in received.lower()  # it was challenged …
    assert token.encode() not in received  # … and never saw the token
    assert b"authorization" not in received.lower()


class Forwarder:
    """A TCP relay from a port of its own to the real worker, recording what passes."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.received = bytearray()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.server.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target))
                threading.Thread(target=self._pipe, args=(client, upstream, True)).start()
                threading.Thread(target=self._pipe, args=(upstream, client, False)).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(65536):
                if record:
                    self.received += chunk
                dst.sendall(chunk)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self.server.close()


def test_a_relay_to_the_real_worker_cannot_pass_on_its_proof(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    """The proof names the port: a program on another port that hands our challenge to
    the real worker gets an answer that does not fit its own port."""
    _proc, info = worker
    token = read_token(_paths(home))
    assert token is not None
    forwarder = Forwarder(info.port)
    try:
        write_runtime(_paths(home), replace(info, port=forwarder.port))
        dashboard = _memlane(home, "dashboard", "--no-open")
        assert dashboard.returncode == 6
        assert "is not this user's memlane worker" in _one_line_error(dashboard)
        assert CHALLENGE_HEADER.encode() in bytes(forwarder.received).lower()
        assert token.encode() not in bytes(forwarder.received)
    finally:
        forwarder.close()
        write_runtime(_paths(home), info)
    assert _memlane(home, "dashboard", "--no-open").returncode == 0  # the real one passes


def test_the_proof_is_answered_before_the_rate_limit(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    _proc, info = worker
    token = read_token(_paths(home))
    assert token is not None
    while _get(info.port, "/health") != 429:  # the unauthenticated bucket is empty
        pass
    conn = http.client.HTTPConnection("127.0.0.1", info.port, timeout=30)
    nonce = "n" * 32
    conn.request(
        "GET", "/health", headers={"Host": f"127.0.0.1:{info.port}", CHALLENGE_HEADER: nonce}
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 204
    assert response.getheader(PROOF_HEADER) == worker_proof(token, info.port, nonce)
    assert _memlane(home, "status").returncode == 0


def test_a_malformed_challenge_is_refused(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    _proc, info = worker
    for nonce in ("short", "x" * 200, "a b c d e f g h i j k l"):
        response = httpx.get(f"{info.base_url}/health", headers={CHALLENGE_HEADER: nonce})
        assert response.status_code == 400
        assert response.json()["error"] == "bad_challenge"
        assert PROOF_HEADER not in response.headers


# -- item 4: floods and idle connections -------------------------------------------------


def test_authenticated_requests_have_buckets_of_their_own(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    _proc, info = worker
    token = read_token(_paths(home))
    limited = [_get(info.port, "/health") for _ in range(40)]
    assert 429 in limited  # the anonymous bucket is empty …
    assert [_get(info.port, "/api/stats", token) for _ in range(5)] == [200] * 5  # … ours not
    assert _get(info.port, "/health") == 429  # and it stays apart


def test_another_users_flood_leaves_the_owner_alone(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo], other_user: object
) -> None:
    _proc, info = worker
    token = read_token(_paths(home))
    flood = _run_as(other_user, FLOOD, str(info.port), "80")
    out, err = flood.communicate(timeout=120)
    assert flood.returncode == 0, err
    assert int(out) > 0  # the flood met its own limit
    assert _get(info.port, "/health") == 200  # the owner's unauthenticated bucket is intact
    assert [_get(info.port, "/api/stats", token) for _ in range(5)] == [200] * 5


def test_another_users_idle_connections_do_not_lock_the_owner_out(
    home: Path, other_user: object
) -> None:
    """1,100 connections that never send a request, against a worker with 1,024 fds: the
    dashboard, the API, the CLI and the hook relay still answer the owner."""
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    with (home / "serve.out").open("ab") as out:
        proc = subprocess.Popen(
            ["prlimit", "--nofile=1024:1024", *MEMLANE_CMD, "serve", "--port", str(port)],
            env=_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    idle = None
    try:
        info = _wait_for_worker(home, proc)
        token = read_token(_paths(home))
        idle = _run_as(other_user, IDLE, str(port), "1100")
        assert idle.stdout is not None and idle.stdin is not None
        assert int(idle.stdout.readline()) >= 1024  # the kernel took them all

        page = httpx.get(f"{info.base_url}/", timeout=30)
        assert page.status_code == 200 and "/static/js/main.js" in page.text
        assert _get(port, "/api/stats", token) == 200
        assert _memlane(home, "status").returncode == 0
        assert flush(environ=_env(home), timeout_s=30)  # the hook relay answers

        limit = ConnectionLimits.for_fd_limit(1024).per_peer
        deadline = time.monotonic() + 60
        while True:
            idle.stdin.write(b"\n")
            idle.stdin.flush()
            still_open = int(idle.stdout.readline())
            if still_open <= limit or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert still_open <= limit
        refused = f"refusing connections from uid:{other_user.pw_uid}"  # type: ignore[attr-defined]
        assert refused in (home / "serve.out").read_text()
    finally:
        if idle is not None:
            idle.kill()
            idle.communicate(timeout=30)
        proc.terminate()
        proc.wait(15)


def test_the_kernel_names_the_user_behind_a_loopback_connection(other_user: object) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = int(server.getsockname()[1])
    connect = "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])));"
    connect += " sys.stdin.read()"
    client = _run_as(other_user, connect, str(port))
    try:
        conn, remote = server.accept()
        local = conn.getsockname()
        assert loopback_peer_uid(local, remote) == other_user.pw_uid  # type: ignore[attr-defined]
        mine = socket.create_connection(("127.0.0.1", port))
        conn2, remote2 = server.accept()
        assert loopback_peer_uid(conn2.getsockname(), remote2) == os.getuid()
        for sock in (conn, conn2, mine):
            sock.close()
    finally:
        client.communicate(timeout=30)
        server.close()


def test_loopback_peer_uid_is_this_users_for_our_own_connection() -> None:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            server = socket.create_server((host, 0), family=family)
        except OSError:
            continue  # no IPv6 loopback here
        with server, socket.create_connection(server.getsockname()[:2]):
            conn, remote = server.accept()
            with conn:
                assert loopback_peer_uid(conn.getsockname(), remote) == os.getuid()
    assert loopback_peer_uid(("127.0.0.1", 1), ("10.1.2.3", 5)) is None  # not a local client


# -- the guard at the protocol level: limits and deadlines with a short period ----------


class GuardedServer:
    """The worker app behind the guarded h11 protocol, in a thread, on a free port."""

    def __init__(self, memory: Memory, limits: ConnectionLimits) -> None:
        self.guard = ConnectionGuard(limits, own_uid=os.getuid())
        policy = SecurityPolicy(token=TOKEN, port=0)
        self.feed = ChangeFeed(memory, poll_interval=0.1, heartbeat=0.1)
        app = create_app(memory, policy, feed=self.feed)
        sock = socket.create_server(("127.0.0.1", 0))
        self.port = policy.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="on", ws="none",
            timeout_graceful_shutdown=2, http=guarded_protocol(H11Protocol, self.guard),
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.sock = sock
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive()
            time.sleep(0.02)

    def stop(self) -> None:
        self.feed.close()
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()
        self.guard.close()


@pytest.fixture
def guarded(memory: Memory) -> Iterator[GuardedServer]:
    server = GuardedServer(memory, ConnectionLimits(own=3, head_timeout=0.3))
    yield server
    server.stop()


def _closed_by_server(sock: socket.socket, timeout: float = 30.0) -> bool:
    """True once the server closed ``sock`` (EOF or reset) within ``timeout``."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def test_a_connection_that_never_sends_a_request_is_closed(guarded: GuardedServer) -> None:
    with socket.create_connection(("127.0.0.1", guarded.port)) as idle:
        assert _closed_by_server(idle)


def test_a_request_head_sent_byte_by_byte_is_cut(guarded: GuardedServer) -> None:
    with socket.create_connection(("127.0.0.1", guarded.port)) as slow:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        closed = False
        for _ in range(600):  # one header byte every 50 ms, never the blank line
            try:
                slow.sendall(b"X")
            except OSError:
                closed = True
                break
            time.sleep(0.05)
        assert closed or _closed_by_server(slow)


def test_a_live_feed_is_not_cut_by_the_request_deadline(guarded: GuardedServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    conn.request(
        "GET",
        "/api/events",
        headers={"Host": f"127.0.0.1:{guarded.port}", "Authorization": f"Bearer {TOKEN}"},
    )
    response = conn.getresponse()
    assert response.status == 200
    heartbeats = 0
    deadline = time.monotonic() + 1.5  # five deadline periods
    while time.monotonic() < deadline:
        line = response.readline()
        assert line, "the live feed was closed"
        heartbeats += line.startswith(b":")
    conn.close()
    assert heartbeats >= 2


def test_connections_past_the_users_limit_are_closed_at_once(memory: Memory) -> None:
    guarded = GuardedServer(memory, ConnectionLimits(own=3, head_timeout=600))
    held = [socket.create_connection(("127.0.0.1", guarded.port)) for _ in range(3)]
    try:
        extra = socket.create_connection(("127.0.0.1", guarded.port))
        with extra:
            assert _closed_by_server(extra)  # long before the 600 s deadline
        assert guarded.guard.refused == 1
        held.pop().close()
        deadline = time.monotonic() + 30
        while guarded.guard.open_connections(Peer(os.getuid(), "127.0.0.1")) > 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _get(guarded.port, "/health") == 200  # room again
    finally:
        for sock in held:
            sock.close()
        guarded.stop()


def test_other_peers_are_counted_apart_from_the_owner() -> None:
    guard = ConnectionGuard(ConnectionLimits(own=2, per_peer=3, others=4), own_uid=1000)
    owner, mallory, trent = Peer(1000, "127.0.0.1"), Peer(1001, "127.0.0.1"), Peer(1002, "::1")
    assert [guard.admit(mallory) for _ in range(4)] == [True, True, True, False]
    assert [guard.admit(owner) for _ in range(3)] == [True, True, False]  # own budget
    assert [guard.admit(trent) for _ in range(2)] == [True, False]  # others: 4 in all
    guard.release(mallory)
    assert guard.admit(trent)
    assert guard.refused == 3
    remote = Peer(None, "10.0.0.7")
    assert remote.key == "addr:10.0.0.7" and owner.key == "uid:1000"


def test_limits_leave_descriptors_for_the_worker() -> None:
    for soft in (64, 256, 1024, 4096, 1 << 20):
        limits = ConnectionLimits.for_fd_limit(soft)
        assert limits.own >= 1 and limits.per_peer >= 1 and limits.others >= 1
        if soft > RESERVED_FDS + 16:
            assert limits.own + limits.others + RESERVED_FDS <= soft
    assert ConnectionLimits.for_fd_limit(1024) == ConnectionLimits()


def test_the_worker_serves_with_the_guard(
    home: Path, worker: tuple[subprocess.Popen[bytes], WorkerInfo]
) -> None:
    """`memlane serve` closes a connection that sends nothing (after its 10 s deadline)."""
    _proc, info = worker
    with socket.create_connection(("127.0.0.1", info.port)) as idle:
        assert _closed_by_server(idle, timeout=60)
    assert json.loads(_memlane(home, "status", "--json").stdout)["healthy"] is True
