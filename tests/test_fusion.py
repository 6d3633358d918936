"""Rank fusion: RRF math, min-max / distribution-based convex fusion, determinism, choice."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.config import Settings, load_settings
from memlane.errors import InvalidInput
from memlane.search.fusion import METHODS, fuse, minmax, rrf, zscore_unit
from memlane.service import Memory
from memlane.service import open as open_memory


def test_rrf_matches_the_formula() -> None:
    fused = rrf([[1, 2, 3], [3, 1]], k=60)
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert set(fused) == {1, 2, 3}


def test_rrf_weights_and_k() -> None:
    fused = rrf([[7], [8]], k=0, weights=[2.0, 0.5])
    assert fused == {7: pytest.approx(2.0), 8: pytest.approx(0.5)}
    with pytest.raises(ValueError, match="weights"):
        rrf([[1], [2]], weights=[1.0])
    with pytest.raises(ValueError):
        rrf([[1]], k=-1)


def test_rrf_counts_a_duplicate_at_its_best_rank_only() -> None:
    assert rrf([[5, 5, 6]], k=60) == {5: pytest.approx(1 / 61), 6: pytest.approx(1 / 63)}


def test_fuse_rrf_rewards_agreement() -> None:
    keyword = [(1, 9.0), (2, 8.0), (3, 7.0)]
    semantic = [(3, 0.9), (4, 0.8), (2, 0.7)]
    order = [doc for doc, _ in fuse("rrf", keyword, semantic)]
    # 3 and 2 appear in both lists: they beat 1 and 4, which appear once.
    assert set(order[:2]) == {2, 3}
    assert order[0] == 3  # ranks 3 + 1 beat ranks 2 + 3
    assert set(order) == {1, 2, 3, 4}


def test_fuse_sorts_inputs_by_score_itself() -> None:
    shuffled = [(2, 0.1), (1, 0.9), (3, 0.5)]
    assert [d for d, _ in fuse("rrf", shuffled, [])] == [1, 3, 2]


def test_fuse_with_one_empty_side_keeps_the_other_order() -> None:
    semantic = [(10, 0.9), (11, 0.8), (12, 0.1)]
    for method in METHODS:
        assert [d for d, _ in fuse(method, [], semantic)] == [10, 11, 12], method
        assert [d for d, _ in fuse(method, semantic, [])] == [10, 11, 12], method
    assert fuse("rrf", [], []) == []


def test_convex_uses_score_gaps_that_rrf_ignores() -> None:
    # Keyword: doc 1 barely beats doc 2; semantic: doc 2 crushes doc 1.
    keyword = [(1, 10.0), (2, 9.99), (3, 0.0)]
    semantic = [(2, 0.95), (3, 0.2), (1, 0.19)]
    convex = fuse("convex", keyword, semantic, alpha=0.5)
    assert convex[0][0] == 2
    assert convex[0][1] == pytest.approx(0.5 * (9.99 / 10.0) + 0.5 * 1.0)
    # alpha=1 is keyword only, alpha=0 semantic only.
    assert [d for d, _ in fuse("convex", keyword, semantic, alpha=1.0)] == [1, 2, 3]
    assert fuse("convex", keyword, semantic, alpha=0.0)[0][0] == 2
    with pytest.raises(ValueError, match="alpha"):
        fuse("convex", keyword, semantic, alpha=1.5)


def test_minmax_and_zscore_normalization() -> None:
    assert minmax([(1, 5.0), (2, 3.0), (3, 1.0)]) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert minmax([(1, 2.0), (2, 2.0)]) == {1: 1.0, 2: 1.0}
    assert minmax([]) == {}
    z = zscore_unit([(1, 1.0), (2, 2.0), (3, 3.0)])
    assert z[1] < z[2] < z[3]
    assert z[2] == pytest.approx(0.5)
    assert zscore_unit([(4, 7.0)]) == {4: 1.0}


def test_unknown_method_names_the_choices() -> None:
    with pytest.raises(ValueError, match="rrf"):
        fuse("borda", [(1, 1.0)], [])


def test_ties_are_broken_deterministically() -> None:
    keyword = [(5, 1.0), (9, 0.5)]
    semantic = [(9, 1.0), (5, 0.5)]
    first = fuse("rrf", keyword, semantic)
    assert first[0][1] == pytest.approx(first[1][1])
    assert [d for d, _ in first] == [5, 9]  # same best rank: smaller id first
    assert fuse("rrf", list(reversed(keyword)), semantic) == first


scored_lists = st.lists(
    st.tuples(st.integers(0, 50), st.floats(-100, 100, allow_nan=False)), max_size=30
)


@given(scored_lists, scored_lists, st.sampled_from(METHODS))
def test_fusion_covers_every_input_id_once_and_sorts(
    keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], method: str
) -> None:
    fused = fuse(method, keyword, semantic)
    ids = [d for d, _ in fused]
    assert len(ids) == len(set(ids))
    assert set(ids) == {d for d, _ in keyword} | {d for d, _ in semantic}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    if method != "rrf":
        assert all(0.0 <= s <= 1.0 for s in scores)


def test_fusion_is_chosen_in_config_or_per_search(settings: Settings, tmp_path: Path) -> None:
    path = str(tmp_path / "fusion.db")
    mem = open_memory(path, settings=replace(settings, embedder="toy"))
    for text in (
        "retry the payment webhook with an idempotency key",
        "webhook signatures are checked before parsing",
        "payment retries doubled the charges last spring",
        "the cache warms up after each deploy",
    ):
        mem.save(text, project="p")
    mem.embed_backfill()
    query = "payment webhook retry"

    def scored(memory: Memory, **kwargs: Any) -> list[tuple[int, float]]:
        hits = memory.search(query, project="p", mode="hybrid", **kwargs)
        return [(hit.id, hit.score) for hit in hits]

    calibrated, rrf = scored(mem), scored(mem, fusion="rrf")
    assert calibrated == scored(mem, fusion="calibrated") and calibrated != rrf
    with pytest.raises(InvalidInput, match="unknown fusion 'borda'"):
        mem.search(query, fusion="borda")
    mem.close()
    home = str(tmp_path / "home")
    loaded, warnings = load_settings(environ={"MEMLANE_HOME": home, "MEMLANE_SEARCH_FUSION": "rrf"})
    assert not warnings and loaded.search__fusion == "rrf"
    configured = open_memory(path, settings=replace(settings, embedder="toy", search__fusion="rrf"))
    try:
        assert scored(configured) == rrf
    finally:
        configured.close()
    _, bad = load_settings(environ={"MEMLANE_HOME": home, "MEMLANE_SEARCH_FUSION": "borda"})
    assert len(bad) == 1 and "search.fusion" in bad[0]
