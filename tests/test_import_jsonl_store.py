"""JSONL memory store import: types per file, key facts, incremental by line hash."""

from __future__ import annotations

import io
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from memlane.errors import InvalidInput
from memlane.interop.jsonl_store import SEEN_NAMESPACE, parse_line, store_files
from memlane.memories import save
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


def test_index_export_names_each_line_by_its_file(
    memory: Memory, store_dir: Path, tmp_path: Path
) -> None:
    """Coverage and sources per store file (as the semantic-memory tool writes them)."""
    import io

    memory.import_jsonl_store(str(store_dir), project="ops")
    out = io.StringIO()
    memory.export_index(out, project="ops")
    index = json.loads(out.getvalue())
    assert index["metadata"]["coverage"] == {
        "agent-notes.jsonl": 2,
        "lessons.jsonl": 1,
        "decisions.jsonl": 1,
        "postmortems.jsonl": 1,
    }
    sources = {e["text"].split("\n")[0]: e["source"] for e in index["vectors"]}
    assert sources["Pin the Node version in CI"] == "lessons.jsonl"
    assert {e["metadata"]["source"] for e in index["vectors"]} == {"jsonl-store"}
    # Round trip: memlane's own entries come back with their source, and say the same again.
    path = tmp_path / "ops.json"
    path.write_text(out.getvalue())
    from memlane.service import open as open_memory

    other = open_memory(str(tmp_path / "other.db"), settings=memory.settings)
    assert other.import_index(str(path)).created == 5
    assert {m.source for m in other.list_memories(project="ops")} == {"jsonl-store"}
    again = io.StringIO()
    other.export_index(again, project="ops")
    copy = json.loads(again.getvalue())
    assert copy["metadata"]["coverage"] == index["metadata"]["coverage"]
    assert sorted((e["id"], e["source"]) for e in copy["vectors"]) == sorted(
        (e["id"], e["source"]) for e in index["vectors"]
    )
    other.close()


