"""Keyword mode's evidence: the share of the query's BM25 weight a text carries."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.search import bm25
from memlane.search.rerank import prepare_query, text_features
from memlane.service import Memory
from memlane.service import open as open_memory

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def mem(settings: Settings, tmp_path: Path) -> Memory:
    return open_memory(str(tmp_path / "kw.db"), settings=replace(settings, embedder="none"))


def save(mem: Memory, text: str, minutes: int) -> int:
    return mem.save(text, project="p", created_at=T0 + timedelta(minutes=minutes)).id


NEUTRAL = [
    "garden",
    "kitchen",
    "bicycle",
    "recipe",
    "budget",
    "laptop",
    "playlist",
    "weekend",
    "museum",
    "coffee",
    "marathon",
    "spreadsheet",
    "camera",
    "guitar",
    "holiday",
    "printer",
    "salad",
    "workshop",
    "novel",
    "podcast",
]


def chatter(n: int, size: int) -> str:
    """``size`` words of small talk that no query below asks about, different for each ``n``."""
    return " ".join(NEUTRAL[(n * 7 + i * 3) % len(NEUTRAL)] for i in range(size))


def test_a_rare_word_stated_briefly_beats_common_words_in_a_long_reply(
    any_memory: Memory,
) -> None:
    # The question's common words ("many", "years", "older") recur in a chat; one turn
    # names the grandma. Counting the share of query words present put the long reply
    # that uses every common word once above the turn with the fact. Both backends.
    mem = any_memory
    for n in range(40):
        common = " ".join(w for w, k in (("many", 8), ("years", 9), ("older", 13)) if n % k == 1)
        save(mem, f"{chatter(n, 8)} {common} note {n}", n)
    fact = save(mem, f"I'm planning a party: my grandma turns 75 next month, {chatter(41, 6)}", 50)
    save(mem, f"We visited grandma with the kids {chatter(42, 12)}", 51)
    reply = save(mem, f"Many people feel older as the years go by. {chatter(43, 120)}", 52)
    question = "How many years older is my grandma than me?"
    ranked = [h.id for h in mem.search(question, project="p", mode="keyword", limit=50)]
    assert ranked.index(fact) < ranked.index(reply)


def test_the_same_words_count_more_in_a_short_text(mem: Memory) -> None:
    for n in range(6):
        save(mem, f"weekly notes {n} about the office plants", n)
    short = save(mem, "I repotted the snake plant and the fern on Sunday.", 10)
    long = save(mem, f"{chatter(1, 60)} The snake plant and the fern need repotting.", 11)
    hits = {h.id: h.score for h in mem.search("snake plant fern", project="p", mode="keyword")}
    assert hits[short] > hits[long] > 0


def test_idf_weighs_rare_words_more_and_is_never_negative() -> None:
    assert bm25.idf(100, 1) > bm25.idf(100, 10) > bm25.idf(100, 90) > 0
    assert bm25.idf(100, 100) > 0
    assert bm25.idf(0, 0) == pytest.approx(math.log(2))
    assert bm25.idf(10, 50) == bm25.idf(10, 10)  # a count above the total is the total


def test_tf_weight_is_one_for_one_mention_at_average_length() -> None:
    assert bm25.tf_weight(1, 40, 40.0) == pytest.approx(1.0)
    assert bm25.tf_weight(1, 400, 40.0) < 1.0 < bm25.tf_weight(1, 10, 40.0)
    assert bm25.tf_weight(3, 40, 40.0) > bm25.tf_weight(1, 40, 40.0)
    assert bm25.tf_weight(1_000, 1, 40.0) < bm25.K1 + 1
    assert bm25.tf_weight(0, 40, 40.0) == 0.0
    assert bm25.tf_weight(1, 40, 0.0) == pytest.approx(1.0)  # no reference: as if average


def test_share_weighs_words_by_idf_and_halves_prefix_only_matches() -> None:
    q = prepare_query("grandma years")
    assert q.terms == ("grandma", "years")
    grandma = text_features(q, "my grandma is here")
    years = text_features(q, "many years went by")
    weights = [3.0, 1.0]
    assert bm25.share(grandma, weights, 4.0) == pytest.approx(0.75)
    assert bm25.share(years, weights, 4.0) == pytest.approx(0.25)
    prefix = text_features(q, "grandmas are here now")  # "grandma" only as a prefix
    assert bm25.share(prefix, weights, 4.0) == pytest.approx(0.375)
    both = text_features(q, "grandma years grandma years")
    assert bm25.share(both, weights, 4.0) == 1.0  # capped
    assert bm25.share(grandma, [0.0, 0.0], 4.0) == 0.0  # no searched word: no evidence


def test_features_count_each_query_term() -> None:
    q = prepare_query("cache warm")
    f = text_features(q, "the cache is warm, the cache is fast, caches everywhere")
    assert f.length == 10
    assert f.counts == (3, 1)  # "caches" begins with "cache"
    assert f.whole == (True, True)
    assert text_features(q, "caches only").whole == (False, False)


def test_word_counts_are_kept_while_the_store_grows_little(tmp_path: Path) -> None:
    from memlane.models import NewMemory, utcnow
    from memlane.search import word_counts
    from memlane.search.fts import unit_query
    from memlane.search.word_counts import WordCounts
    from memlane.store.sqlite import SQLiteStore

    def add(store: SQLiteStore, text: str) -> None:
        store.insert_memory(
            NewMemory(
                project="p",
                kind="manual",
                type="note",
                content=text,
                normalized_hash=str(hash(text)),
                created_at=utcnow(),
            )
        )

    store = SQLiteStore(tmp_path / "counts.db")
    try:
        for n in range(100):
            add(store, f"note {n}" + (" cache" if n % 10 == 0 else ""))
        counts = WordCounts(store, unit_query)
        assert counts.counts(["cache", "note", "absent"]) == (100, [10, 100, 0])
        add(store, "cache again")  # 1 % more memories: the counts of then still hold
        assert counts.counts(["cache", "note"]) == (101, [10, 100])
        for _ in range(round(100 * word_counts.DRIFT)):  # past the drift: asked again
            add(store, "cache once more")
        assert counts.counts(["cache", "note"]) == (106, [16, 100])
        # A word never asked is counted now, whatever the drift.
        assert counts.counts(["again"]) == (106, [1])
    finally:
        store.close()
