"""Prepare helper: a second process that prepares the last turns of a large batch.

A warm ingest of a long transcript is ~0.1 s of Python on one core (parse, privacy
filter, cutting and preparing units, observations), the GIL allowing no second
thread to share it. The worker may start one helper process (:func:`allow`); the
ingest (:mod:`memlane.capture.pipeline`) hands it the last turns of a large batch,
already parsed, and prepares the first ones itself meanwhile, then stores both
parts in order. The helper runs the very functions the ingest would run, so the
rows are the same either way.

The two talk over the helper's stdin and stdout: frames of a length and a pickle
(the helper is this process's own child, started from the same interpreter). The
helper reads its settings first, then requests; it exits when its stdin ends,
which is when the worker closes it or dies however it dies, so none outlives its
worker. It starts when the first batch it would help arrives (:func:`current`), so a
worker that ingests only small batches never starts one. A helper that fails (exits,
answers with an error, or not within ``REPLY_TIMEOUT_S``) is killed and not restarted,
after one log line; the ingest then prepares the turns itself. ``memlane recover``
lends itself one for its run (:func:`lent`); hook processes never start one.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.capture.transcript import Turn
    from memlane.config import Settings

log = logging.getLogger("memlane.capture.helper")

# Longest wait for a reply (~0.05 s when a core is idle, as when it is asked); a helper that
# takes longer is stopped and the ingest goes on alone, within a Stop's 10 s relay timeout.
REPLY_TIMEOUT_S = 5.0
_LENGTH = struct.Struct("!Q")


@dataclass(frozen=True, slots=True)
class Request:
    """Turns of a batch to prepare for ``project`` and ``session_id``, at ``now``."""

    number: int
    project: str
    session_id: str
    now: datetime
    turns: list[Turn]


@dataclass(frozen=True, slots=True)
class Reply:
    """What request ``number`` prepares (``memlane.capture.pipeline.PreparedPart``), or
    None and how it failed."""

    number: int
    part: object | None
    error: str = ""


class HelperFailed(Exception):
    """The helper exited, answered with an error, or took too long."""


class PrepareHelper:
    """One helper process, and the request it is working on (one at a time)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.requests = 0  # sent so far
        self._lock = threading.Lock()
        self._outstanding: tuple[int, threading.Thread] | None = None
        self._process = subprocess.Popen(
            [sys.executable, "-m", "memlane.capture.helper_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._out = self._process.stdin.fileno()
        self._in = self._process.stdout.fileno()
        os.set_blocking(self._out, False)  # a request is sent with a timeout
        try:
            write_frame(self._out, pickle.dumps(settings, pickle.HIGHEST_PROTOCOL), REPLY_TIMEOUT_S)
        except OSError:
            self.close(kill=True)
            raise

    @property
    def pid(self) -> int:
        return self._process.pid

    def submit(
        self, settings: Settings, project: str, session_id: str, now: datetime, turns: list[Turn]
    ) -> int | None:
        """Send ``turns`` to be prepared; the request's number for :meth:`reply`, or None
        when the helper cannot take them (other settings, busy with another thread's).
        :class:`HelperFailed` when it cannot be sent."""
        if settings != self.settings:
            return None
        with self._lock:
            if self._outstanding is not None:
                number, thread = self._outstanding
                if thread.is_alive() and thread is not threading.current_thread():
                    return None
                self._read_reply(number)  # left unread by an ingest that failed
            self.requests += 1
            request = Request(self.requests, project, session_id, now, turns)
            try:
                data = pickle.dumps(request, pickle.HIGHEST_PROTOCOL)
                write_frame(self._out, data, REPLY_TIMEOUT_S)
            except Exception as exc:  # ended, timed out, or turns that do not pickle
                raise HelperFailed(str(exc) or type(exc).__name__) from exc
            self._outstanding = (self.requests, threading.current_thread())
            return self.requests

    def reply(self, number: int) -> object:
        """The prepared part of request ``number``; :class:`HelperFailed` if none comes."""
        with self._lock:
            reply = self._read_reply(number)
        if reply.part is None:
            raise HelperFailed(reply.error)
        return reply.part

    def _read_reply(self, number: int) -> Reply:
        try:
            reply = pickle.loads(read_frame(self._in, REPLY_TIMEOUT_S))  # noqa: S301  # our child
        except Exception as exc:  # ended, timed out, or not a reply we can read
            raise HelperFailed(str(exc) or type(exc).__name__) from exc
        finally:
            self._outstanding = None
        if not isinstance(reply, Reply) or reply.number != number:
            raise HelperFailed(f"a reply out of turn (expected {number})")
        return reply

    def close(self, *, kill: bool = False) -> None:
        """End the helper (its stdin closes: it exits; ``kill``: killed first, as one that
        failed) and wait for it."""
        process = self._process
        if kill:
            process.kill()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_helper: PrepareHelper | None = None
_allowed: Settings | None = None  # this process may start a helper, with these settings
_helper_lock = threading.Lock()


def allow(settings: Settings) -> None:
    """Let this process (the worker) start a helper, when an ingest first asks for one;
    not where there is one core or no POSIX pipes to poll."""
    global _allowed
    if os.name == "posix" and (os.cpu_count() or 1) >= 2:
        _allowed = settings


def current() -> PrepareHelper | None:
    """This process's helper. The first call (after :func:`allow`) starts it and gives
    None, as do calls after it failed or where it is not allowed: a helper starts in
    ~0.1 s, so the ingest that asked first goes on alone."""
    global _helper
    if _helper is not None or _allowed is None:
        return _helper
    with _helper_lock:
        if _helper is None and _allowed is not None:
            try:
                _helper = PrepareHelper(_allowed)
            except OSError as exc:
                _stop_allowing()
                log.warning("prepare helper not started (%s): ingests stay in one process", exc)
    return None


def failed(helper: PrepareHelper, reason: str) -> None:
    """Stop ``helper`` after a failure, with one log line; none is started again."""
    with _helper_lock:
        if _helper is helper:
            _stop_allowing()
    log.warning("prepare helper failed (%s): ingests go on in one process", reason)
    helper.close(kill=True)


@contextmanager
def lent(settings: Settings) -> Iterator[None]:
    """Let this process's ingests use a helper while the block runs (a bulk ingest:
    ``memlane recover``), then stop it. Where one is allowed already (the worker),
    nothing changes: that one stays the worker's.

    It starts as the worker's does, when a batch first asks for it: one started up
    front is still starting (a runnable task) when the first ingest looks for an idle
    core, which it then does not find."""
    if _allowed is not None:
        yield
        return
    allow(settings)
    try:
        yield
    finally:
        stop()


def stop() -> None:
    """Stop this process's helper, if any; none is started again until :func:`allow`."""
    with _helper_lock:
        helper = _helper
        _stop_allowing()
    if helper is not None:
        helper.close()


def _stop_allowing() -> None:
    global _helper, _allowed
    _helper, _allowed = None, None


# -- frames --------------------------------------------------------------------------


def write_frame(fd: int, data: bytes, timeout: float | None = None) -> None:
    """``data`` as one frame to ``fd``; with ``timeout`` (``fd`` non-blocking), a
    TimeoutError when the reader takes no part of it for that long."""
    view = memoryview(_LENGTH.pack(len(data)) + data)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            if not poller.poll(None if timeout is None else timeout * 1000):
                raise TimeoutError(f"the helper took no request within {timeout:g} s") from None


def read_frame(fd: int, timeout: float | None) -> bytes:
    """One frame from ``fd``; EOFError when it ends first, TimeoutError after ``timeout``."""
    (size,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, timeout))
    return _read_exactly(fd, size, timeout)


def _read_exactly(fd: int, size: int, timeout: float | None) -> bytes:
    chunks: list[bytes] = []
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while size:
        if timeout is not None and not poller.poll(timeout * 1000):
            raise TimeoutError(f"no reply within {timeout:g} s")
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the helper's pipe ended")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
