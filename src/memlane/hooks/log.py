"""The hooks' own error log: one line per failure, rotated by size.

A hook must never print on failure (the agent would show it to the model) and
must never fail because logging failed, so :func:`log_line` swallows its own
errors. ``logging.handlers`` is not used: importing it costs more than the
whole rotation below, and hooks run on every prompt.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LOG_NAME = "hooks.log"
MAX_BYTES = 512 * 1024
MAX_LINE_CHARS = 2000


def log_path(log_dir: Path) -> Path:
    return log_dir / LOG_NAME


def log_line(log_dir: Path, message: str) -> None:
    """Append one timestamped line to ``<log_dir>/hooks.log`` (0600), rotating at 512 KiB.

    The previous log is kept as ``hooks.log.1``. Errors are ignored: there is
    nowhere left to report them.
    """
    try:
        path = log_path(log_dir)
        if not log_dir.is_dir():
            log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            if path.stat().st_size > MAX_BYTES:
                os.replace(path, path.with_name(LOG_NAME + ".1"))
        except FileNotFoundError:
            pass
        text = " ".join(message.split())[:MAX_LINE_CHARS]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{stamp} pid={os.getpid()} {text}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        return
