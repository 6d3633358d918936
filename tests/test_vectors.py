"""The persisted vector table: generations on disk, the change log, the ANN graph.

Real SQLite files and real index files throughout; vectors come from seeded
random clusters (so an ANN graph has structure to find) stored through the
store's own ``put_embeddings``. The ANN threshold is lowered so that a few
hundred rows exercise the graph path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memlane.config import Settings
from memlane.models import MemoryFilter, NewMemory, utcnow
from memlane.search.engine import SearchEngine
from memlane.search.vectors import VectorTable, save
from memlane.store.sqlite import SQLiteStore

MODEL = "toy-32"
DIM = 32
PROJECTS = ("alpha", "beta", "gamma", "delta")


def clustered(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit vectors around 12 random centres (real embeddings cluster too)."""
    centres = rng.standard_normal((12, DIM)).astype(np.float32)
    picks = rng.integers(0, 12, count)
    vectors = centres[picks] + 0.35 * rng.standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fill(store: SQLiteStore, count: int, seed: int = 3, model: str = MODEL) -> list[int]:
    rng = np.random.default_rng(seed)
    with store.transaction():
        ids = [
            store.insert_memory(
                NewMemory(
                    project=PROJECTS[i % len(PROJECTS)],
                    kind="observation" if i % 3 else "turn",
                    type="command",
                    content=f"memory number {i}",
                    normalized_hash=f"h{seed}-{i}",
                    created_at=utcnow(),
                )
            )
            for i in range(count)
        ]
    vectors = clustered(rng, count)
    store.put_embeddings(model, DIM, [(mid, vectors[i].tobytes()) for i, mid in enumerate(ids)])
    return ids


def exact_top(store: SQLiteStore, query: np.ndarray, k: int, flt: MemoryFilter) -> list[int]:
    """The exact answer, computed straight from the embeddings table."""
    return [mid for mid, _ in store.vector_candidates(MODEL, query.tolist(), flt, k)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "vectors.db")
    yield opened
    opened.close()


def engine_for(store: SQLiteStore, cache: Path, threshold: int = 100) -> SearchEngine:
    from memlane.search.embedder import ToyEmbedder

    return SearchEngine(store, embedder=ToyEmbedder(DIM), cache_dir=cache, ann_threshold=threshold)


def queries(count: int, seed: int = 11) -> np.ndarray:
    return clustered(np.random.default_rng(seed), count)


def test_build_persist_reopen_mapped_and_search_with_the_graph(
    store: SQLiteStore, tmp_path: Path
) -> None:
    fill(store, 600)
    cache = tmp_path / "cache"
    engine = engine_for(store, cache)
    table = engine.vector_table()
    assert len(table) == 600 and table.generation is not None and not table.has_ann
    assert engine.persist_vectors()  # the background job builds the graph
    table = engine.vector_table()
    assert table.has_ann and table.tail_rows == 0
    (directory,) = cache.iterdir()
    names = {p.suffix for p in directory.iterdir()}
    assert {".npy", ".f32", ".usearch", ".json"} <= names
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in directory.iterdir() if p.is_file())

    reopened = VectorTable.open(directory, MODEL, ann_threshold=100)  # a new process
    assert reopened is not None and reopened.has_ann and len(reopened) == 600
    matrix = reopened._base.columns.matrix
    assert not matrix.flags.owndata and not matrix.flags.writeable  # mapped, not read
    hits = 0
    for q in queries(20):
        got = [mid for mid, _ in reopened.search(q, 10, MemoryFilter())]
        want = exact_top(store, q, 10, MemoryFilter())
        hits += len(set(got) & set(want))
        scores = reopened.cosines(q, got)
        found = reopened.search(q, 10, MemoryFilter())
        assert all(abs(scores[mid] - score) < 1e-5 for mid, score in found)  # exact scores
    assert hits / 200 >= 0.95  # re-scored ANN candidates against the exact answer


