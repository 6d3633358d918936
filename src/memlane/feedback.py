"""Telling a person that memlane is busy, from code that knows nothing of terminals.

Core code announces a slow step (waiting for a busy database) with
:func:`waiting`, and long loops (imports, embedding) report their progress
through :func:`progress`. By default nothing is shown: hooks, the worker, MCP
and library users stay silent. An interface that can show it — the CLI on a
terminal (:mod:`memlane.cli.progress`) — installs a :class:`Presenter` with
:func:`present_with`.

What a loop counted is also what a Ctrl-C reports as kept, so a loop commits a batch
and counts it inside :func:`commit_and_count`: no KeyboardInterrupt comes between.

Stdlib only and cheap to import: the store imports it on the hook path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Protocol

    class Tracker(Protocol):
        def advance(self, count: int = 1) -> None: ...

    class Presenter(Protocol):
        def waiting(self, message: str) -> contextlib.AbstractContextManager[None]: ...

        def progress(
            self, label: str, total: int | None
        ) -> contextlib.AbstractContextManager[Tracker]: ...


class _Silent:
    """The tracker of a run nobody watches."""

    def advance(self, count: int = 1) -> None:
        return None


_presenter: Presenter | None = None


def present_with(presenter: Presenter | None) -> Presenter | None:
    """Show waits and progress with ``presenter`` (None: show nothing); returns the previous."""
    global _presenter
    previous, _presenter = _presenter, presenter
    return previous


@contextlib.contextmanager
def waiting(message: str) -> Iterator[None]:
    """Around a wait of unknown length (``message`` says what for)."""
    if _presenter is None:
        yield
        return
    with _presenter.waiting(message):
        yield


@contextlib.contextmanager
def progress(label: str, total: int | None = None) -> Iterator[Tracker]:
    """Around a loop over ``total`` items (None: unknown); call ``advance`` per item done."""
    if _presenter is None:
        yield _Silent()
        return
    with _presenter.progress(label, total) as tracker:
        yield tracker


@contextlib.contextmanager
def commit_and_count() -> Iterator[None]:
    """Around a loop's commit and the progress that counts it: one step for Ctrl-C.

    A SIGINT that comes during the block is held, and sent again (to the handler that
    was there: a KeyboardInterrupt) once the block has ended, so a batch is never kept
    without being counted, nor counted without being kept (an error in the block rolls
    it back before the count). Only the main thread may set a signal handler, and it
    is the one that gets SIGINT: in another thread the block runs as it is.
    """
    import signal
    import threading

    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield  # None: a handler set outside Python, which could not be put back
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)
