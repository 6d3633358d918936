"""Spinners and bars on a terminal, nothing on pipes or for --json (real processes, real ptys)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_import_claude_mem import claude_db as claude_db  # the fixture, re-exported


def on_pty(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``argv`` with stderr on a terminal: (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    shown = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                chunk = b""
            shown += chunk
            if not chunk and process.poll() is not None:
                break
        elif process.poll() is not None:
            break
    os.close(master)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    process.stdout.close()
    process.wait(timeout=60)
    return process.returncode, out, shown.decode("utf-8", "replace")


SNIPPET = """
import time
from memlane import feedback
from memlane.cli import progress
progress.install()
with progress.spinner("thinking hard", delay={delay}):
    time.sleep({step})
with feedback.progress("copying records", total=3) as tracker:
    for _ in range(3):
        tracker.advance()
        time.sleep({step})
print("done")
"""


def test_slow_steps_draw_on_a_terminal(home: Path) -> None:
    code, out, shown = on_pty(
        [sys.executable, "-c", SNIPPET.format(delay=0, step=0.8)], run_env(home)
    )
    assert code == 0 and out == "done\n"  # stdout untouched
    assert "thinking hard" in shown
    assert "copying records" in shown and "3/3" in shown


def test_fast_steps_draw_nothing(home: Path) -> None:
    code, out, shown = on_pty(
        [sys.executable, "-c", SNIPPET.format(delay=0.5, step=0)], run_env(home)
    )
    assert code == 0 and out == "done\n"
    assert shown == ""


def test_nothing_is_drawn_on_a_pipe(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SNIPPET.format(delay=0, step=0.6)],
        capture_output=True,
        text=True,
        env=run_env(home),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")


def test_embed_backfill_keeps_stdout_plain(home: Path) -> None:
    env = {**run_env(home), "MEMLANE_EMBEDDER": "toy"}
    for text in ("one memory", "another memory"):
        subprocess.run([*MEMLANE_CMD, "save", text], env=env, check=True, capture_output=True)
    done = subprocess.run(
        [*MEMLANE_CMD, "embed", "--backfill", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["embedded"] == 2
    assert done.stderr == ""


def test_import_counts_every_bad_line(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    lines = [json.dumps({"text": "good"})] + ["{not json"] * 64
    data.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [*MEMLANE_CMD, "import", "jsonl", str(data)],
        env=run_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "64 bad" in done.stdout
    shown = [line for line in done.stderr.splitlines() if line.startswith("  line ")]
    assert len(shown) == 50
    *_, more, outcome = done.stderr.splitlines()
    assert more.endswith("… and 14 more (--json lists every one)")
    assert outcome == (
        "error: 64 bad lines left out; the 1 good line was imported (or already present)"
    )
    as_json = subprocess.run(
        [*MEMLANE_CMD, "import", "jsonl", str(data), "--json"],
        env=run_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert len(json.loads(as_json.stdout)["errors"]) == 64


class Recorder:
    """A memlane.feedback presenter that remembers what it was told."""

    def __init__(self) -> None:
        self.bars: list[dict[str, Any]] = []

    def waiting(self, message: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def progress(self, label: str, total: int | None) -> Iterator[Any]:
        bar = {"label": label, "total": total, "done": 0}
        self.bars.append(bar)

        class Tracker:
            def advance(self, count: int = 1) -> None:
                bar["done"] += count

        yield Tracker()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    from memlane import feedback

    recording = Recorder()
    previous = feedback.present_with(recording)
    yield recording
    feedback.present_with(previous)


def test_imports_report_their_progress(
    memory: Memory, tmp_path: Path, claude_db: Path, recorder: Recorder
) -> None:
    data = tmp_path / "notes.jsonl"
    lines = [json.dumps({"id": f"n{i}", "text": f"note number {i}"}) for i in range(1200)]
    lines.insert(700, "{broken")
    data.write_text("\n".join(lines) + "\n")
    report = memory.import_jsonl(str(data))
    assert report.created == 1200 and len(report.errors) == 1
    memory.import_claude_mem(str(claude_db))
    jsonl_bar, claude_bar = recorder.bars
    assert jsonl_bar == {"label": "importing notes.jsonl", "total": 1201, "done": 1201}
    assert claude_bar["label"] == f"importing {claude_db.name}"
    assert claude_bar["total"] > 0 and claude_bar["done"] == claude_bar["total"]


def test_a_long_import_draws_a_bar_on_a_terminal(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "big.jsonl"
    rows = (json.dumps({"id": f"r{i}", "text": f"record {i} about webhooks"}) for i in range(20000))
    data.write_text("\n".join(rows) + "\n")
    code, out, shown = on_pty([*MEMLANE_CMD, "import", "jsonl", str(data)], run_env(home))
    assert code == 0
    assert out.startswith("imported 20000 new")  # stdout as for a pipe
    assert "importing big.jsonl" in shown and "/20000" in shown
