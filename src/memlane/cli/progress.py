"""Spinners and progress bars on the terminal (rich), for every CLI command.

:func:`install` makes :mod:`memlane.feedback` show what the core announces
(a busy database, an import's progress); commands use :func:`spinner` and
:func:`bar` directly for their own slow steps. Everything goes to stderr and
only when stderr is a terminal, so stdout is the same for pipes and ``--json``;
a command passes ``quiet=True`` (its ``--json``) to show nothing at all.

Nothing appears for a step that ends within :data:`DELAY_S`: a fast command
stays silent, and rich is imported only when something is drawn.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from memlane import feedback

DELAY_S = 0.5


def on_terminal() -> bool:
    """True when stderr is a terminal (where spinners and bars may be drawn)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Delayed:
    """Run ``show`` after ``delay`` seconds unless :meth:`close` came first; ``hide`` then."""

    def __init__(self, show: Callable[[], Any], hide: Callable[[], Any], delay: float) -> None:
        self._show, self._hide = show, hide
        self._lock = threading.Lock()
        self._shown = self._closed = False
        self._timer = threading.Timer(delay, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._closed:
                self._show()
                self._shown = True

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._shown:
                self._hide()


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


@contextlib.contextmanager
def spinner(message: str, *, quiet: bool = False, delay: float = DELAY_S) -> Iterator[None]:
    """A spinner with ``message`` on stderr while the block runs past ``delay`` seconds."""
    if quiet or not on_terminal():
        yield
        return
    state: dict[str, Any] = {}

    def show() -> None:
        state["status"] = _console().status(message)
        state["status"].start()

    shown = _Delayed(show, lambda: state["status"].stop(), delay)
    try:
        yield
    finally:
        shown.close()


class BarTracker:
    """What a loop reports to its bar: items done (and the total, when it changes)."""

    def __init__(self, total: int | None) -> None:
        self.done = 0
        self.total = total
        self.ended = False  # the loop ran to its end
        self.progress: Any = None
        self.task: Any = None

    def advance(self, count: int = 1) -> None:
        self.update(self.done + count)

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        progress = self.progress
        if progress is not None:
            progress.update(self.task, completed=self.done, total=self.total)


# The loop of the last bar a command drew (or would have) and what it had done: what
# :func:`interrupted_line` reports.
_left: tuple[str, BarTracker] | None = None


def interrupted_line() -> str:
    """What to say when Ctrl-C stops a command: the count the loop it was in had done.

    Every long loop (an import, recover, embed --backfill) reports an item done once it
    is committed, in one step with the commit (:func:`memlane.feedback.commit_and_count`),
    and run again skips what is in already: so that much is kept and the same command
    finishes the rest. Once the loop has done all it had to, nothing is left to run again.
    """
    if _left is None or not _left[1].done:
        return "interrupted"
    label, tracker = _left
    if tracker.ended or (tracker.total and tracker.done >= tracker.total):
        return f"interrupted after {label}: all {tracker.done:,} are done and kept"
    of = f" of {tracker.total:,}" if tracker.total else ""
    return (
        f"interrupted while {label}: the {tracker.done:,}{of} done so far are kept; run the"
        " same command again to do the rest (what is in already is skipped)"
    )


@contextlib.contextmanager
def bar(
    label: str, total: int | None, *, quiet: bool = False, delay: float = DELAY_S
) -> Iterator[BarTracker]:
    """A progress bar for ``total`` items (None: a counter); ``advance`` as they are done.

    Off a terminal (or ``quiet``) nothing is drawn, but the count is kept for
    :func:`interrupted_line`.
    """
    global _left
    tracker = BarTracker(total)
    _left = (label, tracker)
    if quiet or not on_terminal():
        yield tracker
        tracker.ended = True
        return

    def show() -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=_console(),
            transient=True,
        )
        tracker.task = progress.add_task(label, total=tracker.total, completed=tracker.done)
        progress.start()
        tracker.progress = progress

    shown = _Delayed(show, lambda: tracker.progress.stop(), delay)
    try:
        yield tracker
    finally:
        shown.close()
    tracker.ended = True


class TerminalPresenter:
    """:class:`memlane.feedback.Presenter` drawing on the terminal."""

    def waiting(self, message: str) -> contextlib.AbstractContextManager[None]:
        return spinner(message, delay=0)

    def progress(
        self, label: str, total: int | None
    ) -> contextlib.AbstractContextManager[feedback.Tracker]:
        return bar(label, total)


def install(*, quiet: bool = False) -> None:
    """Show the core's waits and progress on this terminal (nothing when ``quiet``).

    Off a terminal the presenter is installed all the same: it draws nothing there, but
    its bars count what a loop did for :func:`interrupted_line` (none yet: a command starts).
    """
    global _left
    _left = None
    feedback.present_with(None if quiet else TerminalPresenter())
