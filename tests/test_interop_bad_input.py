"""Importers and sync facing hostile input: bounded error lists, short filtered quotes,
a future export refused whole, unreadable files reported and skipped."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memlane.errors import InvalidInput
from memlane.interop import report as interop_report
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env, without_dac_override


def test_import_keeps_a_bounded_number_of_bad_lines(memory: Memory, tmp_path: Path) -> None:
    KEPT_ERRORS = interop_report.KEPT_ERRORS
    path = tmp_path / "empties.jsonl"
    path.write_text("{}\n" * (KEPT_ERRORS + 7) + '{"text": "kept"}\n')
    report = memory.import_jsonl(str(path))
    assert (len(report.errors), report.errors_omitted) == (KEPT_ERRORS, 7)
    assert report.error_count == KEPT_ERRORS + 7
    assert report.created == 1
    listed = tmp_path / "empties.json"
    listed.write_text(json.dumps([{}] * (KEPT_ERRORS + 3)))
    exported = memory.import_export(str(listed))
    assert (len(exported.errors), exported.errors_omitted) == (KEPT_ERRORS, 3)
    assert f"{KEPT_ERRORS + 3} bad records" in exported.summary()


def test_cli_counts_bad_lines_it_did_not_keep(tmp_path: Path) -> None:
    KEPT_ERRORS = interop_report.KEPT_ERRORS
    path = tmp_path / "empties.jsonl"
    path.write_text("{}\n" * (KEPT_ERRORS + 5))
    command = [*MEMLANE_CMD, "--project", "p", "import", "jsonl", str(path)]
    done = subprocess.run(command, env=run_env(tmp_path / "h"), capture_output=True, text=True)
    assert done.returncode == 2
    assert f"{KEPT_ERRORS + 5} bad lines" in done.stdout
    assert f"… and {KEPT_ERRORS + 5 - 50} more (--json lists the first {KEPT_ERRORS})" in (
        done.stderr
    )


def test_a_bad_value_is_quoted_short_and_filtered(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    stamp = "password=hunter2hunter2 " + "9" * 100_000
    path.write_text(json.dumps({"text": "x", "timestamp": stamp}) + "\n")
    [error] = memory.import_jsonl(str(path)).errors
    assert len(error.message) < 200
    assert "hunter2" not in error.message
    assert "[REDACTED" in error.message


def test_a_jsonl_export_of_a_future_version_is_refused_whole(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "future.jsonl"
    header = {"record": "header", "format": "memlane-export", "version": 999}
    path.write_text(json.dumps(header) + "\n" + json.dumps({"text": "from the future"}) + "\n")
    for load in (memory.import_export, memory.import_jsonl):
        with pytest.raises(InvalidInput, match="version 999 is not supported"):
            load(str(path))
    assert memory.stats().memories == 0


def test_an_unreadable_index_beside_a_store_is_skipped_with_a_note(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "lessons.jsonl").write_text('{"text": "a lesson"}\n')
    index = store / "index.json"
    index.write_text('{"metadata": {}, "vectors": []}')
    index.chmod(0)
    command = [*without_dac_override(), *MEMLANE_CMD, "--project", "p"]
    command += ["import", "jsonl-store", str(store), "--json"]
    done = subprocess.run(command, env=run_env(tmp_path / "h"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["created"] == 1
    assert report["notes"] == ["index.json skipped: Permission denied"]