def test_project_and_kind_filters_on_the_graph_path(store: SQLiteStore, tmp_path: Path) -> None:
    fill(store, 800)
    engine = engine_for(store, tmp_path / "cache")
    engine.vector_table()
    engine.persist_vectors()
    table = engine.vector_table()
    assert table.has_ann
    assert table._base is not None  # rows grouped by project: a project is one span
    assert bool(np.all(np.diff(np.asarray(table._base.columns.project)) >= 0))
    for flt in (
        MemoryFilter(projects=("beta",)),  # 200 rows: above the threshold, graph + filter
        MemoryFilter(projects=("beta",), kinds=("turn",)),  # ~67 rows: exact
        MemoryFilter(projects=("nobody",)),
    ):
        for q in queries(5, seed=5):
            got = table.search(q, 10, flt)
            ids = [mid for mid, _ in got]
            keys = {k[0]: k for k in store.memory_keys(ids)}
            assert all(keys[mid][1] == "beta" for mid in ids)
            if flt.kinds:
                assert all(keys[mid][2] == "turn" for mid in ids)
            want = exact_top(store, q, 10, flt)
            assert len(set(ids) & set(want)) >= 9 or not want


def test_incremental_add_delete_and_re_embed_never_return_old_vectors(
    store: SQLiteStore, tmp_path: Path
) -> None:
    ids = fill(store, 400)
    engine = engine_for(store, tmp_path / "cache")
    engine.vector_table()
    engine.persist_vectors()
    table = engine.vector_table()
    assert table.has_ann
    target = np.zeros(DIM, dtype=np.float32)
    target[0] = 1.0

    # Re-embed: the memory's vector now points at the target; its old row must not count.
    moved = ids[7]
    store.put_embeddings(MODEL, DIM, [(moved, target.tobytes())])
    top = engine.vector_table().search(target, 1, MemoryFilter())
    assert top[0][0] == moved and top[0][1] == pytest.approx(1.0)
    # Edited text: the store drops the vector; the table drops the row at once.
    store.update_memory(moved, {"content": "rewritten"})
    assert moved not in engine.vector_table()
    assert moved not in {mid for mid, _ in engine.vector_table().search(target, 50, MemoryFilter())}
    # Deleted memory (cascade to its vector).
    gone = ids[8]
    store.delete_memories([gone])
    assert gone not in engine.vector_table()
    # New memories land in the tail and are found.
    (added,) = fill(store, 1, seed=99)
    store.put_embeddings(MODEL, DIM, [(added, target.tobytes())])
    table = engine.vector_table()
    assert table.tail_rows == 1 and table.search(target, 1, MemoryFilter())[0][0] == added
    assert len(table) == store.embedding_counts()[MODEL]

    # The next generation appends: same float32 file, holes marked, the log pruned.
    (directory,) = (tmp_path / "cache").iterdir()
    matrix_files = {p.name for p in directory.glob("*.f32")}
    assert engine.persist_vectors(force=True)
    assert {p.name for p in directory.glob("*.f32")} == matrix_files
    table = engine.vector_table()
    assert table.tail_rows == 0 and len(table) == 399
    assert table.search(target, 1, MemoryFilter())[0][0] == added
    assert moved not in table and gone not in table
    assert store.vector_changes(MODEL, 0, store.vector_change_mark()) is None  # pruned

    # A second process starts from the new generation and replays later changes.
    store.delete_memories([added])
    other = engine_for(store, tmp_path / "cache")
    assert added not in other.vector_table() and len(other.vector_table()) == 398


def test_filter_keys_follow_the_memory(store: SQLiteStore, tmp_path: Path) -> None:
    ids = fill(store, 200)
    engine = engine_for(store, tmp_path / "cache")
    table = engine.vector_table()
    q = np.frombuffer(store.embeddings_of(MODEL, [ids[0]])[0][1], dtype=np.float32)
    assert table.search(q, 1, MemoryFilter(types=("command",)))[0][0] == ids[0]
    store.update_memory(ids[0], {"type": "bugfix"})
    table = engine.vector_table()
    assert ids[0] not in {m for m, _ in table.search(q, 5, MemoryFilter(types=("command",)))}
    assert table.search(q, 1, MemoryFilter(types=("bugfix",)))[0][0] == ids[0]


