"""VectorIndex: exact top-k vs brute force, incremental changes, filters, save/load."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from memlane.errors import NotFound, StoreError
from memlane.search.vectors import VectorIndex

DIM = 32


def random_vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def brute_force(
    ids: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int
) -> list[tuple[int, float]]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit @ (query / np.linalg.norm(query))
    order = np.argsort(-cos, kind="stable")[:k]
    return [(int(ids[i]), float(cos[i])) for i in order]


def assert_same_hits(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5, atol=1e-6)


def test_search_matches_brute_force() -> None:
    vectors = random_vectors(3000)
    ids = np.arange(1000, 4000, dtype=np.int64)
    index = VectorIndex(DIM, "toy")
    index.add(ids, vectors)
    assert len(index) == 3000
    for seed in range(5):
        query = random_vectors(1, seed=100 + seed)[0]
        assert_same_hits(index.search(query, 10), brute_force(ids, vectors, query, 10))
    query = random_vectors(1, seed=7)[0]
    assert len(index.search(query, 5000)) == 3000
    assert index.search(query, 0) == []


def test_incremental_adds_equal_one_bulk_add() -> None:
    vectors = random_vectors(500, seed=1)
    ids = np.arange(500, dtype=np.int64)
    bulk = VectorIndex(DIM)
    bulk.add(ids, vectors)
    incremental = VectorIndex(DIM)
    for start in range(0, 500, 7):
        incremental.add(ids[start : start + 7], vectors[start : start + 7])
    query = random_vectors(1, seed=2)[0]
    assert incremental.search(query, 20) == bulk.search(query, 20)


def test_add_overwrites_an_existing_id() -> None:
    index = VectorIndex(3)
    index.add([1, 2], [[1, 0, 0], [0, 1, 0]])
    index.add([1], [[0, 0, 5]])
    assert len(index) == 2
    ((best, cosine),) = index.search([0, 0, 1], 1)
    assert best == 1 and cosine == pytest.approx(1.0)
    np.testing.assert_allclose(index.vector(1), [0, 0, 1])


def test_add_rejects_wrong_shapes() -> None:
    index = VectorIndex(4)
    with pytest.raises(ValueError, match="shape"):
        index.add([1, 2], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="dim"):
        index.add([1], np.ones((1, 4)))
        index.search(np.ones(3), 1)


def test_remove_keeps_the_rest_searchable() -> None:
    vectors = random_vectors(200, seed=3)
    ids = np.arange(200, dtype=np.int64)
    index = VectorIndex(DIM)
    index.add(ids, vectors)
    gone = list(range(0, 200, 3))
    assert index.remove([*gone, 99_999]) == len(gone)
    assert index.remove(gone) == 0
    keep = np.array([i for i in range(200) if i % 3], dtype=np.int64)
    assert len(index) == len(keep)
    assert sorted(index.ids.tolist()) == keep.tolist()
    query = random_vectors(1, seed=4)[0]
    assert_same_hits(index.search(query, 15), brute_force(keep, vectors[keep], query, 15))


def test_allowed_ids_restrict_results_small_and_large_filters() -> None:
    vectors = random_vectors(800, seed=5)
    ids = np.arange(800, dtype=np.int64)
    index = VectorIndex(DIM)
    index.add(ids, vectors)
    query = random_vectors(1, seed=6)[0]
    small = {3, 17, 400, 799, 123_456}  # one unknown id is ignored
    got = index.search(query, 10, allowed_ids=small)
    sub = np.array(sorted(small - {123_456}), dtype=np.int64)
    assert_same_hits(got, brute_force(sub, vectors[sub], query, 10))
    large = np.arange(0, 800, 2, dtype=np.int64)  # exercises the vectorized mask
    got = index.search(query, 10, allowed_ids=large)
    assert_same_hits(got, brute_force(large, vectors[large], query, 10))
    assert index.search(query, 10, allowed_ids=set()) == []


def test_zero_vectors_do_not_break_search() -> None:
    index = VectorIndex(3)
    index.add([1, 2], [[0, 0, 0], [1, 1, 0]])
    assert index.search([1, 0, 0], 2)[0][0] == 2
    assert [s for _, s in index.search([0, 0, 0], 2)] == [0.0, 0.0]


def test_save_load_round_trip(tmp_path: Path) -> None:
    vectors = random_vectors(300, seed=8)
    ids = np.arange(10, 310, dtype=np.int64)
    index = VectorIndex(DIM, "use-multilingual-v3")
    index.add(ids, vectors)
    index.remove([10, 11])
    target = tmp_path / "vectors"
    index.save(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700
    for name in ("ids.npy", "vectors.npy", "meta.json"):
        assert stat.S_IMODE(os.stat(target / name).st_mode) == 0o600
    query = random_vectors(1, seed=9)[0]
    for mmap in (True, False):
        loaded = VectorIndex.load(target, mmap=mmap, model="use-multilingual-v3")
        assert loaded.model == "use-multilingual-v3" and loaded.dim == DIM
        assert len(loaded) == len(index)
        assert loaded.search(query, 10) == index.search(query, 10)


def test_memory_mapped_index_accepts_changes(tmp_path: Path) -> None:
    index = VectorIndex(DIM)
    index.add(np.arange(50), random_vectors(50, seed=10))
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path, mmap=True)
    loaded.remove([0, 1])
    loaded.add([1000], random_vectors(1, seed=11))
    assert len(loaded) == 49 and 1000 in loaded and 0 not in loaded
    # The saved files are untouched by changes to the loaded copy.
    assert len(VectorIndex.load(tmp_path)) == 50


def test_load_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="embed --backfill"):
        VectorIndex.load(tmp_path / "missing")
    index = VectorIndex(DIM, "toy-32")
    index.add([1], random_vectors(1))
    index.save(tmp_path)
    with pytest.raises(StoreError, match="re-embed"):
        VectorIndex.load(tmp_path, model="use-multilingual-v3")
    np.save(tmp_path / "ids.npy", np.array([1, 2], dtype=np.int64))
    with pytest.raises(StoreError, match="inconsistent"):
        VectorIndex.load(tmp_path)


def test_clear_empties_the_index() -> None:
    index = VectorIndex(DIM)
    index.add([1, 2], random_vectors(2))
    index.clear()
    assert len(index) == 0 and index.search(random_vectors(1)[0], 3) == []
    index.add([3], random_vectors(1))
    assert len(index) == 1


def test_ann_backend_when_usearch_is_installed() -> None:
    pytest.importorskip("usearch.index")
    vectors = random_vectors(2000, seed=12)
    ids = np.arange(2000, dtype=np.int64)
    index = VectorIndex(DIM, ann_threshold=1000)
    index.add(ids, vectors)
    query = vectors[42]
    hits = dict(index.search(query, 5))
    assert hits[42] == pytest.approx(1.0, abs=0.01)  # HNSW is approximate: top 5, not top 1
    index.remove([42])
    assert 42 not in dict(index.search(query, 5))
    index.add([42], [query])  # upsert after the HNSW index exists
    assert 42 in dict(index.search(query, 5))
    # Filtered searches stay exact.
    assert_same_hits(
        index.search(query, 3, allowed_ids={7, 8}),
        brute_force(np.array([7, 8]), vectors[[7, 8]], query, 3),
    )


def test_repeated_id_in_one_call_keeps_the_last_vector(tmp_path: Path) -> None:
    index = VectorIndex(2)
    index.add([5, 6, 5], [[1, 0], [0, 1], [0, 3]])
    assert len(index) == 2
    np.testing.assert_allclose(index.vector(5), [0, 1])
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path, mmap=True)
    loaded.add([5], [[2, 0]])  # overwriting a row of a read-only mapped matrix
    np.testing.assert_allclose(loaded.vector(5), [1, 0])
    assert len(loaded) == 2
