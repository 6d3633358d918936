"""The worker's log: a bounded file, and a line that repeats is written once a minute.

A background worker's log (``<log dir>/worker.log``) was its stderr, opened by
the spawner (:func:`memlane.runtime.spawn_detached`) and appended to without
end; uvicorn wrote ``Invalid HTTP request received.`` for every malformed
request, and anyone on the machine may send those without a token (152,417 in
30 s made the file 6.2 MB). Two rules now:

* :class:`RepeatFilter` — a record whose logger, level and message template
  were already written in the last :data:`REPEAT_INTERVAL_S` seconds is counted,
  not written; the next one written after that says how many were left out,
  and :meth:`RepeatFilter.flush` reports what is still counted at shutdown;
* :class:`BoundedLogFile` — given ``memlane serve --log-file`` (the spawner
  passes it), the worker writes its log there itself and moves the file to
  ``<name>.1`` (replacing the previous one) before it passes
  :data:`MAX_LOG_BYTES`: the two files together stay under twice that. The
  file also becomes the process's stdout and stderr, so what is printed rather
  than logged (a traceback of a dying thread) lands in the current file and
  counts towards its size. The rule is the hooks' log's too, in one place
  (:class:`memlane.logfile.LogFile`: 0600, never appended through a link).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memlane.logfile import LogFile

REPEAT_INTERVAL_S = 60.0
MAX_LOG_BYTES = 1024 * 1024
MAX_RECORD_BYTES = 64 * 1024  # one record (a long traceback) never fills the file alone
# Templates remembered at most: a message built with an f-string has one template per value.
MAX_TEMPLATES = 1000
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@dataclass
class _Seen:
    since: float  # when the line was last written
    left_out: int = 0  # how many like it were not written since


class RepeatFilter(logging.Filter):
    """Writes a repeated line at most once per ``interval`` seconds, with a count."""

    def __init__(
        self, interval: float = REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, int, str], _Seen] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen.since < self.interval:
                seen.left_out += 1
                return False
            if seen is None and len(self._seen) >= MAX_TEMPLATES:
                self._forget(now)
            self._seen[key] = _Seen(now)
        if seen is not None and seen.left_out:
            record.msg = f"{record.getMessage()} {_left_out(seen.left_out, now - seen.since)}"
            record.args = None
        return True

    def flush(self) -> list[str]:
        """Lines for the repeats counted but not yet reported (at shutdown); counts reset."""
        now = self._clock()
        lines = []
        with self._lock:
            for (name, _, template), seen in self._seen.items():
                if seen.left_out:
                    lines.append(
                        f"{name}: {template!r} {_left_out(seen.left_out, now - seen.since)}"
                    )
                    seen.left_out = 0
        return lines

    def _forget(self, now: float) -> None:
        """Drop the templates whose interval is over and that have nothing counted."""
        self._seen = {
            key: seen
            for key, seen in self._seen.items()
            if seen.left_out or now - seen.since < self.interval
        }


def _left_out(count: int, seconds: float) -> str:
    return f"[{count:,} more like this in the last {seconds:.0f} s, not logged]"


class BoundedLogFile(logging.Handler):
    """A logging handler over a :class:`memlane.logfile.LogFile`: records are appended to
    ``path``, which moves to ``<path>.1`` before it passes ``max_bytes``.

    With ``own_stdio`` the current file is also this process's stdout and stderr.
    """

    def __init__(
        self, path: Path, max_bytes: int = MAX_LOG_BYTES, *, own_stdio: bool = True
    ) -> None:
        super().__init__()
        self._file = LogFile(path, max_bytes, on_open=_become_stdio if own_stdio else None)
        self._file.open()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8", "replace")
            if len(line) > MAX_RECORD_BYTES:
                line = line[: MAX_RECORD_BYTES - 16] + b" [cut]\n"
            self._file.write(line)
        except Exception:  # logging's own contract: report, never raise
            self.handleError(record)

    def close(self) -> None:
        self.acquire()
        try:
            self._file.close()
        finally:
            self.release()
        super().close()


def _become_stdio(fd: int) -> None:
    """Make ``fd`` this process's stdout and stderr: what is printed rather than logged
    lands in the current file and counts towards its size."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def configure(level: str, log_file: Path | None) -> RepeatFilter:
    """The worker's logging: to ``log_file`` (bounded) or stderr, repeats collapsed.

    uvicorn is run without its own logging config (``log_config=None``) so its
    records reach these handlers too.
    """
    handler: logging.Handler
    handler = BoundedLogFile(log_file) if log_file is not None else logging.StreamHandler()
    repeats = RepeatFilter()
    handler.addFilter(repeats)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.WARNING))
    return repeats