def test_an_index_beside_the_store_lends_its_vectors(home: Path, store_dir: Path) -> None:
    """The semantic-memory tool keeps its index next to its files: lines get its vectors."""
    from memlane.search.embedder import ToyEmbedder

    texts = ["Pin the Node version in CI", "CI caches pip wheels", "not a line of the store"]
    rows = ToyEmbedder(64).embed(texts)
    entries = [
        {"id": str(n), "text": text, "embedding": [float(x) for x in row], "source": "x.jsonl"}
        for n, (text, row) in enumerate(zip(texts, rows, strict=True))
    ]
    index = {"metadata": {"project": "ops", "entry_count": 3}, "vectors": entries}
    (store_dir / "memory-index.json").write_text(json.dumps(index), encoding="utf-8")
    (store_dir / "settings.json").write_text("{not an index, not read}", encoding="utf-8")
    env = {**run_env(home), "MEMLANE_EMBEDDER": "toy"}
    cmd = [*MEMLANE_CMD, "import", "jsonl-store", str(store_dir), "--project", "ops", "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["created"], data["vectors"]) == (5, 2)
    assert data["notes"] == [
        "memory-index.json: vectors kept as 'toy-64': the index names no model and a sample"
        " re-embedded matches (cosine >= 1.00)"
    ]
    plain = subprocess.run(
        [*MEMLANE_CMD, "embed", "--backfill", "--dry-run", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert json.loads(plain.stdout)["would_embed"] == 3  # the other lines: embedded later


def test_a_blank_index_text_lends_no_vector(home: Path, store_dir: Path) -> None:
    """An index entry with blank text matches no line, not even a line made of facts only."""
    from memlane.search.embedder import ToyEmbedder

    write(store_dir / "lessons.jsonl", {"outcomes": ["only a fact, no text"]})
    texts = ["Pin the Node version in CI", "   ", ""]
    rows = ToyEmbedder(64).embed(["Pin the Node version in CI", "blank one", "blank two"])
    entries = [
        {"id": str(n), "text": text, "embedding": [float(x) for x in row]}
        for n, (text, row) in enumerate(zip(texts, rows, strict=True))
    ]
    index = {"metadata": {"embedding_model": "toy-64"}, "vectors": entries}
    (store_dir / "memory-index.json").write_text(json.dumps(index), encoding="utf-8")
    env = {**run_env(home), "MEMLANE_EMBEDDER": "toy"}
    cmd = [*MEMLANE_CMD, "import", "jsonl-store", str(store_dir), "--project", "ops", "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["created"], data["vectors"]) == (6, 1)


def test_a_line_past_the_line_bound_is_reported_not_read(
    memory: Memory, store_dir: Path, tmp_path: Path
) -> None:
    from memlane.jsonlines import MAX_LINE_BYTES

    huge = json.dumps({"lesson": "x" * (MAX_LINE_BYTES + 10)})
    write(store_dir / "lessons.jsonl", huge, {"lesson": "The line after the long one"})
    report = memory.import_jsonl_store(str(store_dir), project="ops")
    assert [e.line for e in report.errors] == [2]
    assert "longer than" in report.errors[0].message
    contents = [m.content for m in memory.list_memories(project="ops", types=("lesson",))]
    assert "The line after the long one" in contents
    assert not any(c.startswith("xxxx") for c in contents)

    records = tmp_path / "records.jsonl"
    records.write_text(
        json.dumps({"content": "first memory about sqlite"})
        + "\n"
        + json.dumps({"content": "x" * (MAX_LINE_BYTES + 10)})
        + "\n"
        + json.dumps({"content": "third memory about migrations"})
        + "\n"
    )
    plain = memory.import_jsonl(str(records), project="plain")
    assert plain.created == 2
    assert [e.line for e in plain.errors] == [2]


def test_a_store_file_given_to_import_jsonl_names_the_store_import(
    memory: Memory, store_dir: Path
) -> None:
    report = memory.import_jsonl(str(store_dir / "lessons.jsonl"), project="ops")
    assert report.created == 0
    (error,) = report.errors
    assert "missing 'text' (or 'content')" in error.message
    assert "'lesson'" in error.message and "`memlane import jsonl-store DIR`" in error.message


# -- keys: a line's id, and the lines seen per project (the parity probe's M9) ----------


def lessons(memory: Memory, project: str) -> list[str]:
    return sorted(m.content for m in memory.list_memories(project=project, types=("lesson",)))


def test_an_edited_line_with_an_id_updates_its_memory(memory: Memory, store_dir: Path) -> None:
    (store_dir / "lessons.jsonl").write_text(
        json.dumps({"id": "L1", "lesson": "Pin the redis client"}) + "\n", encoding="utf-8"
    )
    memory.import_jsonl_store(str(store_dir), project="ops")
    (store_dir / "lessons.jsonl").write_text(
        json.dumps({"id": "L1", "lesson": "Pin the redis client to 5.x"}) + "\n", encoding="utf-8"
    )
    again = memory.import_jsonl_store(str(store_dir), project="ops")
    assert (again.created, again.updated, again.skipped) == (0, 1, 4)
    assert lessons(memory, "ops") == ["Pin the redis client to 5.x"]
    assert memory.import_jsonl_store(str(store_dir), project="ops").skipped == 5


def test_the_same_line_in_two_projects_is_imported_into_each(
    any_memory: Memory, store_dir: Path
) -> None:
    memory = any_memory  # SQLite, then PostgreSQL
    assert memory.import_jsonl_store(str(store_dir), project="one").created == 5
    assert memory.import_jsonl_store(str(store_dir), project="two").created == 5
    assert lessons(memory, "one") == lessons(memory, "two") != []


def test_a_deleted_memory_is_not_brought_back(memory: Memory, store_dir: Path) -> None:
    memory.import_jsonl_store(str(store_dir), project="ops")
    (lesson,) = memory.list_memories(project="ops", types=("lesson",))
    memory.forget(id=lesson.id, project="ops")
    again = memory.import_jsonl_store(str(store_dir), project="ops")
    assert (again.created, again.skipped) == (0, 5)
    assert lessons(memory, "ops") == []


def import_as_before(memory: Memory, root: Path, project: str) -> None:
    """Import ``root`` as memlane did before lines were remembered per project: each line
    under the hash of its file and text, id or not, remembered for the whole database."""
    core = memory.core
    for path, type_ in store_files(root)[0]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            item = parse_line(path.name, number, line, type_, project)
            save(core, replace(item.draft, source_id=item.key))
            core.store.mark_seen(SEEN_NAMESPACE, [item.key])


def test_a_store_imported_before_keys_were_per_project_adds_nothing(
    any_memory: Memory, store_dir: Path
) -> None:
    memory = any_memory  # SQLite, then PostgreSQL
    import_as_before(memory, store_dir, "ops")
    (decision,) = memory.list_memories(project="ops", types=("decision",))
    (lesson,) = memory.list_memories(project="ops", types=("lesson",))
    memory.forget(id=lesson.id, project="ops")
    (postmortem,) = memory.list_memories(project="ops", types=("postmortem",))
    memory.update(postmortem.id, content="TLS cert expired (edited here)")
    again = memory.import_jsonl_store(str(store_dir), project="ops")
    assert (again.created, again.updated, again.skipped) == (0, 0, 5)
    assert memory.stats(project="ops").memories == 4  # the deleted lesson stays deleted
    assert memory.get(postmortem.id).content == "TLS cert expired (edited here)"
    (renamed,) = memory.list_memories(project="ops", types=("decision",))
    assert (renamed.id, renamed.source_id) == (decision.id, "decisions.jsonl#D-7")
    # The line with an id, edited in the store, updates its memory.
    line = json.loads((store_dir / "decisions.jsonl").read_text(encoding="utf-8"))
    line["decision"] = "Use Redis streams for jobs, with a dead-letter stream"
    (store_dir / "decisions.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    edited = memory.import_jsonl_store(str(store_dir), project="ops")
    assert (edited.created, edited.updated) == (0, 1)
    assert "dead-letter" in memory.get(decision.id).content
    # Another project's store holding the same lines gets them all.
    assert memory.import_jsonl_store(str(store_dir), project="other").created == 4


# -- a line's own fields (the parity probe's M10 and L6) --------------------------------


def test_a_lines_other_text_fields_are_searchable_and_kept(memory: Memory, store_dir: Path) -> None:
    write(
        store_dir / "postmortems.jsonl",
        {
            "id": "P-2",
            "summary": "Queue stalled for two hours",
            "root_cause": "the consumer group lost its offsets",
            "impact": "jobs delayed",
            "action_items": ["alert on lag", "pin offsets"],
            "severity": 2,
        },
    )
    memory.import_jsonl_store(str(store_dir), project="ops")
    (hit,) = memory.search("consumer group offsets", project="ops", mode="keyword")
    assert hit.type == "postmortem"
    stored = memory.get(hit.id)
    assert stored.content.endswith(
        "Root cause: the consumer group lost its offsets\n"
        "Impact: jobs delayed\n"
        "Action items: alert on lag; pin offsets"
    )
    assert stored.metadata["root_cause"] == "the consumer group lost its offsets"
    assert stored.metadata["severity"] == 2 and "Severity" not in stored.content
    markdown = io.StringIO()
    memory.export_records(markdown, format="markdown", project="ops")
    assert '"severity": 2' in markdown.getvalue()


def test_a_lines_metadata_type_and_created_are_its_own(memory: Memory, store_dir: Path) -> None:
    (store_dir / "decisions.jsonl").write_text(
        json.dumps(
            {
                "decision": "Never store tokens in the repo",
                "type": "constraint",
                "created": "2025-02-03T04:05:06Z",
                "metadata": {"author": "kim"},
            }
        )
        + "\n"
        + json.dumps({"decision": "Use ruff", "type": "tooling"})
        + "\n",
        encoding="utf-8",
    )
    memory.import_jsonl_store(str(store_dir), project="ops")
    (constraint,) = memory.list_memories(project="ops", types=("constraint",))
    assert constraint.created_at.isoformat() == "2025-02-03T04:05:06+00:00"
    assert constraint.metadata["author"] == "kim"
    assert "metadata" not in constraint.metadata and "type" not in constraint.metadata
    (tooling,) = memory.list_memories(project="ops", types=("decision",))
    assert tooling.metadata["type"] == "tooling"  # not one of memlane's types: kept


# -- which lines are keyed by their id (review C) -----------------------------------------


def notes(memory: Memory, project: str) -> dict[str, str]:
    """content -> source_id of the project's notes."""
    found = memory.list_memories(project=project, types=("note",), limit=100)
    return {m.content: m.source_id or "" for m in found}


def test_repeated_and_empty_ids_keep_every_line(memory: Memory, tmp_path: Path) -> None:
    """An append-only store repeats ids (a per-session counter; ``1`` is ``"1"``): each
    line is its own memory, as is each line of an empty id; a unique id keys its line."""
    root = tmp_path / ".memory"
    root.mkdir()
    write(
        root / "agent-notes.jsonl",
        {"id": 1, "note": "first note of session one"},
        {"id": 1, "note": "first note of session two"},
        {"id": "1", "note": "first note of session three"},
        {"id": "", "note": "empty id one"},
        {"id": " ", "note": "empty id two"},
        {"id": "", "note": "empty id three"},
        {"id": "u", "note": "the unique one"},
    )
    report = memory.import_jsonl_store(str(root), project="p")
    assert (report.created, report.error_count) == (7, 0)
    keys = notes(memory, "p")
    assert len(keys) == 7
    assert keys.pop("the unique one") == "agent-notes.jsonl#u"
    assert all(key.startswith("agent-notes.jsonl:") for key in keys.values())
    # The line with a unique id, edited, updates its memory; the others stay.
    text = (root / "agent-notes.jsonl").read_text(encoding="utf-8")
    (root / "agent-notes.jsonl").write_text(
        text.replace("the unique one", "the unique one, edited"), encoding="utf-8"
    )
    again = memory.import_jsonl_store(str(root), project="p")
    assert (again.created, again.updated, again.skipped) == (0, 1, 6)
    assert notes(memory, "p")["the unique one, edited"] == "agent-notes.jsonl#u"
    assert len(notes(memory, "p")) == 7


def test_an_id_that_is_no_plain_name_is_kept_in_metadata(memory: Memory, tmp_path: Path) -> None:
    """A dict, boolean or fractional id, or one holding a control character, is no key:
    the line is keyed by its hash, as before lines were keyed by id, and its id kept."""
    root = tmp_path / ".memory"
    root.mkdir()
    ids: list[object] = [{"a": 1}, True, 1.5, "x\ny", "a\x1b[31mb"]
    write(root / "agent-notes.jsonl", *({"id": v, "note": f"note {n}"} for n, v in enumerate(ids)))
    report = memory.import_jsonl_store(str(root), project="p")
    assert (report.created, report.error_count) == (5, 0)
    found = {m.content: m for m in memory.list_memories(project="p", types=("note",))}
    for n, value in enumerate(ids):
        stored = found[f"note {n}"]
        assert (stored.source_id or "").startswith("agent-notes.jsonl:")
        assert "id" in stored.metadata
        if not isinstance(value, str):
            assert stored.metadata["id"] == value
    assert memory.import_jsonl_store(str(root), project="p").skipped == 5
