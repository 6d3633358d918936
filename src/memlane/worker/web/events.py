"""The live feed: changes written by any process, pushed to dashboards over SSE.

Hooks write to SQLite directly, so the worker cannot learn of new rows from its
own requests. :class:`ChangeFeed` polls the store's cheap change marker
(max memory id, max session activity) every ``poll_interval`` seconds and,
when it moves, turns the difference into events while anyone listens:

* ``memory`` / ``summary`` / ``checkpoint`` — a new memory (named by its kind),
  data :class:`~memlane.schemas.FeedMemoryOut`;
* ``summary`` / ``checkpoint`` again when a session's summary or checkpoint is
  rewritten in place (they are upserted by topic key, so their id stays);
* ``session`` — a session started or saw activity, data ``SessionOut``;
* ``reset`` — the client missed more than can be replayed: reload your lists.

Only a client of this worker run can resume from those events, so none are made
before the first client subscribes, nor once ``grace`` seconds have passed since
the last one left (time enough for EventSource to reconnect after a page reload
or a network blip): the poll then only follows the marker, and a worker nobody
watches does not read back and render the rows each Stop writes.

Event ids are ``"<epoch>.<seq>.<max memory id>"``. A client reconnecting with
``Last-Event-ID`` from this worker run gets the buffered events after ``seq``.
One whose history has a hole gets the memories written since its max memory id,
read back from the store, then ``reset``: a client of an earlier run (another
epoch), and one of this run whose ``seq`` is at or before the last event made
before changes went unannounced for want of listeners. Clients are capped
(``max_clients``; the next one gets 503) and idle streams get a heartbeat comment
every ``heartbeat`` seconds so proxies and browsers keep them open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from itertools import takewhile

from starlette.concurrency import run_in_threadpool

from memlane.models import Memory as MemoryRecord
from memlane.models import epoch_us
from memlane.schemas import FeedMemoryOut, SessionOut
from memlane.service import Memory

log = logging.getLogger(__name__)

MAX_NEW_PER_POLL = 200
# Seconds the feed keeps making events after its last client left: an EventSource
# reconnects within its `retry: 2000` after a page reload or a network blip.
LISTEN_GRACE = 60.0


@dataclass(frozen=True, slots=True)
class FeedEvent:
    seq: int
    name: str
    data: str  # JSON text
    max_memory_id: int


class Subscription:
    """One connected client: a queue of events plus a flag set when it fell behind."""

    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue[FeedEvent] = asyncio.Queue(maxsize=size)
        self.dropped = False

    def offer(self, event: FeedEvent) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            # A client that does not read is disconnected rather than buffered forever;
            # it resumes with Last-Event-ID.
            self.dropped = True


def _event_kind(memory: MemoryRecord) -> str:
    return memory.kind if memory.kind in ("summary", "checkpoint") else "memory"


class ChangeFeed:
    """Polls the store and fans out events to SSE subscribers (see module docstring)."""

    def __init__(
        self,
        memory: Memory,
        *,
        poll_interval: float = 0.5,
        heartbeat: float = 15.0,
        max_clients: int = 16,
        history: int = 1000,
        grace: float = LISTEN_GRACE,
    ) -> None:
        self.memory = memory
        self.poll_interval = poll_interval
        self.heartbeat = heartbeat
        self.max_clients = max_clients
        self.grace = grace
        self.epoch = int(time.time() * 1000)
        self._seq = 0
        self._history: deque[FeedEvent] = deque(maxlen=history)
        self._subs: set[Subscription] = set()
        # When the last client left (monotonic clock); None before the first came.
        self._left_at: float | None = None
        # The seq of the last event made before a change went unannounced: a client
        # of this run at or before it has a hole in its history.
        self._unannounced_after: int | None = None
        self._marker: tuple[int, int] | None = None
        self._started_at: datetime | None = None
        self._seen_updates: dict[int, datetime] = {}
        self._task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        from memlane.models import utcnow

        self._started_at = utcnow()
        self._loop = asyncio.get_running_loop()
        self._marker = await run_in_threadpool(self.memory.change_marker)
        self._task = asyncio.create_task(self._run(), name="memlane-change-feed")

    async def stop(self) -> None:
        self.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def close(self) -> None:
        """Ask every stream to end (graceful shutdown); safe from a signal handler."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._closing.set)
        else:
            self._closing.set()

    @property
    def clients(self) -> int:
        return len(self._subs)

    @property
    def last_id(self) -> str:
        top = self._marker[0] if self._marker else 0
        return f"{self.epoch}.{self._seq}.{top}"

    # -- polling ---------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._closing.is_set():
            try:
                await self.poll_once()
            except Exception:
                # The feed must outlive a locked or briefly unavailable database.
                log.exception("live feed: polling the store failed; retrying")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.poll_interval)

    async def poll_once(self) -> int:
        """Look for changes once; returns the number of events published."""
        marker = await run_in_threadpool(self.memory.change_marker)
        previous = self._marker or (0, 0)
        if marker == previous:
            return 0
        if not self._listening():
            self._marker = marker  # nobody can ask for these events: none made
            self._unannounced_after = self._seq
            return 0
        events = await run_in_threadpool(self._collect, previous, marker)
        self._marker = marker
        for name, data in events:
            self._publish(name, data, marker[0])
        return len(events)

    def _listening(self) -> bool:
        if self._subs:
            return True
        return self._left_at is not None and time.monotonic() - self._left_at < self.grace

    def _collect(self, previous: tuple[int, int], marker: tuple[int, int]) -> list[tuple[str, str]]:
        events: list[tuple[str, str]] = []
        new_ids: set[int] = set()
        if marker[0] > previous[0]:
            first = max(previous[0] + 1, marker[0] - MAX_NEW_PER_POLL + 1)
            if first > previous[0] + 1:
                events.append(("reset", json.dumps({"reason": "many new memories"})))
            for memory in sorted(
                self.memory.get_many(list(range(first, marker[0] + 1))), key=lambda m: m.id
            ):
                new_ids.add(memory.id)
                if memory.kind in ("summary", "checkpoint"):
                    self._seen_updates[memory.id] = memory.updated_at
                events.append((_event_kind(memory), _memory_json(memory)))
        if marker[1] > previous[1]:
            recent = self.memory.list_sessions(all_projects=True, limit=50)  # latest first
            # Compared in the marker's unit (epoch_us), as the store computed it.
            active = list(takewhile(lambda s: epoch_us(s.last_activity_at) > previous[1], recent))
            for out in SessionOut.titled(self.memory, active):
                events.append(("session", out.model_dump_json()))
                events.extend(self._rewritten(out.id, new_ids))
        return events

    def _rewritten(self, session_id: str, new_ids: set[int]) -> list[tuple[str, str]]:
        """Summaries and checkpoints of a session rewritten in place since last seen."""
        found: list[tuple[str, str]] = []
        for memory in self.memory.summaries_and_checkpoints(session_id):
            if memory.id in new_ids:
                continue
            seen = self._seen_updates.get(memory.id)
            started = self._started_at
            fresh = memory.updated_at > seen if seen else started and memory.updated_at > started
            if fresh:
                self._seen_updates[memory.id] = memory.updated_at
                found.append((_event_kind(memory), _memory_json(memory)))
        return found

    def _publish(self, name: str, data: str, max_memory_id: int) -> None:
        self._seq += 1
        event = FeedEvent(self._seq, name, data, max_memory_id)
        self._history.append(event)
        for sub in list(self._subs):
            sub.offer(event)

    # -- subscribers -----------------------------------------------------------------

    def subscribe(self, last_event_id: str | None) -> tuple[Subscription, list[FeedEvent]] | None:
        """Register a client; None when the cap is reached. Returns (sub, replay)."""
        if len(self._subs) >= self.max_clients:
            return None
        sub = Subscription(size=1000)
        self._subs.add(sub)
        return sub, self._replay_from_history(last_event_id)

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.discard(sub)
            if not self._subs:
                self._left_at = time.monotonic()

    def _replay_from_history(self, last_event_id: str | None) -> list[FeedEvent]:
        if not last_event_id:
            return []
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return [self._reset_event("unreadable Last-Event-ID")]
        if self._hole_in_history(parsed) is not None:
            return []  # replay_from_store resumes it
        _epoch, seq, _top = parsed
        oldest = self._history[0].seq if self._history else self._seq + 1
        if seq + 1 >= oldest or seq >= self._seq:
            return [e for e in self._history if e.seq > seq]
        return [self._reset_event("too far behind")]

    def _hole_in_history(self, parsed: tuple[int, int, int]) -> str | None:
        """Why the history cannot resume this client, if it cannot (the reset's reason)."""
        epoch, seq, _top = parsed
        if epoch != self.epoch:
            return "worker restarted"
        if self._unannounced_after is not None and seq <= self._unannounced_after:
            return "no events while nobody listened"
        return None

    async def replay_from_store(self, last_event_id: str | None) -> list[FeedEvent]:
        """Resume from the store a client the history cannot resume: one of an earlier
        worker run, or one that missed changes made while nobody listened. The store gives
        back new memories only, not session activity or summaries rewritten in place, so
        a ``reset`` always follows them (even when there are none): the client reloads."""
        parsed = parse_event_id(last_event_id) if last_event_id else None
        reason = self._hole_in_history(parsed) if parsed else None
        if parsed is None or reason is None:
            return []
        after = parsed[2]
        top = self._marker[0] if self._marker else 0
        if top <= after:
            return [self._reset_event(reason)]
        first = max(after + 1, top - MAX_NEW_PER_POLL + 1)
        rows = await run_in_threadpool(self.memory.get_many, list(range(first, top + 1)))
        replay = [
            FeedEvent(self._seq, _event_kind(m), _memory_json(m), m.id)
            for m in sorted(rows, key=lambda m: m.id)
        ]
        return [*replay, self._reset_event(reason)]

    def _reset_event(self, reason: str) -> FeedEvent:
        top = self._marker[0] if self._marker else 0
        return FeedEvent(self._seq, "reset", json.dumps({"reason": reason}), top)

    async def stream(
        self, last_event_id: str | None, until: float | None = None
    ) -> AsyncIterator[str] | None:
        """The SSE text stream of one client, or None when the client cap is reached.

        ``until`` (a ``time.time()``): the stream ends then — a dashboard's when its
        sign-in does, so its reconnect is refused and the page says to sign in again
        (an open stream keeps the worker from idling out)."""
        registered = self.subscribe(last_event_id)
        if registered is None:
            return None
        sub, replay = registered
        replay = [*(await self.replay_from_store(last_event_id)), *replay]
        return self._generate(sub, replay, until)

    async def _generate(
        self, sub: Subscription, replay: list[FeedEvent], until: float | None
    ) -> AsyncIterator[str]:
        try:
            yield f"retry: 2000\n: memlane live feed, last id {self.last_id}\n\n"
            for event in replay:
                yield self.format(event)
            while not self._closing.is_set() and not sub.dropped:
                wait = self.heartbeat if until is None else min(self.heartbeat, until - time.time())
                if wait <= 0:
                    return
                get = asyncio.ensure_future(sub.queue.get())
                closing = asyncio.ensure_future(self._closing.wait())
                try:
                    await asyncio.wait(
                        {get, closing}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    # Also when the client went away mid-wait: leave no task pending. An
                    # item a cancelled get() was about to take stays in the queue.
                    closing.cancel()
                    get.cancel()
                if get.done() and not get.cancelled():
                    yield self.format(get.result())
                elif not self._closing.is_set() and (until is None or time.time() < until):
                    yield f": heartbeat {int(time.time())}\n\n"
        finally:
            self.unsubscribe(sub)

    def format(self, event: FeedEvent) -> str:
        event_id = f"{self.epoch}.{event.seq}.{event.max_memory_id}"
        return f"id: {event_id}\nevent: {event.name}\ndata: {event.data}\n\n"


def parse_event_id(text: str) -> tuple[int, int, int] | None:
    parts = text.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def _memory_json(memory: MemoryRecord) -> str:
    return FeedMemoryOut.model_validate(memory).model_dump_json()
