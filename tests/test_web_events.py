"""The SSE live feed: rows written by other processes, heartbeats, client cap, resume."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncGenerator, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memlane.models import Summary
from memlane.service import Memory
from memlane.worker.web.events import ChangeFeed, FeedEvent, Subscription, parse_event_id
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import LiveServer, SSEReader


@pytest.fixture
def server(memory: Memory) -> Iterator[LiveServer]:
    live = LiveServer(memory, poll_interval=0.05).start()
    yield live
    live.stop()


def test_receives_a_row_written_by_another_process(server: LiveServer, home: Path) -> None:
    reader = SSEReader(server)
    try:
        assert reader.status == 200
        assert reader.response.getheader("content-type").startswith("text/event-stream")
        done = subprocess.run(
            [*MEMLANE_CMD, "--project", "cli-proj", "save", "written by a separate process"],
            env=run_env(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        event = reader.next(timeout=10, name="memory")
        data = event["json"]
        assert data["snippet"] == "written by a separate process"
        assert data["project"] == "cli-proj"
        assert "normalized_hash" not in event["data"]
        assert parse_event_id(event["id"]) is not None
    finally:
        reader.close()


def test_sessions_summaries_and_checkpoint_events(server: LiveServer) -> None:
    memory = server.memory
    reader = SSEReader(server)
    try:
        memory.session_start("s-live", project="web")
        session = reader.next(name="session")["json"]
        assert session["id"] == "s-live" and session["status"] == "active"
        summary = Summary(session_id="s-live", project="web", is_auto_generated=True, request="v1")
        memory.save_summary(summary)
        first = reader.next(name="summary")["json"]
        time.sleep(0.01)
        # Rewritten in place (same id): still announced.
        memory.save_summary(Summary(session_id="s-live", project="web", is_auto_generated=True,
                                    request="v2", completed=("done",)))  # fmt: skip
        second = reader.next(name="summary")["json"]
        assert second["id"] == first["id"]
        assert "v2" in second["snippet"]
    finally:
        reader.close()


def test_resume_with_last_event_id(server: LiveServer) -> None:
    memory = server.memory
    reader = SSEReader(server)
    memory.save("first row", project="p")
    first = reader.next(name="memory")
    reader.close()
    memory.save("second row", project="p")
    memory.save("third row", project="p")
    deadline = time.monotonic() + 30  # a wait, not a speed check
    while server.feed.last_id.split(".")[2] != str(memory.stats().memories):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    resumed = SSEReader(server, last_event_id=first["id"])
    try:
        got = [resumed.next(name="memory")["json"]["snippet"] for _ in range(2)]
        assert got == ["second row", "third row"]
    finally:
        resumed.close()


def test_resume_after_a_worker_restart_replays_from_the_store(server: LiveServer) -> None:
    memory = server.memory
    old = memory.save("before the restart", project="p").id
    memory.save("missed while down", project="p")
    deadline = time.monotonic() + 30  # a wait, not a speed check
    while server.feed.last_id.split(".")[2] != str(old + 1):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stale_id = f"{server.feed.epoch - 1000}.7.{old}"  # an id from an earlier worker run
    reader = SSEReader(server, last_event_id=stale_id)
    try:
        assert reader.next(name="memory")["json"]["snippet"] == "missed while down"
        assert reader.next(name="reset")["json"]["reason"] == "worker restarted"
    finally:
        reader.close()


def test_heartbeat_and_client_cap(memory: Memory) -> None:
    live = LiveServer(memory, heartbeat=0.2, max_clients=1).start()
    first = SSEReader(live)
    try:
        assert first.status == 200
        deadline = time.monotonic() + 30  # a wait, not a speed check
        heartbeats = []
        while len(heartbeats) < 2 and time.monotonic() < deadline:
            comment = first.comments.get(timeout=30)
            if comment.startswith("heartbeat"):
                heartbeats.append(comment)
        assert len(heartbeats) == 2
        second = SSEReader(live)
        assert second.status == 503
        assert second.response.getheader("retry-after") == "5"
        second.close()
    finally:
        first.close()
        live.stop()


def test_garbage_last_event_id_asks_the_client_to_reload(server: LiveServer) -> None:
    reader = SSEReader(server, last_event_id="not-an-id")
    try:
        assert reader.next(name="reset")["json"]["reason"] == "unreadable Last-Event-ID"
    finally:
        reader.close()


def test_no_event_is_made_before_a_client_subscribes(memory: Memory) -> None:
    """Only a client of this run can resume from the feed's history: until one has
    subscribed, a poll follows the marker and reads no row (a Stop's hundreds of rows
    were read and rendered for nobody)."""
    feed = ChangeFeed(memory, poll_interval=3600)

    async def scenario() -> tuple[int, int, list[str]]:
        await feed.start()
        try:
            memory.save("written while nobody listens", project="p")
            unheard = await feed.poll_once()
            sub, replay = feed.subscribe(None) or pytest.fail("client refused")
            memory.save("written for a client", project="p")
            heard = await feed.poll_once()
            names = [sub.queue.get_nowait().name for _ in range(sub.queue.qsize())]
            assert replay == []
            return unheard, heard, names
        finally:
            await feed.stop()

    unheard, heard, names = asyncio.run(scenario())
    assert unheard == 0
    assert heard >= 1 and "memory" in names
    assert feed.last_id.split(".")[2] == str(memory.stats().memories)


# Below, the feed is driven by hand (poll_once, no start()): no background poll races
# the test's own.


def _drain(sub: Subscription) -> list[FeedEvent]:
    return [sub.queue.get_nowait() for _ in range(sub.queue.qsize())]


def _fields(text: str) -> dict[str, str]:
    """The fields of one formatted SSE event."""
    return dict(line.split(": ", 1) for line in text.splitlines() if line)


def _event_id(feed: ChangeFeed, event: FeedEvent) -> str:
    return _fields(feed.format(event))["id"]


async def _reconnect(feed: ChangeFeed, last_event_id: str | None) -> list[dict[str, str]]:
    """The events a client reconnecting with this Last-Event-ID is sent before its first
    heartbeat (the replay; the feed is not polled meanwhile)."""
    stream = await feed.stream(last_event_id) or pytest.fail("client refused")
    assert isinstance(stream, AsyncGenerator)
    sent: list[dict[str, str]] = []
    try:
        async for text in stream:
            if text.startswith(": heartbeat"):
                return sent
            if not text.startswith("retry:"):
                sent.append(_fields(text))
    finally:
        await stream.aclose()
    return pytest.fail("the stream ended")


def _snippets(events: list[dict[str, str]]) -> list[str]:
    return [json.loads(e["data"])["snippet"] for e in events if e["event"] == "memory"]


async def _client_saw_then_left(feed: ChangeFeed, memory: Memory, text: str) -> FeedEvent:
    """A client subscribes, is sent the memory ``text`` saved meanwhile, and leaves; the
    event it last got."""
    await feed.poll_once()  # rows written so far are old news
    sub, _replay = feed.subscribe(None) or pytest.fail("client refused")
    memory.save(text, project="p")
    await feed.poll_once()
    (seen,) = [e for e in _drain(sub) if e.name == "memory"]
    feed.unsubscribe(sub)
    return seen


def test_no_event_is_made_once_the_last_client_left_and_the_grace_passed(memory: Memory) -> None:
    """A dashboard opened then closed no longer has every later Stop's rows read and
    rendered for nobody."""
    feed = ChangeFeed(memory, poll_interval=3600, grace=0)

    async def scenario() -> tuple[int, str, str]:
        await feed.poll_once()  # rows written so far are old news
        sub, _replay = feed.subscribe(None) or pytest.fail("client refused")
        memory.save("heard", project="p")
        assert await feed.poll_once() >= 1
        feed.unsubscribe(sub)
        seq = feed.last_id.split(".")[1]
        memory.save("written after the last client left", project="p")
        return await feed.poll_once(), seq, feed.last_id.split(".")[1]

    made, seq_before, seq_after = asyncio.run(scenario())
    assert made == 0
    assert seq_after == seq_before  # nothing in the history either
    assert feed.last_id.split(".")[2] == str(memory.stats().memories)  # the marker followed


def test_within_the_grace_events_are_made_and_a_reconnect_resumes_from_history(
    memory: Memory,
) -> None:
    """A page reload: the client is gone for a moment and resumes where it was."""
    feed = ChangeFeed(memory, poll_interval=3600, heartbeat=0.01, grace=60)

    async def scenario() -> tuple[int, list[dict[str, str]]]:
        seen = await _client_saw_then_left(feed, memory, "seen before the reload")
        memory.save("written during the reload", project="p")
        made = await feed.poll_once()
        return made, await _reconnect(feed, _event_id(feed, seen))

    made, resumed = asyncio.run(scenario())
    assert made >= 1
    assert "reset" not in [e["event"] for e in resumed]
    assert _snippets(resumed) == ["written during the reload"]


def test_a_reconnect_from_before_the_gap_gets_the_missed_memories_from_the_store(
    memory: Memory,
) -> None:
    """The history has a hole where no events were made: the client is not told it missed
    nothing, but gets what a client of an earlier worker run gets."""
    feed = ChangeFeed(memory, poll_interval=3600, heartbeat=0.01, grace=0)

    async def scenario() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        seen = await _client_saw_then_left(feed, memory, "seen before the gap")
        memory.save("missed while nobody listened", project="p")
        assert await feed.poll_once() == 0
        resumed = await _reconnect(feed, _event_id(feed, seen))
        return resumed, await _reconnect(feed, None)

    resumed, fresh = asyncio.run(scenario())
    assert [e["event"] for e in resumed] == ["memory", "reset"]
    assert _snippets(resumed) == ["missed while nobody listened"]
    assert json.loads(resumed[1]["data"])["reason"] == "no events while nobody listened"
    assert fresh == []  # no Last-Event-ID: no replay


def test_a_reconnect_from_before_a_gap_without_new_memories_is_still_reset(
    memory: Memory,
) -> None:
    """Session activity (a session started, a summary rewritten in place) is no new memory
    row, and the store replay carries memories only: the client must reload, not resume
    as if it had missed nothing."""
    feed = ChangeFeed(memory, poll_interval=3600, heartbeat=0.01, grace=0)

    async def scenario() -> list[dict[str, str]]:
        seen = await _client_saw_then_left(feed, memory, "seen before the gap")
        memory.session_start("started-while-nobody-listened", project="p")
        assert await feed.poll_once() == 0
        return await _reconnect(feed, _event_id(feed, seen))

    resumed = asyncio.run(scenario())
    assert [e["event"] for e in resumed] == ["reset"]
    assert json.loads(resumed[0]["data"])["reason"] == "no events while nobody listened"


def test_a_new_client_after_the_gap_makes_events_again(memory: Memory) -> None:
    feed = ChangeFeed(memory, poll_interval=3600, heartbeat=0.01, grace=0)

    async def scenario() -> tuple[list[FeedEvent], list[dict[str, str]]]:
        await feed.poll_once()
        first, _replay = feed.subscribe(None) or pytest.fail("client refused")
        feed.unsubscribe(first)
        memory.save("missed while nobody listened", project="p")
        assert await feed.poll_once() == 0
        back, replay = feed.subscribe(None) or pytest.fail("client refused")
        assert replay == []
        memory.save("heard again", project="p")
        await feed.poll_once()
        heard = [e for e in _drain(back) if e.name == "memory"]
        memory.save("after the gap", project="p")
        await feed.poll_once()
        # An id made after the gap resumes from the history, as before.
        resumed = await _reconnect(feed, _event_id(feed, heard[0]))
        feed.unsubscribe(back)
        return heard, resumed

    heard, resumed = asyncio.run(scenario())
    assert [json.loads(e.data)["snippet"] for e in heard] == ["heard again"]
    assert "reset" not in [e["event"] for e in resumed]
    assert _snippets(resumed) == ["after the gap"]


def test_a_session_deleted_between_listing_and_reading_ends_no_poll(memory: Memory) -> None:
    """The feed lists changed sessions, then reads each one's rewritten summaries: a session
    deleted in between has none."""
    feed = ChangeFeed(memory, poll_interval=3600)
    memory.save("soon gone", project="p", session_id="sess-deleted-1")
    assert memory.delete(session_id="sess-deleted-1")
    assert feed._rewritten("sess-deleted-1", set()) == []


def test_a_session_with_a_blank_id_from_an_older_version_ends_no_poll(memory: Memory) -> None:
    """The feed read each changed session's summaries through the facade's listing, which
    refuses a blank session id: a session an older version stored with one made every
    poll fail while it was among the latest, and no later change was announced."""
    from memlane.models import Session, utcnow

    feed = ChangeFeed(memory, poll_interval=3600)

    async def scenario() -> list[str]:
        await feed.poll_once()
        sub, _replay = feed.subscribe(None) or pytest.fail("client refused")
        # A second before the next session's start: the marker counts whole milliseconds,
        # and two activities in one millisecond are one change.
        then = utcnow() - timedelta(seconds=1)
        memory.store.upsert_session(
            Session(id="   ", project="p", status="active", started_at=then, last_activity_at=then)
        )
        await feed.poll_once()
        memory.session_start("after-the-blank-one", project="p")
        await feed.poll_once()
        names = [json.loads(e.data).get("id") for e in _drain(sub) if e.name == "session"]
        feed.unsubscribe(sub)
        return names

    names = asyncio.run(scenario())
    assert names[0] == "   " and "after-the-blank-one" in names


@pytest.mark.parametrize(
    ("first_at", "gap"),
    [
        # A marker of whole milliseconds, compared in seconds: a session active at
        # .123456 s stayed newer than the marker it had set, and was announced again.
        (123_456, timedelta(seconds=1)),
        # Nor did such a marker move for a second activity within the millisecond of the
        # first: that session was not announced.
        (123_100, timedelta(microseconds=500)),
    ],
)
def test_each_session_activity_is_announced_once(
    memory: Memory, first_at: int, gap: timedelta
) -> None:
    from memlane.models import Session, utcnow

    feed = ChangeFeed(memory, poll_interval=3600)
    start = utcnow().replace(microsecond=first_at)

    def active(session_id: str, at: datetime) -> None:
        memory.store.upsert_session(
            Session(id=session_id, project="p", status="active", started_at=at, last_activity_at=at)
        )

    async def scenario() -> list[str]:
        await feed.poll_once()
        sub, _replay = feed.subscribe(None) or pytest.fail("client refused")
        active("first-session", start)
        await feed.poll_once()
        active("second-session", start + gap)
        await feed.poll_once()
        names = [json.loads(e.data)["id"] for e in _drain(sub) if e.name == "session"]
        feed.unsubscribe(sub)
        return names

    assert asyncio.run(scenario()) == ["first-session", "second-session"]
