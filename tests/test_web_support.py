"""Helpers for the worker tests: a real uvicorn server on 127.0.0.1 and an SSE reader.

Not a test module (it holds no tests); the web, worker and dashboard tests import it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from memlane.paths import state_paths
from memlane.runtime import read_runtime, read_token
from memlane.service import Memory
from memlane.worker.web.app import create_app
from memlane.worker.web.events import ChangeFeed
from memlane.worker.web.security import SecurityPolicy
from tests.conftest import MEMLANE_CMD

TOKEN = "test-token-0123456789abcdef0123456789"
# The header a dashboard tab sends its session key in (with the cookie).
SESSION_HEADER = "X-Memlane-Session"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve_process(home: Path, env: dict[str, str]) -> Iterator[tuple[str, str, Path]]:
    """A real ``memlane serve`` subprocess without rate limits, in ``home`` with ``env``:
    (base URL, token, log file) once ``/health`` answers; stopped on exit."""
    log = home / "serve.out"
    home.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [*MEMLANE_CMD, "serve", "--port", str(free_port()), "--rate-limit", "0",
             "--write-rate-limit", "0"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        paths = state_paths({"MEMLANE_HOME": str(home)})
        base = None
        deadline = time.monotonic() + 30  # a wait for start-up, not a speed check
        while base is None and time.monotonic() < deadline:
            info = read_runtime(paths)
            if info is not None:
                try:
                    if httpx.get(f"{info.base_url}/health", timeout=1).status_code == 200:
                        base = info.base_url
                except httpx.HTTPError:
                    pass
            if proc.poll() is not None:
                raise AssertionError(f"worker exited: {log.read_text()}")
            time.sleep(0.1)
        assert base is not None, "the worker did not come up"
        token = read_token(paths)
        assert token
        yield base, token, log
    finally:
        proc.terminate()
        proc.wait(20)


@dataclass
class LiveServer:
    """The worker app served by a real uvicorn in a thread, on a free loopback port."""

    memory: Memory
    token: str = TOKEN
    rate_per_minute: int = 100_000
    write_rate_per_minute: int = 100_000
    max_body_bytes: int = 1_048_576
    poll_interval: float = 0.1
    heartbeat: float = 15.0
    max_clients: int = 16
    embeddings: Any = None
    mount_mcp: bool = False
    recall_queue_limit: float = 0.5
    port: int = 0  # 0: a free one; else this one (a worker run after another)
    session_ttl: float | None = None  # seconds a dashboard sign-in lasts (None: the default)
    policy: SecurityPolicy = field(init=False)
    feed: ChangeFeed = field(init=False)

    def start(self) -> LiveServer:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(128)
        self.port = int(sock.getsockname()[1])
        self.policy = SecurityPolicy(
            token=self.token,
            port=self.port,
            rate_per_minute=self.rate_per_minute,
            write_rate_per_minute=self.write_rate_per_minute,
            max_body_bytes=self.max_body_bytes,
        )
        if self.session_ttl is not None:
            from memlane.worker.web.security import DashboardSessions

            self.policy.sessions = DashboardSessions(self.session_ttl)
        self.feed = ChangeFeed(
            self.memory,
            poll_interval=self.poll_interval,
            heartbeat=self.heartbeat,
            max_clients=self.max_clients,
        )
        app = create_app(
            self.memory,
            self.policy,
            feed=self.feed,
            embeddings=self.embeddings,
            mount_mcp=self.mount_mcp,
            recall_queue_limit=self.recall_queue_limit,
        )
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="on", ws="none",
            timeout_graceful_shutdown=2,
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self._sock = sock
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.feed.close()
        self.server.should_exit = True
        self.thread.join(15)
        self._sock.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return self.base_url

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def sign_in(self) -> dict[str, str]:
        """Redeem a one-time sign-in link as a dashboard tab does (see :func:`signed_in`)."""
        return signed_in(self.login_url())

    def login_url(self) -> str:
        import httpx

        response = httpx.post(f"{self.base_url}/api/dashboard/login", headers=self.auth())
        response.raise_for_status()
        url = response.json()["url"]
        assert isinstance(url, str)
        return url


def signed_in(link: str) -> dict[str, str]:
    """Follow a one-time sign-in link as a dashboard tab does, as request headers: the
    cookie the browser keeps, and the tab's session key, which the page takes from the
    redirect's fragment and sends as a header."""
    answer = httpx.get(link, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    _, _, key = answer.headers["location"].partition("#session=")
    return {"Cookie": answer.headers["set-cookie"].split(";")[0], SESSION_HEADER: key}


class SSEReader:
    """Reads /api/events in a thread; parsed events land in ``self.events`` (a queue)."""

    def __init__(
        self,
        server: LiveServer,
        last_event_id: str | None = None,
        dashboard: dict[str, str] | None = None,
    ) -> None:
        """``dashboard``: read as a signed-in dashboard tab does (:func:`signed_in`'s
        headers), instead of with the token."""
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        headers = server.auth() if dashboard is None else dict(dashboard)
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self.conn.request("GET", "/api/events", headers=headers)
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.comments: queue.Queue[str] = queue.Queue()
        self.error: Exception | None = None
        if self.status == 200:
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()

    def _read(self) -> None:
        current: dict[str, Any] = {}
        try:
            while True:
                raw = self.response.readline()
                if not raw:
                    return
                line = raw.decode("utf-8").rstrip("\r\n")
                if not line:
                    if "event" in current or "data" in current:
                        if "data" in current:
                            current["json"] = json.loads(current["data"])
                        self.events.put(current)
                    current = {}
                elif line.startswith(":"):
                    self.comments.put(line[1:].strip())
                else:
                    key, _, value = line.partition(":")
                    current[key] = value[1:] if value.startswith(" ") else value
        except Exception as exc:  # closed under our feet by close(): the stream is over
            self.error = exc

    def next(self, timeout: float = 5.0, name: str | None = None) -> dict[str, Any]:
        """The next event (of type ``name`` if given), or AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {name or 'SSE'} event within {timeout} s")
            try:
                event = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if name is None or event.get("event") == name:
                return event

    def close(self) -> None:
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()
