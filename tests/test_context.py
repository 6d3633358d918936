"""Context packing: the budget always holds, dedup, progressive disclosure renderers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.models import Memory, SearchHit
from memlane.search.context import (
    MIN_TRUNCATED_TOKENS,
    pack_context,
    render_full,
    render_index,
    render_timeline,
)
from memlane.text import estimate_tokens

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def mem(id_: int, content: str, title: str = "", type_: str = "decision", days: int = 0) -> Memory:
    at = T0 + timedelta(days=days)
    return Memory(
        id=id_,
        project="api",
        kind="knowledge",
        type=type_,
        content=content,
        created_at=at,
        updated_at=at,
        title=title,
    )


def hit(id_: int, content: str, title: str = "", score: float = 0.5, **kw: str) -> SearchHit:
    return SearchHit(
        id=id_,
        project="api",
        kind="knowledge",
        type="bugfix",
        title=title,
        content=content,
        created_at=T0,
        score=score,
        from_project=kw.get("from_project"),
    )


def test_render_index_is_compact_and_complete() -> None:
    text = render_index(
        [
            hit(12, "long body " * 50, title="Use WAL mode", score=0.834),
            hit(13, "untitled body\nsecond line", score=0.1, from_project="web"),
        ]
    )
    lines = text.splitlines()
    assert lines[0] == "- #12 2025-03-01 bugfix: Use WAL mode (0.83)"
    assert lines[1] == "- #13 2025-03-01 bugfix: untitled body second line (0.10) [from: web]"
    # Memories have no score: the index line simply omits it.
    assert render_index([mem(1, "x", title="T")]) == "- #1 2025-03-01 decision: T"


def test_render_index_cuts_long_titles() -> None:
    line = render_index([mem(1, "word " * 100)])
    assert line.endswith("…") and len(line) < 120


def test_the_renderers_make_stored_names_safe() -> None:
    tag = "</system-reminder>"
    index = render_index([hit(1, "body", title="t" + tag, from_project="p" + tag)])
    timeline = render_timeline([mem(2, "body", title="t" + tag, type_="y" + tag)])
    full = render_full([mem(3, "body", title="t" + tag, type_="y" + tag)])
    for text in (index, timeline, full):
        assert "system-reminder" not in text and "[harness tag removed]" in text, text


def test_render_full_and_timeline() -> None:
    full = render_full([mem(1, "  body one  ", title="First"), mem(2, "body two")])
    assert full == (
        "## #1 2025-03-01 decision First\nbody one\n\n## #2 2025-03-01 decision\nbody two"
    )
    timeline = render_timeline(
        [mem(3, "c", days=2), mem(1, "a", days=0), mem(2, "b", days=1)], anchor_id=2
    )
    assert [line[:5] for line in timeline.splitlines()] == ["  #1 ", "→ #2 ", "  #3 "]


def test_pack_includes_all_when_it_fits() -> None:
    items = [mem(i, f"memory number {i}") for i in range(3)]
    packed = pack_context(items, 2000, header="# Memories")
    assert packed.full_ids == (0, 1, 2)
    assert packed.text.startswith("# Memories\n\n## #0")
    assert packed.tokens == estimate_tokens(packed.text)
    assert not packed.index_ids and not packed.dropped_ids


def test_pack_dedups_normalized_text() -> None:
    items = [mem(1, "Use WAL mode"), mem(2, "  use   wal MODE "), mem(3, "Other")]
    packed = pack_context(items)
    assert packed.full_ids == (1, 3)
    assert packed.duplicate_ids == (2,)


def test_pack_truncates_then_lists_overflow_as_index() -> None:
    items = [mem(1, "a" * 600, title="first"), mem(2, "b" * 4000, title="big"), mem(3, "c" * 4000)]
    packed = pack_context(items, 400)
    assert packed.tokens <= 400
    assert packed.full_ids == (1, 2)
    assert packed.truncated_ids == (2,)
    assert "…" in packed.text
    assert packed.index_ids == () or packed.index_ids == (3,)
    assert set(packed.index_ids + packed.dropped_ids) == {3}


def test_pack_max_full_moves_the_rest_to_the_index() -> None:
    items = [mem(i, f"memory {i}", title=f"title {i}") for i in range(5)]
    packed = pack_context(items, 2000, max_full=2)
    assert packed.full_ids == (0, 1)
    assert packed.index_ids == (2, 3, 4)
    assert "More:\n- #2 2025-03-01 decision: title 2" in packed.text


def test_pack_skips_an_item_that_cannot_fit_but_keeps_later_small_ones() -> None:
    big_title = "T" * 300  # even the header of this record (cut to 80) exceeds the budget
    items = [mem(1, "x" * 50, title=big_title), mem(2, "small")]
    packed = pack_context(items, 12, index_overflow=False)
    assert packed.full_ids == (2,)
    assert packed.dropped_ids == (1,)


def test_pack_never_truncates_below_the_minimum() -> None:
    items = [mem(1, "a" * 100), mem(2, "b" * 1000)]
    first = pack_context(items[:1], 1000).tokens
    packed = pack_context(items, first + MIN_TRUNCATED_TOKENS // 2, index_overflow=False)
    assert packed.full_ids == (1,)
    assert packed.dropped_ids == (2,)


def test_zero_budget_gives_empty_text() -> None:
    packed = pack_context([mem(1, "x")], 0, header="header")
    assert packed.text == "" and packed.tokens == 0
    assert pack_context([], -5).text == ""


texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=600)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(texts, st.text(max_size=120)), max_size=12),
    st.integers(min_value=-10, max_value=700),
    st.text(max_size=200),
    st.one_of(st.none(), st.integers(0, 5)),
    st.booleans(),
)
def test_budget_is_never_exceeded(
    records: list[tuple[str, str]],
    budget: int,
    header: str,
    max_full: int | None,
    index_overflow: bool,
) -> None:
    items = [mem(i, content, title=title) for i, (content, title) in enumerate(records)]
    packed = pack_context(
        items, budget, header=header, max_full=max_full, index_overflow=index_overflow
    )
    assert estimate_tokens(packed.text) <= max(budget, 0)
    assert packed.tokens == estimate_tokens(packed.text)
    accounted = packed.full_ids + packed.index_ids + packed.duplicate_ids + packed.dropped_ids
    assert sorted(accounted) == list(range(len(items)))
    assert set(packed.truncated_ids) <= set(packed.full_ids)
