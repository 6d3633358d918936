"""Ctrl-C between a loop's commit and its count: what the line says is kept is kept.

Each long loop commits a batch, then counts it on the command's bar; a Ctrl-C that came
between the two kept the batch and lost its count (the first batch's: a bare
"interrupted"). Here the bar's tracker, given as the collaborator the command counts
with, sends this process a real SIGINT when a count reaches it, before recording it:
the end of that window, on the real command run in-process over real SQLite files.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memlane import feedback
from memlane.cli import main, progress
from tests.test_cli_interrupt import claude_mem_database
from tests.test_recover_crafted_trees import transcript

RECORDS = 1_200  # three batches of 500

Moment = Callable[[int, int | None], bool]  # (count told, total) -> interrupt there


@pytest.fixture(autouse=True)
def presenter_put_back() -> Iterator[None]:
    """The command installs its presenter for the process: the next test gets the one before."""
    previous = feedback.present_with(None)
    feedback.present_with(previous)
    yield
    feedback.present_with(previous)


@pytest.fixture
def interrupt_at(monkeypatch: pytest.MonkeyPatch, home: Path) -> Callable[[Moment], None]:
    """Make the bars' trackers send SIGINT when told a count ``moment`` picks."""
    monkeypatch.setenv("MEMLANE_EMBEDDER", "toy")

    def install(moment: Moment) -> None:
        class Interrupting(progress.BarTracker):
            def update(self, done: int, total: int | None = None) -> None:
                if moment(done, self.total if total is None else total):
                    signal.raise_signal(signal.SIGINT)
                super().update(done, total)

        monkeypatch.setattr(progress, "BarTracker", Interrupting)

    return install


def first_count(done: int, total: int | None) -> bool:
    return done > 0


def last_count(done: int, total: int | None) -> bool:
    return total is not None and done >= total


def interrupted(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``memlane argv`` in this process: the one line it printed (it exited 130)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main(argv)
    err = capsys.readouterr().err
    assert ended.value.code == 130, err
    [line] = err.strip().splitlines()
    return line


def count(home: Path, table: str) -> int:
    with sqlite3.connect(f"file:{home / 'memlane.db'}?mode=ro", uri=True) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def notes(tmp_path: Path) -> Path:
    data = tmp_path / "notes.jsonl"
    lines = (json.dumps({"content": f"note {n} about the retry queue"}) for n in range(RECORDS))
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data


def test_an_import_interrupted_after_its_first_commit_counts_that_batch(
    home: Path,
    tmp_path: Path,
    interrupt_at: Callable[[Moment], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    interrupt_at(first_count)
    line = interrupted(["import", "jsonl", str(notes(tmp_path)), "--project", "P"], capsys)
    assert count(home, "memories") == 500
    assert line.startswith(
        "interrupted while importing notes.jsonl: the 500 of 1,200 done so far are kept; run"
    )


def test_an_import_interrupted_after_its_last_commit_says_all_is_kept(
    home: Path,
    tmp_path: Path,
    interrupt_at: Callable[[Moment], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    interrupt_at(last_count)
    line = interrupted(["import", "jsonl", str(notes(tmp_path)), "--project", "P"], capsys)
    assert count(home, "memories") == RECORDS
    assert line == "interrupted after importing notes.jsonl: all 1,200 are done and kept"


def test_a_claude_mem_import_interrupted_after_a_commit_counts_its_batch(
    home: Path,
    tmp_path: Path,
    interrupt_at: Callable[[Moment], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "claude-mem.db"
    claude_mem_database(source, RECORDS)
    interrupt_at(first_count)
    line = interrupted(["import", "claude-mem", "--source", str(source)], capsys)
    assert count(home, "memories") == 500
    assert "the 500 of 1,200 done so far are kept" in line, line


def test_an_embed_backfill_interrupted_after_a_commit_counts_its_batch(
    home: Path,
    tmp_path: Path,
    interrupt_at: Callable[[Moment], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "few.jsonl"
    data.write_text(
        "".join(json.dumps({"content": f"fact {n} about caching"}) + "\n" for n in range(25)),
        encoding="utf-8",
    )
    main(["import", "jsonl", str(data), "--project", "P"])
    interrupt_at(first_count)
    line = interrupted(["embed", "--backfill", "--batch", "10"], capsys)
    assert count(home, "embeddings") == 10
    assert line.startswith("interrupted while embedding: the 10 of 25 done so far are kept")


def sessions_on_disk(tmp_path: Path) -> list[str]:
    claude, work = tmp_path / "claude", tmp_path / "work"
    work.mkdir()
    transcript(claude / "p" / "a.jsonl", "a", work, "the retry queue drops jobs", age=20)
    transcript(claude / "p" / "b.jsonl", "b", work, "the cache keys collide", age=10)
    codex = tmp_path / "no-codex"
    codex.mkdir()
    return ["recover", "--claude-dir", str(claude), "--codex-dir", str(codex)]


def test_recover_interrupted_before_any_commit_says_nothing_is_kept(
    home: Path,
    tmp_path: Path,
    interrupt_at: Callable[[Moment], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    interrupt_at(lambda done, total: done == 0)
    line = interrupted(sessions_on_disk(tmp_path), capsys)
    assert line == "interrupted"
    assert count(home, "sessions") == count(home, "memories") == 0


def test_recover_interrupted_after_a_sessions_last_commit_counts_it(
    home: Path,
    tmp_path: Path,
    interrupt_at: Callable[[Moment], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    interrupt_at(first_count)
    line = interrupted(sessions_on_disk(tmp_path), capsys)
    assert line.startswith("interrupted while recovering sessions: the 1 of 2 done so far")
    with sqlite3.connect(f"file:{home / 'memlane.db'}?mode=ro", uri=True) as conn:
        [(ended,)] = conn.execute("SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL")
    assert ended == 1  # its summary written and the session ended: done, not half done


def test_a_loop_that_ran_to_its_end_says_all_it_did_is_kept() -> None:
    progress.install(quiet=True)
    with progress.bar("importing notes.jsonl", 3, quiet=True) as tracker:
        tracker.advance(2)  # a blank last line: in the total, not a record
    assert progress.interrupted_line() == (
        "interrupted after importing notes.jsonl: all 2 are done and kept"
    )
    progress.install(quiet=True)  # a command starts: no loop yet
    assert progress.interrupted_line() == "interrupted"


def test_a_held_ctrl_c_reaches_the_handler_that_was_there_once_the_step_ends() -> None:
    got: list[str] = []
    step = ["committing"]

    def handler(signum: int, frame: object) -> None:
        got.append(step[0])

    before = signal.signal(signal.SIGINT, handler)
    try:
        with feedback.commit_and_count():
            signal.raise_signal(signal.SIGINT)
            step[0] = "counted"
        assert got == ["counted"]
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_off_the_main_thread_the_step_runs_with_the_handler_as_it_is() -> None:
    seen: list[object] = []

    def step() -> None:
        with feedback.commit_and_count():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=step)
    worker.start()
    worker.join()
    assert seen == [signal.getsignal(signal.SIGINT)]
