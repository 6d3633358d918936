"""The SSE live feed: rows written by other processes, heartbeats, client cap, resume."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane.models import Summary
from memlane.service import Memory
from memlane.worker.web.events import ChangeFeed, parse_event_id
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
