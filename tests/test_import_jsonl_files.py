"""`import jsonl`: a record's id is its file's own (the parity probe's H2).

Two files of one project that both number their records from "1" each keep their own
memories; a re-import of either file updates its own in place. A database imported into
before memories were named by their file keeps working: the file re-imported adds nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from memlane.interop.roundtrip import RecordApplier, iter_jsonl
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env


def jsonl(path: Path, *records: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def contents(memory: Memory, project: str) -> dict[str, str]:
    """source_id -> content of the project's memories."""
    return {m.source_id or "": m.content for m in memory.list_memories(project=project, limit=100)}


def test_the_same_id_in_two_files_is_two_memories(any_memory: Memory, tmp_path: Path) -> None:
    memory = any_memory  # SQLite, then PostgreSQL
    a = jsonl(tmp_path / "a.jsonl", {"id": "1", "type": "lesson", "text": "pin the redis client"})
    b = jsonl(tmp_path / "b.jsonl", {"id": "1", "type": "decision", "text": "postgres queue"})
    assert memory.import_jsonl(str(a), project="p").created == 1
    assert memory.import_jsonl(str(b), project="p").created == 1
    assert contents(memory, "p") == {"1": "pin the redis client", "b.jsonl#1": "postgres queue"}
    for path in (a, b):
        again = memory.import_jsonl(str(path), project="p")
        assert (again.created, again.updated, again.skipped) == (0, 0, 1)
    jsonl(b, {"id": "1", "type": "decision", "text": "postgres queue, with SKIP LOCKED"})
    edited = memory.import_jsonl(str(b), project="p")
    assert (edited.created, edited.updated) == (0, 1)
    jsonl(a, {"id": "1", "type": "lesson", "text": "pin the redis client to 5.x"})
    assert memory.import_jsonl(str(a), project="p").updated == 1
    assert contents(memory, "p") == {
        "1": "pin the redis client to 5.x",
        "b.jsonl#1": "postgres queue, with SKIP LOCKED",
    }
    (lesson,) = memory.list_memories(project="p", types=("lesson",))
    assert lesson.metadata["import_file"] == "a.jsonl"


def import_unnamed(memory: Memory, path: Path, project: str) -> None:
    """Import ``path`` as memlane did before ids were their file's: no file named."""
    applier = RecordApplier(memory.core, project=project)
    applier.apply_batches(iter_jsonl(path, applier.tally))
    assert not applier.tally.errors


def test_a_file_imported_before_files_were_named_adds_nothing(
    any_memory: Memory, tmp_path: Path
) -> None:
    memory = any_memory  # SQLite, then PostgreSQL
    a = jsonl(
        tmp_path / "a.jsonl",
        {"id": "1", "text": "pin the redis client", "type": "lesson"},
        {"id": "2", "text": "staging resets on Mondays"},
    )
    import_unnamed(memory, a, "p")
    again = memory.import_jsonl(str(a), project="p")
    assert (again.created, again.updated, again.skipped) == (0, 0, 2)
    assert memory.stats(project="p").memories == 2
    b = jsonl(tmp_path / "b.jsonl", {"id": "1", "text": "postgres queue", "type": "decision"})
    assert memory.import_jsonl(str(b), project="p").created == 1
    assert contents(memory, "p") == {
        "1": "pin the redis client",
        "2": "staging resets on Mondays",
        "b.jsonl#1": "postgres queue",
    }


def test_a_memory_overwritten_by_another_file_goes_back_to_the_first(
    memory: Memory, tmp_path: Path
) -> None:
    """The state the old import left (b.jsonl's record replaced a.jsonl's): each file
    re-imported gets its own memory back."""
    a = jsonl(tmp_path / "a.jsonl", {"id": "1", "text": "pin the redis client"}, {"text": "x"})
    b = jsonl(tmp_path / "b.jsonl", {"id": "1", "text": "postgres queue"}, {"text": "y"})
    import_unnamed(memory, a, "p")
    import_unnamed(memory, b, "p")
    memory.import_jsonl(str(a), project="p")
    memory.import_jsonl(str(b), project="p")
    assert contents(memory, "p")["1"] == "pin the redis client"
    assert contents(memory, "p")["b.jsonl#1"] == "postgres queue"


def test_a_records_other_fields_are_kept_and_get_shows_them(home: Path, tmp_path: Path) -> None:
    """M10: a field DESIGN §7 does not name (a "severity") was dropped; `get` showed no
    metadata at all."""
    path = jsonl(
        tmp_path / "incidents.jsonl",
        {
            "text": "the cache stampede took the API down",
            "severity": "high",
            "owner": "kim",
            "metadata": {"owner": "sam"},
        },
    )
    env = run_env(home)
    imported = subprocess.run(
        [*MEMLANE_CMD, "import", "jsonl", str(path), "--project", "p", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    listed = subprocess.run(
        [*MEMLANE_CMD, "timeline", "--project", "p", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    (stored,) = json.loads(listed.stdout)
    assert stored["metadata"] == {"severity": "high", "owner": "sam"}  # its metadata wins
    shown = subprocess.run(
        [*MEMLANE_CMD, "get", str(stored["id"])], env=env, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.endswith("\nmetadata:\n  owner: sam\n  severity: high\n")


def test_a_file_name_that_is_no_plain_name_refuses_only_records_with_an_id(
    memory: Memory, tmp_path: Path
) -> None:
    """The file's name is part of its records' keys, as a session id is of its memories;
    a record without an id has no such key, so the name does not keep it out."""
    path = jsonl(
        tmp_path / "x\x1b[31m.jsonl",
        {"id": "1", "text": "pin the redis client"},
        {"text": "the queue is postgres"},
    )
    report = memory.import_jsonl(str(path), project="p")
    assert report.created == 1
    assert [e.message for e in report.errors] == [
        "the file name holds a control character; use another file name"
    ]
    assert memory.stats(project="p").memories == 1


def test_a_file_named_like_a_secret_imports_its_records_without_ids(
    memory: Memory, tmp_path: Path
) -> None:
    token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzYW0ifQ.c2lnbmF0dXJlc2lnbmF0dXJl"
    path = jsonl(tmp_path / f"{token}.jsonl", {"text": "pin the redis client"})
    assert memory.import_jsonl(str(path), project="p").created == 1
