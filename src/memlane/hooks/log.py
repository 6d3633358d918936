"""The hooks' own error log: one line per failure, rotated by size.

A hook must never print on failure (the agent would show it to the model) and
must never fail because logging failed, so :func:`log_line` swallows its own
errors. A line goes through the privacy filter first (an error may quote a path
holding a secret). It writes only into a log directory of the user's that no one else can
write, and never through a symbolic link (:mod:`memlane.paths`). The file moves
aside by the worker log's rule (:class:`memlane.logfile.LogFile`), a module as lean
as this one: hooks run on every prompt.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from memlane.errors import MemlaneError
from memlane.logfile import LogFile
from memlane.paths import check_private_dir, ensure_private_dir, state_paths

LOG_NAME = "hooks.log"
MAX_BYTES = 512 * 1024
MAX_LINE_CHARS = 2000


def log_path(log_dir: Path) -> Path:
    return log_dir / LOG_NAME


def log_line(log_dir: Path, message: str) -> None:
    """Append one timestamped line to ``<log_dir>/hooks.log`` (0600), which moves to
    ``hooks.log.1`` before it passes :data:`MAX_BYTES` (512 KiB).

    Errors are ignored: there is nowhere left to report them.
    """
    try:
        path = log_path(log_dir)
        check_private_dir(log_dir.parent)  # the state directory holding the logs
        check_private_dir(log_dir)
        ensure_private_dir(log_dir)
        # Again once made: a folder missing a moment ago may be another user's now.
        check_private_dir(log_dir.parent)
        check_private_dir(log_dir)
        from memlane.privacy import scrub

        # An error may quote a path or a value: what is never stored is never logged.
        text = scrub(" ".join(message.split()))[:MAX_LINE_CHARS]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        with LogFile(path, MAX_BYTES) as log:
            log.write(f"{stamp} pid={os.getpid()} {text}\n".encode("utf-8", "replace"))
    except (OSError, MemlaneError):
        return


def log_note(event: str, message: str, log_dir: Path | None = None) -> None:
    """One line ``hook <event>: <message>`` in the hook log of ``log_dir`` (default: the
    state directory's) (never raises)."""
    try:
        log_line(log_dir or state_paths().log_dir, f"hook {event}: {message}")
    except BaseException:
        return
