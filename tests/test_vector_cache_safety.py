"""A damaged or planted vector cache: never read through a link, never written outside itself,
and rebuilt (or done without) instead of failing search.

Each case starts from a real saved generation (SQLite store, float32 file, key arrays, ANN
graph) and crafts what a crash, a bad copy or another local user could leave in the cache
directory. Then it does what the worker does: a new process opens the table, new memories
arrive, searches run, the periodic save appends; a further process searches again. Search
must answer as the store does, and a user file outside the cache (the "victim") must keep
its bytes.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane.models import MemoryFilter
from memlane.search.vectors import VectorTable, save
from memlane.store.sqlite import SQLiteStore
from tests.test_vectors import DIM, MODEL, engine_for, exact_top, fill, queries

ROWS = 300


@dataclass
class Saved:
    """A saved generation of ``ROWS`` rows (with its graph) and a user file beside it."""

    store: SQLiteStore
    cache: Path
    directory: Path
    victim: Path
    content: bytes

    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = json.loads((self.directory / "meta.json").read_text())
        return meta

    def write_meta(self, meta: Any) -> None:
        (self.directory / "meta.json").write_text(json.dumps(meta))

    def edit_meta(self, **fields: Any) -> None:
        self.write_meta({**self.meta(), **fields})

    def file(self, name: str) -> Path:
        """The file of the current generation for ``name``: a key array, matrix or ann."""
        meta = self.meta()
        if name in ("matrix", "ann"):
            return self.directory / str(meta[name])
        return self.directory / f"{name}-{meta['generation']}.npy"

    def untouched(self) -> bool:
        return self.victim.read_bytes() == self.content


@pytest.fixture
def saved(tmp_path: Path) -> Iterator[Saved]:
    store = SQLiteStore(tmp_path / "vectors.db")
    fill(store, ROWS)
    cache = tmp_path / "cache"
    engine = engine_for(store, cache)
    engine.vector_table()
    assert engine.persist_vectors()  # the generation with its graph
    (directory,) = cache.iterdir()
    victim = tmp_path / "victim.txt"
    # Longer than the float32 file, so that a size check alone would accept it.
    content = b"IMPORTANT USER DATA\n" * 2000
    assert len(content) > ROWS * DIM * 4
    victim.write_bytes(content)
    yield Saved(store, cache, directory, victim, content)
    store.close()


def answers_like_the_store(saved: Saved, *, saves: bool = True) -> None:
    """What a new worker does next: open, take new memories, search, save; then a new
    process searches. Every search must agree with the store."""
    fill(saved.store, 20, seed=5)  # new rows: the save appends them
    engine = engine_for(saved.store, saved.cache)
    for rounds in range(2):
        table = engine.vector_table()
        assert len(table) == ROWS + 20
        for q in queries(3):
            found = table.search(q, 5, MemoryFilter())
            assert all(np.isfinite(score) for _, score in found)
            want = exact_top(saved.store, q, 5, MemoryFilter())
            assert len({mid for mid, _ in found} & set(want)) >= 4
        if rounds == 0:
            assert engine.persist_vectors(force=True) is saves
            engine = engine_for(saved.store, saved.cache)  # the next start
    assert saved.untouched()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def link_to_victim(name: str) -> Callable[[Saved], None]:
    def damage(saved: Saved) -> None:
        path = saved.file(name)
        path.unlink()
        path.symlink_to(saved.victim)

    return damage


def fifo(name: str) -> Callable[[Saved], None]:
    def damage(saved: Saved) -> None:
        path = saved.file(name) if name != "meta" else saved.directory / "meta.json"
        path.unlink()
        os.mkfifo(path)

    return damage


def meta_field(**fields: Any) -> Callable[[Saved], None]:
    return lambda saved: saved.edit_meta(**fields)


def array(name: str, make: Callable[[np.ndarray], np.ndarray]) -> Callable[[Saved], None]:
    def damage(saved: Saved) -> None:
        path = saved.file(name)
        np.save(path, make(np.load(path)))

    return damage


def outside_fifo_as_ann(saved: Saved) -> None:
    os.mkfifo(saved.victim.parent / "pipe")
    saved.edit_meta(ann=str(saved.victim.parent / "pipe"))


def meta_linked_outside(saved: Saved) -> None:
    outside = saved.victim.parent / "meta-elsewhere.json"
    outside.write_text(json.dumps(saved.meta()))
    (saved.directory / "meta.json").unlink()
    (saved.directory / "meta.json").symlink_to(outside)


def hard_link_to_victim(saved: Saved) -> None:
    path = saved.file("matrix")
    path.unlink()
    os.link(saved.victim, path)


def ids_elsewhere(saved: Saved) -> None:
    # Consistent arrays (the order checks pass) of ids the store does not have.
    array("ids", lambda ids: ids + 10**6)(saved)
    array("sorted", lambda ids: ids + 10**6)(saved)


def nan_matrix(saved: Saved) -> None:
    path = saved.file("matrix")
    np.full(path.stat().st_size // 4, np.nan, dtype="<f4").tofile(path)


def drop(field: str) -> Callable[[Saved], None]:
    def damage(saved: Saved) -> None:
        meta = saved.meta()
        del meta[field]
        saved.write_meta(meta)

    return damage


DAMAGE: dict[str, Callable[[Saved], None]] = {
    # Links and paths out of the cache: never read as vectors, never written.
    "matrix is a link": link_to_victim("matrix"),
    "ids is a link": link_to_victim("ids"),
    "ann is a link": link_to_victim("ann"),
    "meta.json is a link": meta_linked_outside,
    "matrix is a hard link": hard_link_to_victim,
    "matrix named by absolute path": lambda s: s.edit_meta(matrix=str(s.victim)),
    "matrix named by ../ path": lambda s: s.edit_meta(matrix="../../victim.txt"),
    "matrix named /dev/zero": meta_field(matrix="/dev/zero"),
    "ann named by absolute path": outside_fifo_as_ann,
    "ann named by ../ path": lambda s: s.edit_meta(ann="../../victim.txt"),
    "generation with a path": meta_field(generation="../../victim"),
    # FIFOs: refused, not waited on.
    "meta.json is a FIFO": fifo("meta"),
    "ids is a FIFO": fifo("ids"),
    "matrix is a FIFO": fifo("matrix"),
    "ann is a FIFO": fifo("ann"),
    # Fields of meta.json.
    "meta.json is []": lambda s: s.write_meta([]),
    "meta.json is null": lambda s: s.write_meta(None),
    "dim smaller": meta_field(dim=DIM // 2),
    "dim larger": meta_field(dim=DIM * 2),
    "mark not an int": meta_field(mark="abc"),
    "rows not an int": meta_field(rows="300"),
    "identity missing": drop("identity"),
    "codes of the wrong shape": meta_field(codes=[{"alpha": 0}]),
    "codes a string": meta_field(codes="xyz"),
    "codes with a gap": meta_field(codes=[{"alpha": 0, "beta": 7}, {}, {}]),
    # Key arrays and vectors.
    "ids are strings": array("ids", lambda ids: np.array(["a"] * ids.size)),
    "ids are floats": array("ids", lambda ids: ids.astype(np.float64)),
    "ids not in the store": ids_elsewhere,
    "order out of range": array("order", lambda order: order + ROWS),
    "project code out of range": array("project", lambda p: np.full_like(p, 10**9)),
    "matrix of NaN": nan_matrix,
}


@pytest.mark.parametrize("case", DAMAGE)
def test_a_crafted_cache_is_refused_and_search_still_answers(
    saved: Saved, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    DAMAGE[case](saved)
    with caplog.at_level(logging.WARNING):
        answers_like_the_store(saved)
    assert warnings_of(caplog), "refused without a word"
    for path in saved.directory.iterdir():
        assert stat.S_ISREG(path.lstat().st_mode), f"{path.name} left in the cache"
        assert path.lstat().st_nlink == 1


@pytest.mark.parametrize(
    "case", ["matrix is a link", "dim smaller", "dim larger", "meta.json is a FIFO"]
)
def test_one_log_line_then_a_rebuilt_cache_opens_quietly(
    saved: Saved, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    DAMAGE[case](saved)
    q = queries(1)[0]
    want = exact_top(saved.store, q, 5, MemoryFilter())
    with caplog.at_level(logging.WARNING):
        found = engine_for(saved.store, saved.cache).vector_table().search(q, 5, MemoryFilter())
    assert len({mid for mid, _ in found} & set(want)) >= 4
    warnings = warnings_of(caplog)
    assert len(warnings) == 1 and saved.directory.name in warnings[0], warnings
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        table = engine_for(saved.store, saved.cache).vector_table()
    assert warnings_of(caplog) == [] and table.generation is not None


def test_a_link_planted_while_the_table_is_open_is_not_written_through(saved: Saved) -> None:
    engine = engine_for(saved.store, saved.cache)
    table = engine.vector_table()  # mapped: the worker holds it
    matrix = saved.file("matrix")
    matrix.unlink()
    matrix.symlink_to(saved.victim)
    fill(saved.store, 20, seed=5)
    engine.vector_table()
    assert engine.persist_vectors(force=True)  # writes a new float32 file instead
    assert saved.untouched()
    fresh = engine.vector_table()
    assert fresh.generation != table.generation and not saved.file("matrix").is_symlink()
    q = queries(1)[0]
    want = exact_top(saved.store, q, 5, MemoryFilter())
    assert len({m for m, _ in fresh.search(q, 5, MemoryFilter())} & set(want)) >= 4


def test_a_file_replaced_while_the_table_is_open_is_not_appended_to(saved: Saved) -> None:
    # The save appends only to the file the table maps: the rows it keeps are in that file.
    engine = engine_for(saved.store, saved.cache)
    engine.vector_table()
    matrix = saved.file("matrix")
    size = matrix.stat().st_size
    matrix.unlink()
    matrix.write_bytes(bytes(size))  # same name, another file (and other rows)
    fill(saved.store, 20, seed=5)
    engine.vector_table()
    assert engine.persist_vectors(force=True)
    assert saved.file("matrix") != matrix
    table = engine_for(saved.store, saved.cache).vector_table()  # the next start
    for q in queries(3):
        want = exact_top(saved.store, q, 5, MemoryFilter())
        assert len({m for m, _ in table.search(q, 5, MemoryFilter())} & set(want)) >= 4


def test_a_planted_lock_link_is_not_followed(saved: Saved) -> None:
    table = VectorTable.open(saved.directory, MODEL)
    assert table is not None
    (saved.directory / "lock").unlink()
    (saved.directory / "lock").symlink_to(saved.victim)
    assert save(saved.directory, table.snapshot())
    assert saved.untouched() and not (saved.directory / "lock").is_symlink()


def test_a_nan_row_is_no_match(saved: Saved) -> None:
    # One row damaged where the spot check does not look: searches and cosines skip it.
    table = engine_for(saved.store, saved.cache).vector_table()
    assert table._base is not None
    ids = table._base.columns.ids
    with saved.file("matrix").open("r+b") as handle:
        handle.seek(1 * DIM * 4)
        handle.write(np.full(DIM, np.nan, dtype="<f4").tobytes())
    damaged = int(ids[1])
    table = engine_for(saved.store, saved.cache).vector_table()
    for q in queries(5):
        found = table.search(q, ROWS, MemoryFilter())
        assert damaged not in {mid for mid, _ in found}
        assert all(np.isfinite(score) for _, score in found)
    cosines = table.cosines(queries(1)[0], [damaged, int(ids[2])])
    assert set(cosines) == {int(ids[2])} and np.isfinite(cosines[int(ids[2])])


def test_a_cache_folder_others_can_write_is_made_private(saved: Saved) -> None:
    saved.directory.chmod(0o777)
    saved.cache.chmod(0o777)
    link_to_victim("matrix")(saved)  # what another user could have planted meanwhile
    answers_like_the_store(saved)
    assert stat.S_IMODE(saved.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(saved.cache.stat().st_mode) == 0o700


def test_a_cache_folder_that_is_a_link_is_not_used(
    saved: Saved, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    elsewhere = tmp_path / "elsewhere"
    saved.directory.rename(elsewhere)
    saved.directory.symlink_to(elsewhere)
    listing = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    with caplog.at_level(logging.WARNING):
        answers_like_the_store(saved, saves=False)
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == listing
    # One line per process (two here), not one per search or save.
    assert sum("symbolic link" in w for w in warnings_of(caplog)) == 2


def test_another_users_cache_folder_is_neither_read_nor_written(
    saved: Saved, caplog: pytest.LogCaptureFixture
) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    nobody = 65534
    os.chown(saved.directory, nobody, nobody)
    listing = {p.name: p.read_bytes() for p in saved.directory.iterdir()}
    with caplog.at_level(logging.WARNING):
        answers_like_the_store(saved, saves=False)
    assert {p.name: p.read_bytes() for p in saved.directory.iterdir()} == listing
    warnings = warnings_of(caplog)
    assert sum("belongs to" in w for w in warnings) == 2, warnings  # one per process


def test_a_cache_root_that_is_a_link_to_a_private_folder_is_used(
    saved: Saved, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A cache moved to another disk: the root is a link, the folders memlane makes are not.
    moved = tmp_path / "other-disk" / "cache"
    moved.parent.mkdir()
    saved.cache.rename(moved)
    saved.cache.symlink_to(moved)
    with caplog.at_level(logging.WARNING):
        answers_like_the_store(saved)
    assert warnings_of(caplog) == []
    engine = engine_for(saved.store, saved.cache)
    assert engine.vector_table().generation is not None  # the saved table, not a rebuild


def test_a_zero_vector_in_the_store_does_not_rebuild_the_cache_at_every_open(
    saved: Saved, caplog: pytest.LogCaptureFixture
) -> None:
    # A text with nothing to embed has an all-zero vector; it has no cosine with itself.
    from memlane.models import NewMemory, utcnow

    mid = saved.store.insert_memory(
        NewMemory(
            project="p0",
            kind="observation",
            type="command",
            content="---",
            normalized_hash="zero-row",
            created_at=utcnow(),
        )
    )
    saved.store.put_embeddings(MODEL, DIM, [(mid, np.zeros(DIM, dtype=np.float32).tobytes())])
    engine = engine_for(saved.store, saved.cache)
    engine.vector_table()
    assert engine.persist_vectors(force=True)
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            table = engine_for(saved.store, saved.cache).vector_table()
        assert warnings_of(caplog) == [] and table.generation is not None


def test_a_cache_folder_that_cannot_be_opened_is_not_called_a_link(tmp_path: Path) -> None:
    from memlane.paths import UnsafePath, tighten_own_dir

    with pytest.raises(UnsafePath) as refused:
        tighten_own_dir(tmp_path / ("x" * 5000))  # ENAMETOOLONG, not a link
    assert "cannot open the cache directory" in str(refused.value)
    assert "symbolic link" not in str(refused.value)
