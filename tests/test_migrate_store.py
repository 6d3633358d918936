"""`memlane migrate-store`: SQLite → PostgreSQL copies everything and checks the counts."""

from __future__ import annotations

import json
import subprocess
from array import array
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from memlane.models import MemoryFilter, NewMemory
from memlane.service import Memory
from memlane.store.postgres import PostgresStore
from tests.conftest import MEMLANE_CMD, run_env

pytestmark = pytest.mark.postgres
T0 = datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)


def fill(memory: Memory) -> list[int]:
    memory.session_start("s1", project="api", now=T0, agent="claude")
    ids = [
        memory.save("we chose PostgreSQL for the team", project="api", type="decision").id,
        memory.save("東京のリージョンに移した", project="api", session_id="s1").id,
        memory.save("status v1", project="web", topic_key="status", tags=("x",)).id,
        memory.save("edited main.py", project="api", type="file-write", files=("main.py",)).id,
    ]
    memory.save("status v2", project="web", topic_key="status")
    memory.delete(id=ids[3])  # a hole in the ids: they must be kept, not renumbered
    ids = [*ids[:3], memory.save("after the hole", project="api", created_at=T0).id]
    store = memory.store
    store.put_embeddings("toy", 3, [(i, array("f", [i, 0.5, -1]).tobytes()) for i in ids])
    store.put_embeddings("wide", 5, [(ids[0], array("f", [1, 2, 3, 4, 5]).tobytes())])
    store.mark_seen("transcript", ["a", "b"])
    store.mark_seen("import", ["x"])
    return ids


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args], env=run_env(home), capture_output=True, text=True, timeout=120
    )


def test_sqlite_to_postgres_keeps_everything(memory: Memory, home: Path, pg_dsn: str) -> None:
    ids = fill(memory)
    source = memory.store
    done = run(home, "migrate-store", "--from", source.location, "--to", pg_dsn, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["memories"] == 4 and report["sessions"] == 1
    assert report["embeddings"] == {"toy": 4, "wide": 1}
    assert report["seen_keys"] == 3 and report["verified"] is True
    password = str(conninfo_to_dict(pg_dsn)["password"])
    assert password not in done.stdout + done.stderr

    target = PostgresStore(pg_dsn)
    try:
        assert target.memory_ids(MemoryFilter()) == source.memory_ids(MemoryFilter()) == ids
        for before, after in zip(source.get_memories(ids), target.get_memories(ids), strict=True):
            for name in (
                "id",
                "project",
                "session_id",
                "kind",
                "type",
                "title",
                "content",
                "files",
                "tags",
                "topic_key",
                "source",
                "source_id",
                "normalized_hash",
                "revision_count",
                "access_count",
                "stale",
                "metadata",
            ):
                assert getattr(before, name) == getattr(after, name), name
            assert abs((before.created_at - after.created_at).total_seconds()) < 1e-3
            assert abs((before.updated_at - after.updated_at).total_seconds()) < 1e-3
        for model in ("toy", "wide"):
            assert list(target.iter_embeddings(model)) == list(source.iter_embeddings(model))
        assert target.seen("transcript", ["a", "b", "c"]) == {"a", "b"}
        assert target.seen("import", ["x"]) == {"x"}
        assert target.get_session("s1") == source.get_session("s1")
        assert target.find_memory("web", topic_key="status") is not None
        fresh = NewMemory(
            project="api",
            kind="note",
            type="note",
            content="fresh",
            normalized_hash="fresh",
            created_at=T0 + timedelta(days=1),
        )
        new_id = target.insert_memory(fresh)
        assert new_id > max(ids)
        moved = Memory(target, memory.settings)
        assert [h.id for h in moved.search("東京", project="api")] == [ids[1]]
        found = target.vector_candidates("toy", [float(ids[1]), 0.5, -1.0], MemoryFilter(), 1)
        assert found[0][0] == ids[1]
    finally:
        target.close()

    again = run(home, "migrate-store", "--from", source.location, "--to", pg_dsn)
    assert again.returncode == 2 and "not empty" in again.stderr


def test_postgres_to_postgres_and_bad_targets(
    memory: Memory, home: Path, pg_dsn: str, pg_database: str, tmp_path: Path
) -> None:
    fill(memory)
    first = run(home, "migrate-store", "--from", memory.store.location, "--to", pg_dsn, "--quiet")
    assert first.returncode == 0, first.stderr
    assert "counts verified" in first.stdout
    import psycopg

    from tests.conftest import pg_url

    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA copy2")
    second_dsn = pg_url(pg_database, options="-c search_path=copy2,public")
    second = run(home, "migrate-store", "--from", pg_dsn, "--to", second_dsn, "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["embeddings"] == {"toy": 4, "wide": 1}

    to_sqlite = run(home, "migrate-store", "--from", pg_dsn, "--to", str(tmp_path / "x.db"))
    assert to_sqlite.returncode == 2 and "postgresql://" in to_sqlite.stderr
    assert not (tmp_path / "x.db").exists()
    missing = run(home, "migrate-store", "--from", str(tmp_path / "nope.db"), "--to", pg_dsn)
    assert missing.returncode == 2 and "no database file" in missing.stderr
    assert not (tmp_path / "nope.db").exists()
