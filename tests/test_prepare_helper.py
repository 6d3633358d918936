"""The prepare helper process (``memlane.capture.helper``) with real SQLite stores.

A batch of ``HELPER_MIN_BYTES`` or more, when a core is idle, has its last turns
prepared by the helper: the rows stored are those of the in-process path, field for
field. A helper that dies or hangs is replaced by the in-process path after one log
line; no helper outlives the process that started it, stopped or killed.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memlane import background
from memlane.capture import helper, pipeline
from memlane.capture.sources import SessionFile
from memlane.config import Settings
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.worker.relay_server import HookRelay
from tests.conftest import run_env
from tests.test_bulk_write import hits, rows, write_transcript


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` has exited (a zombie counts) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """A transcript of two batches, each large enough for the helper."""
    path = write_transcript(tmp_path / "big.jsonl", 400)
    assert path.stat().st_size >= 2 * pipeline.HELPER_MIN_BYTES
    return path


@pytest.fixture
def idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A core to spare, whatever the load of the machine running the tests."""
    monkeypatch.setattr(background, "spare_core", lambda: True)
    monkeypatch.setattr(background, "idle_core", lambda: True)


def settings_for(settings: Settings, tmp_path: Path, name: str) -> Settings:
    return replace(settings, db_target=str(tmp_path / f"{name}.db"))


@pytest.fixture
def helped(settings: Settings, tmp_path: Path) -> Settings:
    """The settings of the database the helper prepares for (the worker's)."""
    return settings_for(settings, tmp_path, "helped")


@pytest.fixture
def prepare_helper(helped: Settings, idle: None) -> Iterator[helper.PrepareHelper]:
    helper.allow(helped)
    assert helper.current() is None  # the first ask starts it
    started = helper.current()
    assert started is not None
    yield started
    helper.stop()
    assert gone(started.pid)


def _stored(settings: Settings, transcript: Path) -> tuple[list[Any], list[list[int]]]:
    """Rows and full-text hits of ``transcript`` ingested twice into a new database."""
    with open_memory(settings=settings) as memory:
        report = memory.ingest_transcript("s1", str(transcript), project="p")
        assert report.chunks > 0
        again = memory.ingest_transcript("s2", str(transcript), project="p")
        assert again.chunks == report.chunks
        return rows(memory), [hits(memory, w) for w in ("retry", "worker", "redacted")]


def test_the_helper_stores_the_rows_of_the_in_process_path(
    tmp_path: Path,
    settings: Settings,
    helped: Settings,
    big: Path,
    prepare_helper: helper.PrepareHelper,
) -> None:
    by_helper = _stored(helped, big)
    assert prepare_helper.requests == 4  # two batches, two sessions
    assert helper.current() is prepare_helper  # it never failed
    helper.stop()
    alone = _stored(settings_for(settings, tmp_path, "alone"), big)
    assert by_helper == alone
    assert any("[REDACTED" in str(row) for row in by_helper[0])  # the filter ran there


