"""JSONL memory store import: types per file, key facts, incremental by line hash."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memlane.errors import InvalidInput
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env


def write(path: Path, *records: object) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    root = tmp_path / ".memory"
    root.mkdir()
    write(
        root / "agent-notes.jsonl",
        {"text": "The staging DB is reset every Monday", "timestamp": "2025-01-06T09:00:00Z"},
        {"note": "CI caches pip wheels", "tags": "ci, cache"},
    )
    write(
        root / "lessons.jsonl",
        {"lesson": "Pin the Node version in CI", "outcomes": ["builds reproducible"]},
    )
    write(
        root / "decisions.jsonl",
        {
            "title": "Queue choice",
            "decision": "Use Redis streams for jobs",
            "summary": "Redis already runs in prod",
            "decisions": ["no Kafka", {"alternative": "SQS", "why_not": "vendor lock"}],
            "id": "D-7",
            "files": ["jobs/queue.py"],
        },
    )
    write(
        root / "postmortems.jsonl",
        {
            "summary": "Outage 2025-01-03: TLS cert expired",
            "outcomes": ["added cert expiry alert", "renewal is now automated"],
            "created_at": 1735900000,
        },
    )
    return root


def test_types_text_and_key_facts(memory: Memory, store_dir: Path) -> None:
    report = memory.import_jsonl_store(str(store_dir), project="ops")
    assert report.errors == ()
    assert report.created == 5
    assert report.details == {
        "agent-notes.jsonl": 2,
        "lessons.jsonl": 1,
        "decisions.jsonl": 1,
        "postmortems.jsonl": 1,
    }
    rows = {m.type: m for m in memory.list_memories(project="ops", limit=20)}
    assert set(rows) == {"note", "lesson", "decision", "postmortem"}
    decision = rows["decision"]
    assert decision.kind == "knowledge"
    assert decision.title == "Queue choice"
    assert decision.content.startswith("Use Redis streams for jobs")
    assert "Key facts:" in decision.content
    assert "- no Kafka" in decision.content
    assert decision.metadata["key_facts"][0] == "Redis already runs in prod"
    assert decision.metadata["id"] == "D-7"
    assert decision.files == ("jobs/queue.py",)
    postmortem = rows["postmortem"]
    assert "TLS cert expired" in postmortem.content
    assert "renewal is now automated" in postmortem.content
    assert postmortem.created_at.timestamp() == 1735900000
    notes = memory.list_memories(project="ops", types=("note",), limit=20)
    assert any(n.tags == ("ci", "cache") for n in notes)


def test_incremental_only_new_lines(memory: Memory, store_dir: Path) -> None:
    memory.import_jsonl_store(str(store_dir), project="ops")
    again = memory.import_jsonl_store(str(store_dir), project="ops")
    assert (again.created, again.updated, again.skipped) == (0, 0, 5)
    write(store_dir / "lessons.jsonl", {"lesson": "Run migrations before deploy"})
    third = memory.import_jsonl_store(str(store_dir), project="ops")
    assert third.created == 1
    assert third.skipped == 5
    assert memory.stats().memories == 6


def test_bad_lines_reported_good_lines_imported(memory: Memory, store_dir: Path) -> None:
    write(
        store_dir / "lessons.jsonl",
        "{not json",
        {"lesson": "Good line after a bad one"},
        '["an", "array"]',
        {"tags": ["no text here"]},
        {"lesson": "timestamps must parse", "timestamp": "yesterday-ish"},
    )
    report = memory.import_jsonl_store(str(store_dir), project="ops")
    assert [(e.line, e.message.split(":")[0]) for e in report.errors] == [
        (2, "lessons.jsonl"),
        (4, "lessons.jsonl"),
        (5, "lessons.jsonl"),
        (6, "lessons.jsonl"),
    ]
    assert "not valid JSON" in report.errors[0].message
    assert "no text" in report.errors[2].message
    assert "ISO-8601" in report.errors[3].message
    assert report.created == 6
    contents = [m.content for m in memory.list_memories(project="ops", types=("lesson",))]
    assert "Good line after a bad one" in contents


def test_default_project_is_the_store_folder_project(memory: Memory, store_dir: Path) -> None:
    memory.import_jsonl_store(str(store_dir))
    assert set(memory.stats().projects) == {".memory"}


def test_missing_or_empty_store(memory: Memory, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such directory"):
        memory.import_jsonl_store(str(tmp_path / "nope"))
    with pytest.raises(InvalidInput, match="no JSONL store files"):
        memory.import_jsonl_store(str(tmp_path))


def test_cli_jsonl_store(home: Path, store_dir: Path) -> None:
    env = run_env(home)
    cmd = [*MEMLANE_CMD, "import", "jsonl-store", str(store_dir), "--project", "ops"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "imported 5 new" in first.stdout
    second = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True)
    assert json.loads(second.stdout)["skipped"] == 5