def test_model_change_builds_another_table(store: SQLiteStore, tmp_path: Path) -> None:
    fill(store, 150)
    cache = tmp_path / "cache"
    engine_for(store, cache).vector_table()
    other = SearchEngine(store, embedder="toy-16", cache_dir=cache, ann_threshold=100)
    ids = [mid for mid, _ in store.missing_embeddings("toy-16", 1000)]
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((len(ids), 16)).astype(np.float32)
    store.put_embeddings("toy-16", 16, [(m, vecs[i].tobytes()) for i, m in enumerate(ids)])
    table = other.vector_table()
    assert table.model == "toy-16" and table.dim == 16 and len(table) == 150
    assert len(list(cache.iterdir())) == 2  # one directory per model
    assert VectorTable.open(next(iter(cache.iterdir())), "toy-99") is None


@pytest.mark.parametrize("damage", ["matrix", "ann", "meta", "ids"])
def test_a_damaged_cache_is_rebuilt_with_one_log_line(
    store: SQLiteStore, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    fill(store, 300)
    cache = tmp_path / "cache"
    engine = engine_for(store, cache)
    engine.vector_table()
    engine.persist_vectors()
    (directory,) = cache.iterdir()
    pattern = {"matrix": "*.f32", "ann": "*.usearch", "meta": "meta.json", "ids": "ids-*.npy"}
    for path in directory.glob(pattern[damage]):
        path.write_bytes(b"not what it should be")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        fresh = engine_for(store, cache)
        table = fresh.vector_table()
    assert len(table) == 300
    q = queries(1)[0]
    found = {m for m, _ in table.search(q, 5, MemoryFilter())}
    assert len(found & set(exact_top(store, q, 5, MemoryFilter()))) >= 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert directory.name in warnings[0]


def test_a_cache_of_another_database_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "same-path.db"
    first = SQLiteStore(path)
    fill(first, 120)
    engine_for(first, tmp_path / "cache").vector_table()
    first.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    second = SQLiteStore(path)  # a different database at the same path
    fill(second, 50, seed=8)
    with caplog.at_level(logging.WARNING):
        table = engine_for(second, tmp_path / "cache").vector_table()
    assert len(table) == 50
    assert any("another database" in r.getMessage() for r in caplog.records)
    second.close()


def test_threshold_zero_gives_every_table_a_graph(store: SQLiteStore, tmp_path: Path) -> None:
    fill(store, 60)
    engine = engine_for(store, tmp_path / "cache", threshold=0)
    engine.vector_table()
    engine.persist_vectors()
    table = engine.vector_table()
    assert table.has_ann
    q = queries(1)[0]
    flt = MemoryFilter(projects=("alpha",))
    assert {m for m, _ in table.search(q, 5, flt)} == set(exact_top(store, q, 5, flt))


def test_save_skips_when_another_process_holds_the_lock(store: SQLiteStore, tmp_path: Path) -> None:
    import fcntl

    fill(store, 50)
    table = VectorTable(MODEL)
    from memlane.store.base import VectorLog

    assert isinstance(store, VectorLog)
    table.load_all(store, store)
    directory = tmp_path / "cache" / "x"
    directory.mkdir(parents=True)
    with (directory / "lock").open("a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert save(directory, table.snapshot()) is False
    assert save(directory, table.snapshot()) is True


def test_facade_search_uses_the_persisted_table(settings: Settings, tmp_path: Path) -> None:
    from memlane.service import open as open_memory

    toy = replace(settings, embedder="toy")
    memory = open_memory(str(tmp_path / "facade.db"), settings=toy)
    for i in range(30):
        memory.save(f"proxy timeout note {i}", project="p")
    memory.embed_backfill()
    assert memory.search("proxy timeout", project="p", mode="semantic", limit=5)
    assert memory.search_engine.persist_vectors(force=True)
    memory.close()
    again = open_memory(str(tmp_path / "facade.db"), settings=toy)
    table = again.search_engine.vector_table()
    assert table.generation is not None and table.tail_rows == 0 and len(table) == 30
    again.close()


def test_the_worker_loop_saves_the_table_for_the_next_start(
    settings: Settings, tmp_path: Path
) -> None:
    from memlane.service import open as open_memory
    from memlane.worker.server import EmbeddingLoop

    toy = replace(settings, embedder="toy")
    db = str(tmp_path / "worker.db")
    memory = open_memory(db, settings=toy)
    for i in range(40):
        memory.save(f"deploy note {i} about the ingress certificate", project="p")
    loop = EmbeddingLoop(memory, "toy", batch=16)
    while loop.run_once():
        pass
    memory.search("ingress certificate", project="p", mode="hybrid")  # loads the table
    engine = memory.search_engine
    engine.ann_threshold = 30
    assert loop.persist_vectors()  # due: past the threshold without a graph
    assert engine.vector_table().has_ann
    assert not loop.persist_vectors()  # nothing changed since
    memory.close()

    restarted = open_memory(db, settings=toy)
    restarted.search_engine.ann_threshold = 30
    table = restarted.search_engine.vector_table()
    assert table.has_ann and table.tail_rows == 0 and len(table) == 40
    hits = restarted.search("ingress certificate", project="p", mode="semantic", limit=5)
    assert len(hits) == 5
    restarted.close()


def test_a_large_graph_is_walked_wider(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.search.ann import EXPANSION_SEARCH, AnnIndex
    from memlane.store import vector_walk

    matrix = np.random.default_rng(3).standard_normal((64, DIM)).astype(np.float32)
    assert AnnIndex.build(matrix)._index.expansion_search == EXPANSION_SEARCH
    # The same graph counted as large (the rule's threshold lowered under its size),
    # built or extended: the walk is twice as wide.
    monkeypatch.setattr(vector_walk, "WIDE_WALK_ROWS", 60)
    assert AnnIndex.build(matrix)._index.expansion_search == 2 * EXPANSION_SEARCH
    small = AnnIndex.build(matrix[:50])
    assert small._index.expansion_search == EXPANSION_SEARCH
    assert small.extended(matrix[50:])._index.expansion_search == 2 * EXPANSION_SEARCH


def test_the_walk_rule_doubles_from_its_threshold() -> None:
    from memlane.store.vector_walk import WIDE_WALK_ROWS, walk_width

    assert walk_width(100, WIDE_WALK_ROWS - 1) == 100
    assert walk_width(100, WIDE_WALK_ROWS) == 200


@pytest.mark.parametrize("first", [True, False])
def test_a_row_of_another_size_or_with_a_nan_is_left_out(store: SQLiteStore, first: bool) -> None:
    # Written by a crafted import or an older memlane: the table failed to load (another
    # size; first, it set the table's size) or every score turned NaN.
    ids = fill(store, 20)
    extra = [
        store.insert_memory(
            NewMemory(
                project="alpha",
                kind="observation",
                type="command",
                content=f"crafted {i}",
                normalized_hash=f"crafted-{i}",
                created_at=utcnow(),
            )
        )
        for i in range(2)
    ]
    nan = np.full(DIM, np.nan, dtype=np.float32).tobytes()
    short = np.ones(3, dtype=np.float32).tobytes()
    store.put_embeddings(MODEL, 3, [(extra[0], short)])
    store.put_embeddings(MODEL, DIM, [(extra[1], nan)])
    table = VectorTable(MODEL)
    if first:  # the odd rows are read first
        table._apply(store, store.embeddings_of(MODEL, extra), extra)
        table._apply(store, store.embeddings_of(MODEL, ids), ids)
    else:
        table.load_all(store, store)
    assert len(table) == 20
    q = queries(1)[0]
    flt = MemoryFilter(projects=("alpha",))
    found = table.search(q, 5, flt)
    assert [m for m, _ in found] == exact_top(store, q, 5, flt)
    assert all(np.isfinite(score) for _, score in found)
