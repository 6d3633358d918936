"""A log file of memlane's: appended privately, moved aside before it passes its bound.

The hooks' log (:mod:`memlane.hooks.log`) and the worker's (:mod:`memlane.worker.logs`)
follow one rule, :class:`LogFile`: a write that would take the file past ``max_bytes``
first moves it to ``<name>.1``, replacing the one there, so the two files together stay
under twice the bound and no line is split between them. The file is opened by
:func:`memlane.paths.open_private_append`: 0600, never through a link, nothing but a
regular file.

Hooks load this module when they log a failure: it imports ``os`` and
:mod:`memlane.paths` only (``logging.handlers`` costs more than all of it).
"""

from __future__ import annotations

import contextlib
import os

from memlane.paths import open_private_append

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import TracebackType


class LogFile:
    """Appends to ``path``; moves it to ``<path>.1`` before a write takes it past
    ``max_bytes``. ``on_open`` is given each new descriptor before the old one closes
    (the worker makes it its stdout and stderr)."""

    def __init__(
        self, path: Path, max_bytes: int, *, on_open: Callable[[int], None] | None = None
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._on_open = on_open
        self._fd = -1

    @property
    def backup(self) -> Path:
        """Where the file moves when it is full: ``<name>.1``."""
        return self.path.with_name(self.path.name + ".1")

    def open(self) -> None:
        """Open the file now (a write opens it otherwise); one already past its bound
        (left by an earlier process) moves aside first."""
        self._ready(0)

    def write(self, data: bytes) -> None:
        """Append ``data``, moving the file aside first when ``data`` would take it past
        the bound."""
        self._ready(len(data))
        os.write(self._fd, data)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> LogFile:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _ready(self, adding: int) -> None:
        if self._fd < 0:
            self._reopen()
        info = os.fstat(self._fd)
        # An empty file stays: moving it would replace the backup with nothing.
        if info.st_size and info.st_size + adding > self.max_bytes:
            with contextlib.suppress(FileNotFoundError):
                # Only the file this process has open: another process (two hooks at once)
                # may have moved it already, and moving its new file over the backup would
                # leave a backup of a line or two.
                there = os.lstat(self.path)
                if (there.st_dev, there.st_ino) == (info.st_dev, info.st_ino):
                    os.replace(self.path, self.backup)
            self._reopen()

    def _reopen(self) -> None:
        fd = open_private_append(self.path)
        if self._on_open is not None:
            try:
                self._on_open(fd)
            except BaseException:
                os.close(fd)
                raise
        self.close()
        self._fd = fd
