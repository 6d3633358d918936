"""`memlane refilter`: text stored before a privacy rule existed goes through it now.

A database written by an older version is made here the only way one can be: rows
written through the store, past the filter (as the rules of that day let them through).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

import memlane
from memlane.errors import InvalidInput
from memlane.models import MAX_TAGS, NewInjection
from memlane.service import Memory
from tests.conftest import run_memlane

SECRET = "Pgold7secretx"
# A token as a folder name: session rows kept transcript paths unfiltered before the 15th
# session's release.
PATH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OLD_COMMAND = f"echo 'db.example.com:5432:app:alice:{SECRET}' >> ~/.pgpass"


def old_database(memory: Memory) -> int:
    """A memory, a session path and a log entry holding ``SECRET`` as an older version
    stored them; the id of the memory."""
    saved = memory.save("we wrote the pgpass line for the app database", project="billing")
    store = memory.store
    store.update_memory(
        saved.id,
        {
            "content": f"Ran: {OLD_COMMAND}",
            "title": OLD_COMMAND,
            "tags": (f"pgpass db:5432:app:alice:{SECRET}",),
        },
    )
    memory.session_start("s-old", project="billing")
    store.update_session("s-old", {"transcript_path": f"/tmp/{PATH_TOKEN}/t.jsonl"})
    store.insert_injection(
        NewInjection(
            session_id="s-old",
            project="billing",
            event="user-prompt-submit",
            created_at=datetime.now(UTC),
            mode="keyword",
            relayed=False,
            hook_ms=1.0,
            chars=10,
            tokens=3,
            text="ok",
            prompt=f"my pgpass line is db:5432:app:bob:{SECRET}",
        )
    )
    return saved.id


def rows_holding(db: Path, needle: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        found = []
        for table, columns in (
            ("memories", "title || content || tags"),
            ("sessions", "coalesce(transcript_path, '')"),
            ("injections", "prompt || text"),
        ):
            count = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {columns} LIKE ?", (f"%{needle}%",)
            ).fetchone()[0]
            found += [table] * count
        found += ["fts"] * conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (needle,)
        ).fetchone()[0]
        return found
    finally:
        conn.close()


def test_refilter_masks_what_older_rules_let_through(home: Path, memory: Memory) -> None:
    memory_id = old_database(memory)
    db = memory.settings.paths.db_path
    assert sorted(rows_holding(db, SECRET)) == ["fts", "injections", "memories"]
    assert rows_holding(db, PATH_TOKEN) == ["sessions"]

    plan = memory.refilter(dry_run=True)
    assert plan.memories == (memory_id,) and plan.sessions == ("s-old",)
    assert len(plan.log_entries) == 1
    assert len(rows_holding(db, SECRET)) == 3  # a dry run changes nothing
    assert rows_holding(db, PATH_TOKEN) == ["sessions"]

    done = memory.refilter()
    assert (done.memories, done.sessions, done.log_entries) == (
        plan.memories,
        plan.sessions,
        plan.log_entries,
    )
    assert rows_holding(db, SECRET) == [] and rows_holding(db, PATH_TOKEN) == []
    kept = memory.get(memory_id)
    assert kept is not None
    assert (
        kept.content
        == "Ran: echo 'db.example.com:5432:app:alice:[REDACTED:assignment]' >> ~/.pgpass"
    )
    # What the filter leaves is still found; a second pass has nothing to do.
    assert [h.id for h in memory.search("pgpass alice", project="billing", mode="keyword")] == [
        memory_id
    ]
    again = memory.refilter()
    assert (again.memories, again.sessions, again.log_entries) == ((), (), ())


def test_the_command_counts_then_changes(home: Path, memory: Memory) -> None:
    old_database(memory)
    memory.close()
    dry = run_memlane(home, "refilter", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.strip() == ("would change: 1 memory, 1 session path; would clear 1 log entry")
    done = run_memlane(home, "refilter", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dry_run"] is False and report["sessions"] == ["s-old"]
    assert len(report["memories"]) == 1 and len(report["log_entries"]) == 1
    assert run_memlane(home, "refilter").stdout.strip() == (
        "changed: 0 memories, 0 session paths; cleared 0 log entries"
    )


def test_maintenance_refilters_once_per_filter(home: Path, memory: Memory) -> None:
    from memlane.maintenance.refiltering import filter_version

    memory_id = old_database(memory)
    first = memory.maintain()
    assert first.refiltered == 1 and first.details()["refiltered"] == 1
    assert rows_holding(memory.settings.paths.db_path, SECRET) == []
    assert memory.maintain().refiltered == 0  # this filter has had its pass
    # Another filter (a configured pattern here; a newer memlane's rules alike) gets one.
    version = filter_version(memory.core)
    memory.store.update_memory(memory_id, {"content": "the release is called bluefalcon"})
    assert memory.maintain().refiltered == 0  # the same filter: no second pass
    memory.core.settings = replace(memory.core.settings, secret_patterns=("bluefalcon",))
    assert filter_version(memory.core) != version
    assert memory.maintain().refiltered == 1
    kept = memory.get(memory_id)
    assert kept is not None and kept.content == "the release is called [REDACTED:custom]"


def test_the_filter_version_covers_every_module_of_the_filter() -> None:
    # A rule added in any of them must re-filter what older versions stored.
    from memlane.maintenance.refiltering import FILTER_MODULES

    source = Path(memlane.__file__).parent
    modules = {"privacy.py", *(p.name for p in source.glob("secret_*.py"))}
    assert modules <= set(FILTER_MODULES)


def stored_rows(db: Path) -> str:
    """Every row of every table but the full-text index's, as text."""
    conn = sqlite3.connect(db)
    try:
        tables = [
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not row[0].startswith("memories_fts")
        ]
        return "\n".join(str(row) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"'))
    finally:
        conn.close()


def test_names_topic_keys_and_marks_are_filtered_too(home: Path, memory: Memory) -> None:
    """The pass read titles, texts, tags, files, metadata, transcript paths and the log,
    and left a secret in a project name, a session id, a source id, a topic key or a
    feedback mark's prompt for good. A name is refused by the write path, so what holds
    one goes; a topic key is masked there, so here too (dropped when that makes it
    another memory's); a mark is dropped as `forget` drops one."""
    from memlane.models import Feedback, Session

    tokens = ["ghp_" + (c * 36) for c in "KLMNOPQ"]
    key = memory.save("auth notes", project="billing", topic_key="auth/x").id
    twin = memory.save("auth notes again", project="billing", topic_key="auth/y").id
    named = {
        field: memory.save(f"filed under {field}", project="billing").id
        for field in ("project", "session_id", "source_id", "type")
    }
    kept = memory.save("nothing to filter", project="billing").id
    store = memory.store
    store.update_memory(key, {"topic_key": f"auth/{tokens[0]}"})
    store.update_memory(twin, {"topic_key": f"auth/{tokens[1]}"})  # masks to the same key
    for (field, memory_id), token in zip(named.items(), tokens[2:], strict=False):
        store.update_memory(memory_id, {field: f"name-{token}"})
    now = datetime.now(UTC)
    store.upsert_session(Session(f"s-{tokens[6]}", "billing", "active", now, now))
    store.put_feedback(Feedback(kept, "useful", f"the token is {tokens[0]}", now))
    store.put_feedback(Feedback(kept, "noise", "a plain prompt", now))
    db = memory.settings.paths.db_path
    assert [t for t in tokens if t in stored_rows(db)] == tokens

    done = memory.refilter()
    # This database's rows named by a secret are kept and listed, for the user to judge
    # (a restore or a migration leaves such rows out: tests/test_backup.py).
    assert [t for t in tokens if t in stored_rows(db)] == tokens[2:]
    assert done.deleted_memories == () and done.deleted_sessions == ()
    assert sorted(map(str, done.named)) == sorted([*map(str, named.values()), f"s-{tokens[6]}"])
    assert done.unfit == ()  # a type named by a secret is said once
    assert done.mark_prompts == 1
    masked = memory.get(key)
    assert masked is not None and masked.topic_key == "auth/[REDACTED:github-token]"
    second = memory.get(twin)
    assert second is not None and second.topic_key is None
    assert [f.prompt for f in store.feedback_for([kept])] == ["a plain prompt"]
    again = memory.refilter()
    assert (again.memories, again.deleted_memories, again.mark_prompts) == ((), (), 0)
    assert len(again.named) == len(done.named)


def test_maintenance_keeps_this_databases_rows_and_transcript_paths(
    home: Path, memory: Memory
) -> None:
    """A pass that runs by itself never deletes a project: a configured pattern that
    matches a project's name (``acme`` in ``acme-web``) masks the texts, and the rows are
    kept and counted. Only a database from elsewhere (a restore) loses its transcript
    paths; this one keeps them."""
    from memlane.models import Session

    ids = [memory.save(f"acme-web note {n}", project="acme-web").id for n in range(3)]
    now = datetime.now(UTC)
    path = str(home / "project" / "t.jsonl")
    memory.store.upsert_session(
        Session("s-own", "billing", "active", now, now, transcript_path=path)
    )
    memory.core.settings = replace(memory.core.settings, secret_patterns=("acme",))
    report = memory.maintain()
    assert report.refilter_named == 3 and report.details()["refilter_named"] == 3
    assert report.refilter_deleted == 0
    kept = memory.store.get_memories(ids)
    assert len(kept) == 3 and all("acme" not in m.content for m in kept), kept
    session = memory.get_session("s-own")
    assert session is not None and session.transcript_path == path


def test_a_field_the_write_path_refuses_today_keeps_the_rest_filtered(
    home: Path, memory: Memory
) -> None:
    """A memory of this database whose metadata is nested deeper than today's limit is
    kept with it (a pass that runs by itself deletes nothing for its shape), and its
    content is filtered all the same: the whole pass over it was dropped, the token
    stayed. A restore or a migration (a foreign row) leaves such a memory out."""
    from memlane.maintenance.refiltering import refilter
    from memlane.memories import MAX_METADATA_DEPTH

    deep: dict[str, object] = {}
    level = deep
    for _ in range(MAX_METADATA_DEPTH + 2):
        inner: dict[str, object] = {}
        level["k"] = inner
        level = inner
    saved = memory.save("a deep one", project="billing").id
    memory.store.update_memory(saved, {"content": f"Ran: {OLD_COMMAND}", "metadata": deep})
    assert refilter(memory.core, dry_run=True, foreign=True).deleted_memories == (saved,)

    done = memory.refilter()
    assert done.memories == (saved,) and done.deleted_memories == ()
    assert done.unfit == (saved,)
    kept = memory.get(saved)
    assert SECRET not in kept.content and kept.metadata == deep
    # More tags than a memory keeps: a foreign row is left out, as an import leaves it;
    # this database's keeps them, masked.
    many = memory.save("tagged a lot", project="billing").id
    tags = (f"pgpass db:5432:app:alice:{SECRET}", *(f"t{i}" for i in range(MAX_TAGS)))
    memory.store.update_memory(many, {"tags": tags})
    foreign = refilter(memory.core, dry_run=True, foreign=True)
    assert many in foreign.deleted_memories and foreign.unfit == ()
    done = memory.refilter()
    assert many in done.memories and many not in done.unfit
    masked = memory.get(many).tags
    assert len(masked) == MAX_TAGS + 1 and SECRET not in masked[0] and masked[1:] == tags[1:]


def test_tags_or_metadata_of_another_shape_are_kept_and_the_pass_goes_on(
    home: Path, memory: Memory
) -> None:
    """Tags that are not strings or metadata that is no object (a crafted or older file)
    in this database's row: the fallback for a row with too many tags masked them as
    strings, metadata was walked as a dict (AttributeError), and the whole pass stopped
    there. The row keeps them as stored, is counted, and the pass filters it and the rows
    after it."""
    from memlane.maintenance.refiltering import refilter

    odd = memory.save("odd tags", project="billing").id
    memory.store.update_memory(odd, {"content": f"Ran: {OLD_COMMAND}", "tags": (1, "x")})
    listed = memory.save("metadata that is a list", project="billing").id
    memory.store.update_memory(listed, {"content": f"Ran: {OLD_COMMAND}", "metadata": [1]})
    after = memory.save("the next one", project="billing").id
    memory.store.update_memory(after, {"content": f"Ran: {OLD_COMMAND}"})
    left_out = refilter(memory.core, dry_run=True, foreign=True).deleted_memories
    assert left_out == (odd, listed)
    done = run_memlane(home, "refilter")
    assert done.returncode == 0, done.stderr
    assert "kept 2 memories with a field stored as it was" in done.stdout, done.stdout
    kept = memory.get(odd)
    assert kept.tags == (1, "x") and SECRET not in kept.content
    kept = memory.get(listed)
    assert kept.metadata == [1] and SECRET not in kept.content  # type: ignore[comparison-overlap]
    assert SECRET not in memory.get(after).content
    # The write path refuses such metadata in one line (an AttributeError from the API).
    with pytest.raises(InvalidInput, match="metadata must be an object"):
        memory.save("a note", project="billing", metadata=[1])  # type: ignore[arg-type]


def test_tags_files_and_type_are_cleaned_as_the_write_path_cleans_them(
    home: Path, memory: Memory
) -> None:
    """The pass cleans a stored memory with the write path's helpers (memories.clean_list,
    clean_type): an empty tag or file is no tag (an older version stored one), a type is
    trimmed and lower-cased; the pass had its own copy of the rule, without them."""
    saved = memory.save("tagged by an older version", project="billing").id
    memory.store.update_memory(
        saved,
        {"tags": ("", "auth", "  ", f"pgpass db:5432:app:alice:{SECRET}"), "files": ("",)},
    )
    memory.store.update_memory(saved, {"type": "Decision "})
    done = memory.refilter()
    assert done.memories == (saved,)
    cleaned = memory.get(saved)
    assert cleaned.tags[0] == "auth" and len(cleaned.tags) == 2
    assert SECRET not in cleaned.tags[1]
    assert (cleaned.files, cleaned.type) == ((), "decision")
    assert memory.refilter().memories == ()
