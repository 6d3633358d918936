"""Hybrid and semantic search with the deterministic toy embedder; backfill; vector table."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memlane.config import Settings
from memlane.models import MemoryFilter
from memlane.search.embedder import ToyEmbedder
from memlane.search.indexer import embed_missing, missing_count
from memlane.search.vectors import VectorTable
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.conftest import MEMLANE_CMD, run_env

NOW = datetime.now(UTC)


@pytest.fixture
def toy(settings: Settings, tmp_path: Path) -> Memory:
    mem = open_memory(str(tmp_path / "toy.db"), settings=replace(settings, embedder="toy"))
    mem.save("configuration of the reverse proxy timeouts", project="p")
    mem.save("lunch menu for the team offsite", project="p")
    mem.save("database migrations run before deploy", project="p")
    mem.save("configuration of the reverse proxy timeouts", project="q")
    return mem


def test_hybrid_is_the_default_once_vectors_exist(toy: Memory) -> None:
    assert toy.search("proxy", project="p").notice is not None
    report = toy.embed_backfill()
    assert report.embedded == 4 and report.remaining == 0 and report.model == "toy-64"
    hits = toy.search("proxy timeouts", project="p")
    assert hits.notice is None
    assert hits[0].content.startswith("configuration of the reverse proxy")


def test_semantic_finds_what_keywords_miss(toy: Memory) -> None:
    toy.embed_backfill()
    query = "configuring proxies"  # neither word is in any memory
    assert toy.search(query, project="p", scope="project", mode="keyword") == []
    for mode in ("semantic", "hybrid"):
        hits = toy.search(query, project="p", scope="project", mode=mode)
        assert hits and hits[0].content.startswith("configuration"), mode
        assert all(h.project == "p" for h in hits)


def test_hybrid_keeps_keyword_only_matches(toy: Memory) -> None:
    toy.embed_backfill()
    keyword = toy.search("migrations", project="p", scope="project", mode="keyword")
    hybrid = toy.search("migrations", project="p", scope="project", mode="hybrid")
    assert keyword and hybrid[0].id == keyword[0].id


def test_semantic_respects_as_of_and_kinds(settings: Settings, tmp_path: Path) -> None:
    mem = open_memory(str(tmp_path / "f.db"), settings=replace(settings, embedder="toy"))
    early = mem.save("deploy checklist", project="p", created_at=NOW - timedelta(days=10)).id
    late = mem.save("deploy checklist v2", project="p", created_at=NOW).id
    note = mem.save("deploy checklist", project="p", type="decision").id
    mem.embed_backfill()
    hits = mem.search(
        "deploy checklist", project="p", mode="semantic", as_of=NOW - timedelta(days=1)
    )
    assert {h.id for h in hits} == {early}
    kinds = mem.search("deploy checklist", project="p", mode="semantic", kinds=["knowledge"])
    assert [h.id for h in kinds] == [note]
    assert late not in {h.id for h in kinds}


def test_backfill_is_resumable_and_dry_run_counts(toy: Memory) -> None:
    assert toy.embed_backfill(dry_run=True).remaining == 4
    first = toy.embed_backfill(limit=3, batch=2)
    assert first.embedded == 3 and first.remaining == 1
    second = toy.embed_backfill()
    assert second.embedded == 1 and second.remaining == 0
    assert toy.embed_backfill().embedded == 0


def test_changing_the_model_re_embeds_and_drops_old_vectors(toy: Memory) -> None:
    toy.embed_backfill()
    assert toy.store.embedding_counts() == {"toy-64": 4}
    report = toy.embed_backfill(model="toy-32")
    assert report.embedded == 4 and report.dropped_other_models == 4
    assert toy.store.embedding_counts() == {"toy-32": 4}
    assert toy.search_engine.model == "toy-32"
    hits = toy.search("proxy", project="p", mode="hybrid")
    assert hits and hits.notice is None


def test_embed_missing_stops_when_asked(toy: Memory) -> None:
    calls = iter([False, True])
    report = embed_missing(toy.store, ToyEmbedder(), batch=1, should_stop=lambda: next(calls))
    assert report.embedded == 1 and missing_count(toy.store, "toy-64") == 3


def test_an_idle_embedding_check_reads_no_memory_row(toy: Memory) -> None:
    """The worker asks every few seconds; with nothing missing, only the two counts run
    (the search for memories without a vector reads every row: ~0.45 s at 1M)."""
    toy.embed_backfill()
    statements: list[str] = []
    conn = toy.store.connection()  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        report = embed_missing(toy.store, ToyEmbedder())
    finally:
        conn.set_trace_callback(None)
    assert report.embedded == 0 and report.remaining == 0
    assert not any("NOT EXISTS" in sql for sql in statements), statements
    assert len(statements) == 2  # the vector counts and the memory count
    toy.save("proxy buffer sizes", project="p")
    report = embed_missing(toy.store, ToyEmbedder())
    assert report.embedded == 1 and missing_count(toy.store, "toy-64") == 0


def test_warm_engine_sees_new_vectors_and_deletions(toy: Memory) -> None:
    toy.embed_backfill()
    engine = toy.search_engine
    assert len(engine.vector_table()) == 4
    added = toy.save("proxy buffer sizes", project="p").id
    toy.embed_backfill()
    assert added in engine.vector_table()
    gone = toy.search("proxy buffer sizes", project="p", mode="semantic")[0].id
    toy.delete(id=gone)
    hits = toy.search("proxy buffer sizes", project="p", mode="semantic")
    assert gone not in {h.id for h in hits}


def test_vector_table_filters_and_upserts() -> None:
    table = VectorTable("m")
    base = NOW.timestamp()
    table.add(
        [
            (1, "a", "note", "note", base),
            (2, "b", "note", "note", base),
            (3, "a", "turn", "turn", base + 10),
        ],
        np.array([[1, 0, 0], [1, 0, 0], [0.9, 0.1, 0]], dtype=np.float32),
    )
    q = [1.0, 0.0, 0.0]
    assert [i for i, _ in table.search(q, 5, MemoryFilter())] in ([1, 2, 3], [2, 1, 3])
    assert [i for i, _ in table.search(q, 5, MemoryFilter(projects=("a",)))] == [1, 3]
    assert [i for i, _ in table.search(q, 5, MemoryFilter(kinds=("turn",)))] == [3]
    assert [i for i, _ in table.search(q, 5, MemoryFilter(projects=("zzz",)))] == []
    before = datetime.fromtimestamp(base + 5, UTC)
    assert {i for i, _ in table.search(q, 5, MemoryFilter(created_before=before))} == {1, 2}
    table.add([(3, "a", "turn", "turn", base + 10)], np.array([[0, 1, 0]], dtype=np.float32))
    assert table.cosines(q, [3])[3] == pytest.approx(0.0)
    assert table.remove([1, 99]) == 1 and len(table) == 2 and 1 not in table


def test_cli_embed_backfill(home: Path) -> None:
    env = run_env(home)
    env["MEMLANE_EMBEDDER"] = "toy"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMLANE_CMD, *args], env=env, capture_output=True, text=True, timeout=120
        )

    assert run("save", "hooks use WAL mode", "--project", "p").returncode == 0
    before = run("search", "WAL", "--project", "p")
    assert "keyword mode: no vectors yet" in before.stderr
    dry = run("embed", "--backfill", "--dry-run", "--json")
    assert json.loads(dry.stdout) == {"model": "toy-64", "would_embed": 1, "dry_run": True}
    done = run("embed", "--backfill", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["embedded"] == 1
    plain = run("embed", "--backfill")
    assert "embedded 0 memories" in plain.stdout
    after = run("search", "WAL", "--project", "p")
    assert after.returncode == 0 and "no vectors" not in after.stderr and "WAL" in after.stdout
    assert run("embed").returncode != 0  # says what to do


def test_cold_processes_reuse_the_vector_cache(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = str(tmp_path / "cache.db")
    toy_settings = replace(settings, embedder="toy")
    first = open_memory(db, settings=toy_settings)
    ids = [first.save(f"proxy timeout note {i}", project="p").id for i in range(5)]
    first.embed_backfill()
    assert first.search("proxy timeout", project="p", mode="semantic")
    cache_root = toy_settings.paths.data_dir / "vectors"
    (cache,) = cache_root.iterdir()
    assert (cache / "meta.json").exists()
    assert oct((cache / "meta.json").stat().st_mode & 0o777) == "0o600"
    first.close()

    second = open_memory(db, settings=toy_settings)  # a new process: starts from the cache
    extra = second.save("proxy timeout for uploads", project="p").id
    second.embed_backfill()
    table = second.search_engine.vector_table()
    # Started from the saved generation (5 rows), the new one replayed from the change log.
    assert table.generation is not None and table.tail_rows == 1 and len(table) == 6
    assert all(mid in table for mid in [*ids, extra])
    hits = second.search("proxy timeout uploads", project="p", mode="semantic", limit=10)
    assert {h.id for h in hits} == {*ids, extra}
    second.close()


def test_a_broken_cache_falls_back_to_the_store(settings: Settings, tmp_path: Path) -> None:
    db = str(tmp_path / "broken.db")
    toy_settings = replace(settings, embedder="toy")
    mem = open_memory(db, settings=toy_settings)
    mem.save("proxy timeout", project="p")
    mem.embed_backfill()
    mem.search("proxy", project="p", mode="semantic")
    mem.close()
    (cache,) = (toy_settings.paths.data_dir / "vectors").iterdir()
    for array in cache.glob("*.npy"):
        array.write_bytes(b"garbage")
    again = open_memory(db, settings=toy_settings)
    assert again.search("proxy timeout", project="p", mode="semantic")
    again.close()
