"""Work on a second core: an iterator run ahead in a thread, or one call run beside.

:class:`Job` runs one function on a thread of its own while the caller goes on
(a batch insert: SQLite indexes it in C with the GIL released while the caller
prepares the next batch in Python); its result, or its exception, is what
:meth:`Job.result` returns or raises, after joining the thread.

:func:`ahead` runs an iterator ahead in a thread: the next batch is prepared while this
one is stored.

Python's ``sqlite3`` releases the GIL while SQLite steps, so a thread that
parses, scrubs and hashes the next batch overlaps the Python work with the
current batch's inserts (FTS5 indexing is C work): the second core does the
preparing. :func:`ahead` hands the consumer the items in their order; an
exception in the producer is raised in the consumer at the item where it
happened; leaving the block (done, failed or interrupted) stops and joins the
thread, so none is left behind.

While a producer of :func:`ahead` runs, the interpreter's switch interval is shortened: a
thread coming back from SQLite otherwise waits up to 5 ms for the GIL, once
per statement. The old interval is restored when the last producer ends.

The thread only pays when a core is free: the consumer hands the GIL back and
forth once per row, and on a busy machine each hand-over waits for the
scheduler. Measured once on 2 shared cores (load 3-5, not a kept benchmark), a
batch import ran 10-30% slower in wall time with the thread than without, for
5-10% more CPU. So
:func:`ahead` runs the producer in the calling thread unless :func:`spare_core`
says a core is idle.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")

# Seconds a thread may hold the GIL while another waits for it (Python's default: 5 ms):
# the consumer asks for it back after each SQLite step, so its wait is this per row.
SWITCH_INTERVAL = 0.00002
# How long a blocked producer waits before it checks whether the consumer left.
_POLL_S = 0.05

_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0


class _End:
    """What the producer puts last: the end of the items, or the exception it raised."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def _short_switches(on: bool) -> None:
    global _switch_users, _switch_saved
    with _switch_lock:
        if on:
            if _switch_users == 0:
                _switch_saved = sys.getswitchinterval()
                sys.setswitchinterval(min(_switch_saved, SWITCH_INTERVAL))
            _switch_users += 1
        else:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)


@contextmanager
def short_switches() -> Iterator[None]:
    """The switch interval shortened for the block: a thread waiting for the GIL (one
    that answers a prompt while this one ingests) gets it within SWITCH_INTERVAL instead
    of 5 ms each time it comes back from I/O. Costs nothing while no thread waits."""
    _short_switches(True)
    try:
        yield
    finally:
        _short_switches(False)


class Job(Generic[T]):
    """One call of a function, run on a thread of its own (``beside=True``) or at once
    (an exception then raised at once, as by a plain call).

    :meth:`result` gives what it returned, or raises what it raised on its thread;
    the thread ends with the function, and :meth:`result` and :meth:`wait` join it.
    """

    __slots__ = ("_error", "_thread", "_value")

    def __init__(self, work: Callable[[], T], *, beside: bool) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if beside:
            self._thread = threading.Thread(
                target=self._run, args=(work,), name="memlane-job", daemon=True
            )
            self._thread.start()
        else:
            self._value = work()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self._value = work()
        except BaseException as exc:  # raised by result(), in the caller's thread
            self._error = exc

    def wait(self) -> None:
        """Wait for the job to end (its error, if any, kept for :meth:`result`)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def result(self) -> T:
        """What the function returned, once it has; its exception raised here."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def spare_core() -> bool:
    """True when this machine has a core to spare: two or more, and a load average
    (last minute) at least half a core below their number. The average still counts
    work that just ended (an import run right after another finds ~1 on an idle 2-core
    machine), so a whole free core is not required; a busy machine (load 3-5 on 2
    cores, where the thread measured slower) stays well above it."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Windows, or not available here: assume the worst
        return False
    return cores >= 2 and load <= cores - 0.5


# /proc/loadavg is read up to this many times, this far apart, before a core is taken for
# busy: a task that is runnable for an instant (the hook process that relayed the call,
# about to wait for its answer) is not one keeping a core busy.
IDLE_READINGS = 3
IDLE_READING_GAP_S = 0.001


def idle_core() -> bool:
    """:func:`spare_core`, and where Linux tells (``/proc/loadavg``'s count of tasks
    runnable now, the caller's thread included) no more runnable tasks than cores less
    one, in one of ``IDLE_READINGS`` readings: a core nobody is using at this moment, for
    work that needs one to itself (a second process). The load average alone reads
    1.2-1.5 on 2 cores while another process keeps one of them busy; splitting an ingest
    then gained little. One reading alone found a second task runnable for 9 of 21
    relayed Stops on an idle machine: a task gone a moment later."""
    if not spare_core():
        return False
    cores = os.cpu_count() or 1
    for reading in range(IDLE_READINGS):
        if reading:
            time.sleep(IDLE_READING_GAP_S)
        try:
            with open("/proc/loadavg", encoding="ascii") as handle:
                runnable = int(handle.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return True  # no such count here: the load average decides
        if runnable <= cores - 1:
            return True
    return False


@contextmanager
def ahead(
    source: Iterable[T], *, depth: int = 2, thread: bool | None = None
) -> Iterator[Iterator[T]]:
    """The items of ``source``, produced by a thread up to ``depth`` items ahead.

    ``thread``: whether to use one (default: when :func:`spare_core`); without,
    the items are produced as they are asked for, in the calling thread.
    """
    import queue  # here: the store imports this module for Job, on the hook path

    if not (spare_core() if thread is None else thread):
        iterator = iter(source)
        try:
            yield iterator
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
        return
    items: queue.Queue[T | _End] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: T | _End) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        iterator = iter(source)
        try:
            for item in iterator:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put(_End(exc))
            return
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
        put(_End())

    def consume() -> Iterator[T]:
        while True:
            item = items.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item

    producer = threading.Thread(target=produce, name="memlane-ahead", daemon=True)
    _short_switches(True)
    try:
        producer.start()
        yield consume()
    finally:
        stop.set()
        producer.join()
        _short_switches(False)
