"""The worker's end of the hook relay (protocol in :mod:`memlane.hooks.relay`).

A daemon thread accepts connections on the relay address; each request runs in
its own short thread through :func:`memlane.hooks.dispatch.handle` — the very
code a hook process runs — with the worker's open Memory. The answer goes back
first; the hook's writes (prompt, observation, session start, checkpoint) run
after it, so the agent waits only for the reading part. Writes are skipped when
the answer could not be delivered: the client then runs the hook itself.

The worker refuses (``F``) instead of handling when the client's ``MEMLANE_*``
environment differs from its own, when the config file changed since the
worker started (its settings would be stale), when the client's deadline has
passed, or when too many hooks are in flight. A failing handler is logged to the
hook log and answered with no output, exactly like a failing hook process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping

from memlane.config import Settings
from memlane.hooks.log import log_line
from memlane.hooks.relay import (
    FALL_BACK,
    HANDLED,
    PROTOCOL,
    env_fingerprint,
    peer_uid,
    relayable,
    socket_address,
)
from memlane.service import Memory

log = logging.getLogger("memlane.worker")
Deferred = list[Callable[[], object]]

MAX_IN_FLIGHT = 16
MAX_REQUEST_BYTES = 8 * 1024 * 1024 + 64 * 1024
READ_TIMEOUT_S = 2.0


def _config_stamp(settings: Settings) -> tuple[int, int] | None:
    try:
        info = os.stat(settings.paths.config_path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


class HookRelay:
    """Serve relayed hooks for ``memory`` until :meth:`stop`."""

    def __init__(
        self,
        memory: Memory,
        settings: Settings,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = dict(os.environ if environ is None else environ)
        self.memory = memory
        self.settings = settings
        self.address = socket_address(env)
        self._env = env_fingerprint(env)
        self._config = _config_stamp(settings)
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self.handled = 0

    def start(self) -> bool:
        """Listen on the relay address; False (and hooks run in-process) when it is taken."""
        if self.address is None or self._env is None:
            return False
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if not self.address.startswith("\0"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.address)
            sock.bind(self.address)
            if not self.address.startswith("\0"):
                os.chmod(self.address, 0o600)
            sock.listen(64)
        except OSError as exc:
            sock.close()
            log.warning("hook relay not started (%s): hooks run in their own processes", exc)
            return False
        self._sock = sock
        _preload()
        self._thread = threading.Thread(target=self._accept, name="memlane-hook-relay", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        self._closing.set()
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            if self.address and not self.address.startswith("\0"):
                with contextlib.suppress(OSError):
                    os.unlink(self.address)
        if self._thread is not None:
            self._thread.join(timeout=2)

    # -- serving ----------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closing.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                conn, _ = sock.accept()
            except OSError:
                if self._closing.is_set():
                    return
                time.sleep(0.05)
                continue
            if not self._slots.acquire(blocking=False):
                self._refuse(conn, "busy")
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _refuse(self, conn: socket.socket, reason: str) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(FALL_BACK + reason.encode())
        conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._serve_one(conn)
        except Exception as exc:  # one broken client must not stop the relay
            log.warning("hook relay request failed: %s", exc)
        finally:
            self._slots.release()

    def _serve_one(self, conn: socket.socket) -> None:
        if peer_uid(conn) != os.getuid():
            return  # another user's process: no answer at all
        conn.settimeout(READ_TIMEOUT_S)
        request = _read_all(conn)
        parsed = _parse(request) if request is not None else None
        if parsed is None:
            self._refuse(conn, "bad request")
            return
        event_arg, deadline, env_lines, payload = parsed
        reason = self._refusal(event_arg, deadline, env_lines)
        if reason is not None:
            self._refuse(conn, reason)
            return
        deferred: Deferred = []
        output = self._handle(event_arg, payload, deferred)
        try:
            conn.sendall(HANDLED + output)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            return  # the client gave up and runs the hook itself: do not write twice
        self.handled += 1
        if deferred:
            self._run_deferred(event_arg, deferred)

    def _refusal(self, event_arg: str, deadline: float, env_lines: list[str]) -> str | None:
        if env_lines != self._env:
            return "environment differs"
        if _config_stamp(self.settings) != self._config:
            return "config changed since the worker started"
        if not relayable(event_arg, {}):
            return "event not relayed"
        if time.monotonic() >= deadline:
            return "deadline passed"
        return None

    def _handle(self, event_arg: str, payload: bytes, deferred: Deferred) -> bytes:
        from memlane.hooks.dispatch import handle

        settings, memory = self.settings, self.memory
        try:
            text = handle(event_arg, payload, settings, memory=memory, deferred=deferred)
        except Exception as exc:  # the hook contract: log, answer nothing
            deferred.clear()
            self._log(event_arg, exc)
            return b""
        return text.encode("utf-8", "replace")

    def _run_deferred(self, event_arg: str, deferred: Deferred) -> None:
        try:
            for action in deferred:
                action()
        except Exception as exc:
            self._log(event_arg, exc)

    def _log(self, event_arg: str, exc: BaseException) -> None:
        message = f"hook {event_arg} (worker): {type(exc).__name__}: {exc}"
        log_line(self.settings.paths.log_dir, message)


def _preload() -> None:
    """Import what the handlers import lazily, so the first relayed hook is not slower."""
    import memlane.capture.pipeline
    import memlane.capture.prompts
    import memlane.hooks.agents
    import memlane.hooks.dispatch
    import memlane.hooks.handlers
    import memlane.hooks.render
    import memlane.project  # noqa: F401


def _read_all(conn: socket.socket) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            chunk = conn.recv(262144)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_REQUEST_BYTES:
                return None
            chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks)


def _parse(request: bytes) -> tuple[str, float, list[str], bytes] | None:
    """(event, deadline, env lines, payload) of a request; None when malformed."""
    head, sep, payload = request.partition(b"\n\n")
    if not sep:
        return None
    lines = head.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 3 or lines[0] != PROTOCOL.decode():
        return None
    try:
        deadline = float(lines[2])
    except ValueError:
        return None
    return lines[1], deadline, lines[3:], payload
