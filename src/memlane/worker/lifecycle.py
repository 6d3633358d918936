"""When a worker ends by itself: its database is gone or replaced, or nobody used it.

A worker started by a SessionStart hook has no one to stop it. Without these
rules it outlived its home (a test's, a CI run's, a throw-away project's),
holding 200–500 MB and answering hooks into a database that no longer
existed. A :class:`Watchdog` thread checks every :data:`CHECK_INTERVAL_S`:

* **the database file** — its device and inode (``hooks.relay.database_identity``)
  must still be the ones of the file the worker opened. Deleted (the home was
  removed) or replaced (restored over, recreated): the worker exits; the next
  hook runs in-process on the new file and starts a new worker;
* **idleness** — no authenticated HTTP request (another local user's requests,
  refused or not, do not count) and no relayed hook or CLI read for
  ``worker.idle_exit_minutes`` (0: never) while the background embedder has
  nothing to do: the worker exits; the next SessionStart starts it again.
  A request counts for as long as it is being answered: an open dashboard's
  live feed (one long request) keeps the worker. It once counted only when it
  began, so a worker left a watched dashboard after the idle time; the page's
  feed then reconnected to whatever took the port next (another user's
  listener got the dashboard cookie that way).

Exiting is the server's ordinary graceful shutdown (``request_exit``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from memlane.config import Settings
from memlane.hooks.relay import database_identity
from memlane.runtime import ADMITTED_STATE_KEY

log = logging.getLogger("memlane.worker")

# A worker whose home is deleted exits within this (plus the shutdown's few seconds).
CHECK_INTERVAL_S = 5.0

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Activity:
    """When the worker last served someone, and how many requests it is answering now.

    A monotonic clock; the relay's thread touches, the event loop begins and ends
    requests, the watchdog's thread reads.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._open = 0
        self.last = clock()

    def touch(self) -> None:
        self.last = self._clock()

    def begin(self) -> None:
        """A request arrived: the worker is not idle until it has been answered."""
        with self._lock:
            self._open += 1
            self.last = self._clock()

    def end(self) -> None:
        """A request was answered (or its client went away): idleness counts from now."""
        with self._lock:
            self._open -= 1
            self.last = self._clock()

    def idle_seconds(self) -> float:
        with self._lock:
            return 0.0 if self._open > 0 else self._clock() - self.last


def track_requests(app: App, activity: Activity) -> App:
    """``app`` with each HTTP request the front door admits as authenticated counted as
    activity while it lasts (ASGI middleware). Another local user's requests (a
    ``/health`` a minute, refused or unauthenticated ones) never keep the worker alive."""

    async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        begun = False

        def admitted() -> None:
            nonlocal begun
            if not begun:
                begun = True
                activity.begin()

        scope.setdefault("state", {})[ADMITTED_STATE_KEY] = admitted
        try:
            await app(scope, receive, send)
        finally:
            if begun:
                activity.end()

    return tracked


def exit_reason(
    settings: Settings, identity: str, activity: Activity, *, busy: bool = False
) -> str | None:
    """Why this worker should exit now, in words; None to keep serving."""
    database = settings.database
    if "://" not in database and database != ":memory:":
        now = database_identity(database)
        if now == "missing":
            return f"its database {settings.database_display} was deleted"
        if now != identity:
            return f"its database {settings.database_display} was replaced by another file"
    limit = settings.worker__idle_exit_minutes * 60
    if limit > 0 and not busy and activity.idle_seconds() >= limit:
        minutes = settings.worker__idle_exit_minutes
        return f"no request or hook for {minutes:g} minutes (worker.idle_exit_minutes)"
    return None


class Watchdog:
    """Checks :func:`exit_reason` every ``interval`` seconds; calls ``request_exit`` once."""

    def __init__(
        self,
        settings: Settings,
        identity: str,
        activity: Activity,
        request_exit: Callable[[str], object],
        *,
        busy: Callable[[], bool] = lambda: False,
        interval: float = CHECK_INTERVAL_S,
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.activity = activity
        self.interval = interval
        self._request_exit = request_exit
        self._busy = busy
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memlane-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                reason = exit_reason(self.settings, self.identity, self.activity, busy=self._busy())
            except Exception:  # a check that fails must not end the worker
                log.exception("worker lifecycle check failed; checking again later")
                continue
            if reason is not None:
                log.warning("worker exiting: %s", reason)
                self._request_exit(reason)
                return
