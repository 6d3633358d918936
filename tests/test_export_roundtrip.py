"""Lossless round trip of memlane's own export (JSON and JSONL), and its malformed input."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.models import Checkpoint, Summary
from memlane.service import Memory
from memlane.service import open as open_memory

T0 = datetime(2025, 2, 3, 10, 11, 12, 345678, tzinfo=UTC)


def populate(memory: Memory) -> None:
    """Every kind of thing a memory holds: sessions, knowledge, summaries, checkpoints…"""
    memory.session_start("sess-1", project="api", agent="claude-code", now=T0)
    memory.save(
        "Use WAL mode so hooks never block readers",
        project="api",
        type="decision",
        title="WAL",
        session_id="sess-1",
        created_at=T0 + timedelta(minutes=1),
        files=("src/db.py",),
        tags=("sqlite", "perf"),
        metadata={"why": "hooks write concurrently", "n": 3},
    )
    memory.save(
        "ran pytest -q: 12 passed",
        project="api",
        type="command",
        session_id="sess-1",
        created_at=T0 + timedelta(minutes=2),
    )
    memory.save(
        "imported from somewhere else",
        project="api",
        type="lesson",
        source="claude-mem",
        source_id="obs:7:1700000000000",
        created_at=T0 + timedelta(minutes=3),
    )
    memory.save(
        "topic upsert v1", project="web", type="feature", topic_key="feat/login", created_at=T0
    )
    memory.save("topic upsert v2", project="web", type="feature", topic_key="feat/login")
    memory.save_summary(
        Summary(
            session_id="sess-1",
            project="api",
            is_auto_generated=True,
            request="speed up the hooks",
            completed=("WAL mode",),
            learned=("busy_timeout matters",),
            next_steps=("benchmark",),
            files=("src/db.py",),
        )
    )
    memory.save_checkpoint(
        Checkpoint(
            session_id="sess-1",
            project="api",
            task="speed up hooks",
            progress=("WAL on",),
            next_steps=("bench",),
            questions=("pool size?",),
            files=("src/db.py",),
        )
    )
    # Only ended: the summary to carry over is the one above, not the rules' rebuild.
    memory.session_end("sess-1", now=T0 + timedelta(hours=1), summarize=False)
    first = memory.list_memories(project="api", limit=100)[-1]
    memory.store.record_access([first.id], T0 + timedelta(days=1))


def export_text(memory: Memory, fmt: str, *, with_vectors: bool = False) -> str:
    out = io.StringIO()
    memory.export_records(out, format=fmt, with_vectors=with_vectors)
    return out.getvalue()


def comparable(text: str, fmt: str) -> dict[str, Any]:
    """An export without what legitimately differs between databases."""
    if fmt == "json":
        data = json.loads(text)
        sessions, memories = data["sessions"], data["memories"]
    else:
        lines = [json.loads(line) for line in text.split("\n") if line]
        sessions = [r for r in lines if r["record"] == "session"]
        memories = [r for r in lines if r["record"] == "memory"]
    for record in memories:
        record.pop("memlane_id")
    return {
        "sessions": sorted(sessions, key=lambda r: r["id"]),
        "memories": sorted(memories, key=lambda r: r["identity"]),
    }


def second_memory(tmp_path: Path, settings: Settings) -> Memory:
    return open_memory(str(tmp_path / "other.db"), settings=settings)


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_round_trip_is_lossless(
    memory: Memory, settings: Settings, tmp_path: Path, fmt: str
) -> None:
    populate(memory)
    original = export_text(memory, fmt)
    path = tmp_path / f"export.{fmt}"
    path.write_text(original, encoding="utf-8")

    other = second_memory(tmp_path, settings)
    report = other.import_export(str(path))
    assert report.errors == ()
    assert report.created == memory.stats().memories == 7 - 1  # the topic upsert is one memory
    assert report.sessions == 1

    again = export_text(other, fmt)
    assert comparable(again, fmt) == comparable(original, fmt)
    # ids survive: the identity names the original database and id.
    ids = {m.id for m in memory.iter_all(None)}
    identities = {r["identity"] for r in comparable(again, fmt)["memories"]}
    native = {i for i in identities if i.startswith("uid:")}
    assert {int(i.rsplit(":", 1)[1]) for i in native} <= ids
    assert any(i.startswith("src:") for i in identities)

    # the structured summary and checkpoint come back as such
    summary = other.get_summary("sess-1")
    assert summary is not None
    assert summary.learned == ("busy_timeout matters",)
    assert summary.is_auto_generated is True
    checkpoint = other.latest_checkpoint(project="api")
    assert checkpoint is not None
    assert checkpoint.questions == ("pool size?",)
    session = other.get_session("sess-1")
    assert session.status == "ended"
    assert session.agent == "claude-code"
    assert session.started_at == T0

    # a second import adds nothing
    second = other.import_export(str(path))
    assert (second.created, second.updated) == (0, 0)
    assert second.skipped == report.created
    assert other.stats().memories == report.created
    other.close()


def test_import_own_export_into_same_database_adds_nothing(memory: Memory, tmp_path: Path) -> None:
    populate(memory)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(memory, "jsonl"), encoding="utf-8")
    before = memory.stats().memories
    report = memory.import_jsonl(str(path))
    assert (report.created, report.updated, report.errors) == (0, 0, ())
    assert memory.stats().memories == before


def test_round_trip_with_vectors(memory: Memory, settings: Settings, tmp_path: Path) -> None:
    populate(memory)
    ids = [m.id for m in memory.iter_all(None)]
    rng = np.random.default_rng(7)
    vectors = {mid: rng.standard_normal(8).astype(np.float32) for mid in ids}
    memory.store.put_embeddings("toy-8", 8, [(mid, v.tobytes()) for mid, v in vectors.items()])
    path = tmp_path / "export.json"
    path.write_text(export_text(memory, "json", with_vectors=True), encoding="utf-8")

    other = second_memory(tmp_path, settings)
    report = other.import_export(str(path))
    assert report.vectors == len(ids)
    by_content = {m.content: m.id for m in memory.iter_all(None)}
    copies = {m.content: m.id for m in other.iter_all(None)}
    stored = {mid: blob for batch in other.store.iter_embeddings("toy-8") for mid, blob in batch}
    for content, original_id in by_content.items():
        assert stored[copies[content]] == vectors[original_id].tobytes()
    other.close()


def test_a_vector_of_another_size_or_with_a_nan_is_a_bad_record(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    # Imported as it came, a 3-number vector under a model of 8 made every hybrid search
    # of the database fail (the vector table could not be built).
    for text in ("sized", "short", "nan"):
        memory.save(text, project="api")
    ids = {m.content: m.id for m in memory.iter_all(None)}
    good = np.ones(8, dtype=np.float32).tobytes()
    memory.store.put_embeddings("toy-8", 8, [(ids["sized"], good), (ids["nan"], good)])
    memory.store.put_embeddings("toy-8", 3, [(ids["short"], np.ones(3, np.float32).tobytes())])
    lines = export_text(memory, "jsonl", with_vectors=True).rstrip("\n").split("\n")
    nan = base64.b64encode(np.full(8, np.nan, dtype=np.float32).tobytes()).decode()
    lines = [
        line.replace(base64.b64encode(good).decode(), nan) if '"nan"' in line else line
        for line in lines
    ]
    path = tmp_path / "crafted.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    other = second_memory(tmp_path, settings)
    report = other.import_export(str(path))
    messages = sorted(e.message for e in report.errors)
    assert messages == [
        "vector of model 'toy-8' has 3 dimensions, not 8",
        "vector of model 'toy-8' holds NaN or infinite numbers",
    ]
    assert (report.created, report.vectors) == (1, 1)
    other.close()


def test_updates_travel_newer_wins(memory: Memory, settings: Settings, tmp_path: Path) -> None:
    saved = memory.save("first text", project="api", type="decision")
    path = tmp_path / "a.jsonl"
    path.write_text(export_text(memory, "jsonl"), encoding="utf-8")
    other = second_memory(tmp_path, settings)
    other.import_export(str(path))

    memory.update(saved.id, content="second text")
    path.write_text(export_text(memory, "jsonl"), encoding="utf-8")
    report = other.import_export(str(path))
    assert report.updated == 1
    [copy] = list(other.iter_all(None))
    assert copy.content == "second text"
    # importing the older file again does not roll it back
    assert other.import_export(str(path)).updated == 0
    other.close()


def test_malformed_jsonl_export(memory: Memory, settings: Settings, tmp_path: Path) -> None:
    populate(memory)
    lines = export_text(memory, "jsonl").rstrip("\n").split("\n")
    memory_lines = [i for i, line in enumerate(lines) if '"record": "memory"' in line]
    broken = list(lines)
    broken[memory_lines[0]] = broken[memory_lines[0]][:40]  # truncated JSON
    record = json.loads(broken[memory_lines[1]])
    record["kind"] = "bogus"
    broken[memory_lines[1]] = json.dumps(record)
    record = json.loads(broken[memory_lines[2]])
    del record["identity"]
    broken[memory_lines[2]] = json.dumps(record)
    broken.insert(1, "")  # blank lines are fine
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(broken) + "\n", encoding="utf-8")

    other = second_memory(tmp_path, settings)
    report = other.import_export(str(path))
    numbers = [e.line for e in report.errors]
    # +1 for the 1-based numbering and +1 for the inserted blank line
    assert numbers == [memory_lines[0] + 2, memory_lines[1] + 2, memory_lines[2] + 2]
    assert "not valid JSON" in report.errors[0].message
    assert "unknown kind" in report.errors[1].message
    assert "identity" in report.errors[2].message
    assert report.created == len(memory_lines) - 3
    assert other.stats().memories == len(memory_lines) - 3
    other.close()


def test_unreadable_json_export_writes_nothing(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    populate(memory)
    text = export_text(memory, "json")
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    other = second_memory(tmp_path, settings)
    with pytest.raises(InvalidInput, match="not valid JSON"):
        other.import_export(str(path))
    assert other.stats().memories == 0
    assert other.stats().sessions == 0
    other.close()


def test_unsupported_version_is_refused(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"format": "memlane-export", "version": 99, "memories": []}))
    with pytest.raises(InvalidInput, match="version 99"):
        memory.import_export(str(path))


def test_privacy_holds_on_import(memory: Memory, tmp_path: Path) -> None:
    record = {
        "record": "memory",
        "identity": "uid:elsewhere:1",
        "text": "deploy key <private>hunter2-secret</private> rotated",
        "project": "api",
        "kind": "note",
        "type": "note",
        "created_at": T0.isoformat(),
        "metadata": {"cmd": "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345"},
        "tags": ["sk-proj-abcdefghijklmnopqrstuvwxyz012345"],
        "files": ["<private>secret-dir</private>/a.py"],
    }
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(record) + "\n")
    report = memory.import_export(str(path))
    assert report.created == 1
    [stored] = list(memory.iter_all(None))
    assert "hunter2" not in stored.content
    assert "abcdefghijklmnopqrstuvwxyz012345" not in json.dumps(stored.metadata)
    assert "abcdefghijklmnopqrstuvwxyz012345" not in "".join(stored.tags)
    assert "secret-dir" not in "".join(stored.files)


def test_markdown_export_is_for_people(memory: Memory) -> None:
    populate(memory)
    text = export_text(memory, "markdown")
    assert "## WAL" in text
    assert "Use WAL mode" in text


def test_cli_export_then_import_twice(home: Path, tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import MEMLANE_CMD, run_env

    env = run_env(home)
    other_env = run_env(tmp_path / "second-home")

    def run(e: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*MEMLANE_CMD, *args], env=e, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done

    run(env, "save", "exported via the CLI", "--project", "P", "--type", "decision")
    run(env, "save", "second one", "--project", "P", "--session", "cli-s")
    for fmt, command in (("jsonl", "jsonl"), ("json", "memlane")):
        out = tmp_path / f"all.{fmt}"
        run(env, "export", "--format", fmt, "-o", str(out))
        first = run(other_env, "import", command, str(out))
        second = run(other_env, "import", command, str(out))
        if fmt == "jsonl":
            assert "imported 2 new" in first.stdout
        assert "imported 0 new, 0 updated, 2 already present" in second.stdout
    listed = json.loads(run(other_env, "list", "--project", "P", "--json").stdout)
    assert [s["id"] for s in listed] == ["cli-s"]


_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40
).filter(lambda s: s.strip() != "")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(
        st.tuples(
            _words,
            st.sampled_from(["decision", "note", "command", "lesson", "turn"]),
            st.lists(_words, max_size=3),
            st.dictionaries(st.text(min_size=1, max_size=8), _words, max_size=3),
            st.integers(min_value=0, max_value=10**7),  # a past time: none ahead of the clock
        ),
        min_size=1,
        max_size=8,
    )
)
def test_round_trip_property(items: list[tuple[str, str, list[str], dict[str, str], int]]) -> None:
    """Whatever was stored, export → import → export gives the same records."""
    import tempfile

    from memlane.config import Settings
    from memlane.paths import state_paths

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # Hypothesis re-runs the body, so the state dir is built here, not by a fixture.
        settings = Settings(paths=state_paths({"MEMLANE_HOME": str(root / "home")}))
        first = open_memory(str(root / "a.db"), settings=settings)
        for content, type_, tags, metadata, offset in items:
            try:
                first.save(
                    content,
                    project="p",
                    type=type_,
                    tags=tags,
                    metadata=metadata,
                    created_at=T0 + timedelta(seconds=offset),
                )
            except InvalidInput:
                continue  # nothing left after privacy filtering
        text = export_text(first, "jsonl")
        path = root / "e.jsonl"
        path.write_text(text, encoding="utf-8")
        second = open_memory(str(root / "b.db"), settings=settings)
        report = second.import_export(str(path))
        assert report.errors == ()
        assert comparable(export_text(second, "jsonl"), "jsonl") == comparable(text, "jsonl")
        first.close()
        second.close()


def test_a_json_document_on_one_line_past_the_line_bound_is_read_whole(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane import jsonlines

    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", 4096)
    records = [{"content": f"memory {n} about the parser cache " + "x" * 200} for n in range(40)]
    path = tmp_path / "one-line.json"
    path.write_text(json.dumps(records))  # one line of ~10 KB, past the (lowered) bound
    report = memory.import_export(str(path), project="one-line")
    assert report.created == 40
    assert not report.errors


def test_a_time_far_ahead_never_wins_over_local_edits(
    memory: Memory, settings: Settings, tmp_path: Path
) -> None:
    # A record dated 8999 replaced the memory with the same identity, and every later
    # edit of its owner lost to it, here and on every machine it was synced to (probe D3).
    saved = memory.save("original decision: use postgres 16", project="sp", type="decision")
    [header, record] = [json.loads(line) for line in export_text(memory, "jsonl").splitlines()]
    assert record["record"] == "memory"
    poison = dict(record, text="POISON: use mysql 5.1", updated_at="8999-01-01T00:00:00Z")
    soon = datetime.now(UTC) + timedelta(hours=2)  # a clock a little ahead: accepted
    ahead = dict(record, text="from a clock two hours ahead", updated_at=soon.isoformat())
    path = tmp_path / "poison.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (header, poison)) + "\n", encoding="utf-8")
    for text in ("original decision: use postgres 16", "corrected by owner: use postgres 17"):
        memory.update(saved.id, content=text)  # an edit after the import must stay, too
        report = memory.import_export(str(path))
        assert report.updated == 0 and [e.line for e in report.errors] == [2]
        assert "ahead of this machine's clock" in report.errors[0].message
        assert [m.content for m in memory.iter_all(None)] == [text]
    path.write_text("\n".join(json.dumps(r) for r in (header, ahead)) + "\n", encoding="utf-8")
    assert memory.import_export(str(path)).updated == 1
    assert [m.content for m in memory.iter_all(None)] == ["from a clock two hours ahead"]
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"text": "x", "timestamp": "8999-01-01T00:00:00Z"}) + "\n")
    assert "ahead of this machine's clock" in memory.import_jsonl(str(plain)).errors[0].message