def test_small_batches_and_busy_machines_stay_in_process(
    helped: Settings,
    transcript: Path,
    big: Path,
    prepare_helper: helper.PrepareHelper,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with open_memory(settings=helped) as memory:
        assert memory.ingest_transcript("s1", str(transcript), project="p").chunks > 0
        assert prepare_helper.requests == 0
        monkeypatch.setattr(background, "idle_core", lambda: False)
        assert memory.ingest_transcript("s2", str(big), project="p").chunks > 0
        assert prepare_helper.requests == 0


def test_a_dead_helper_falls_back_with_one_log_line(
    tmp_path: Path,
    settings: Settings,
    helped: Settings,
    big: Path,
    prepare_helper: helper.PrepareHelper,
    caplog: pytest.LogCaptureFixture,
) -> None:
    os.kill(prepare_helper.pid, signal.SIGKILL)
    assert gone(prepare_helper.pid)
    with caplog.at_level(logging.WARNING, logger="memlane.capture.helper"):
        by_helper = _stored(helped, big)
    lines = [r.getMessage() for r in caplog.records if r.name == "memlane.capture.helper"]
    assert len(lines) == 1 and "prepare helper failed" in lines[0]
    assert helper.current() is None  # not started again
    assert by_helper == _stored(settings_for(settings, tmp_path, "alone"), big)


def test_a_helper_that_does_not_answer_is_stopped(
    tmp_path: Path,
    settings: Settings,
    helped: Settings,
    big: Path,
    prepare_helper: helper.PrepareHelper,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(helper, "REPLY_TIMEOUT_S", 0.5)
    os.kill(prepare_helper.pid, signal.SIGSTOP)  # alive, its pipes open, never answering
    with caplog.at_level(logging.WARNING, logger="memlane.capture.helper"):
        by_helper = _stored(helped, big)
    lines = [r.getMessage() for r in caplog.records if r.name == "memlane.capture.helper"]
    assert len(lines) == 1 and "within 0.5 s" in lines[0]
    assert gone(prepare_helper.pid)
    assert by_helper == _stored(settings_for(settings, tmp_path, "alone"), big)


def test_the_relay_stops_its_helper(home: Path, memory: Memory, settings: Settings) -> None:
    relay = HookRelay(memory, settings, environ=run_env(home))
    assert relay.start()
    try:
        deadline = time.monotonic() + 30
        while (started := helper.current()) is None:  # allowed once the ingest thread runs
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        relay.stop()
    assert gone(started.pid)
    assert helper.current() is None


def test_a_killed_parent_leaves_no_helper(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from memlane.capture import helper\n"
            "from memlane.config import Settings\n"
            "helper.allow(Settings())\n"
            "helper.current()\n"
            "print(helper.current().pid, flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        env={**os.environ, "MEMLANE_HOME": str(tmp_path)},
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert not gone(pid, timeout=0.2)
        parent.kill()
        parent.wait(10)
        assert gone(pid)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()


def test_an_idle_core_is_a_spare_one_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "spare_core", lambda: False)
    assert background.idle_core() is False


@pytest.mark.parametrize(
    ("counts", "idle", "readings"),
    [
        ((1, 1, 1), True, 1),  # only the caller runnable
        ((2, 1, 2), True, 2),  # a task runnable for an instant (the hook that relayed)
        ((2, 2, 2), False, 3),  # another task keeps the second core busy
    ],
)
def test_an_idle_core_is_read_again_before_it_is_taken_for_busy(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    counts: tuple[int, ...],
    idle: bool,
    readings: int,
) -> None:
    """/proc/loadavg as Linux writes it, its fourth field running/total tasks."""
    monkeypatch.setattr(background, "spare_core", lambda: True)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    read: list[int] = []
    real_open = open

    def loadavg(path: str, *args: Any, **kwargs: Any) -> Any:
        if path != "/proc/loadavg":
            return real_open(path, *args, **kwargs)
        count = counts[len(read)]
        read.append(count)
        fake = tmp_path / "loadavg"
        fake.write_text(f"0.42 0.57 0.46 {count}/96 21565\n", encoding="ascii")
        return real_open(fake, *args, **kwargs)

    monkeypatch.setattr(background, "open", loadavg, raising=False)
    assert background.idle_core() is idle
    assert len(read) == readings


def _recovered(
    settings: Settings, transcript: Path
) -> tuple[list[Any], helper.PrepareHelper | None]:
    """Rows of ``transcript`` after ``recover``, and the helper running as it ended."""
    found = SessionFile(
        str(transcript), "claude-code", "s1", "/work/app", size=transcript.stat().st_size
    )
    running: list[helper.PrepareHelper | None] = []

    def progress(done: int, total: int) -> None:
        if done == total:
            running.append(helper._helper)

    with open_memory(settings=settings) as memory:
        report = memory.recover([found], progress=progress)
        assert report.sessions == 1 and report.units > 0
        return rows(memory), running[-1]


def test_recover_lends_itself_a_helper_and_stops_it(
    tmp_path: Path,
    settings: Settings,
    helped: Settings,
    big: Path,
    idle: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    by_helper, lent = _recovered(helped, big)
    assert lent is not None and lent.requests == 1  # the first batch started it
    assert gone(lent.pid)
    assert helper.current() is None  # not allowed once recover is done
    monkeypatch.setattr(background, "idle_core", lambda: False)
    alone, unused = _recovered(settings_for(settings, tmp_path, "alone"), big)
    assert unused is None  # no core idle: all in process, none started
    assert by_helper == alone


def test_recover_in_the_worker_leaves_the_workers_helper_running(
    helped: Settings, big: Path, prepare_helper: helper.PrepareHelper
) -> None:
    rows_stored, used = _recovered(helped, big)
    assert used is prepare_helper and prepare_helper.requests >= 1
    assert helper.current() is prepare_helper
    assert rows_stored
