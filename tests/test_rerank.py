"""Lexical reranking features."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.models import Memory
from memlane.search.rerank import (
    UNITS_CACHE_SIZE,
    RerankWeights,
    cached_units,
    prepare_query,
    rerank,
    text_features,
    units,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def mem(
    id_: int,
    content: str,
    *,
    title: str = "",
    session: str | None = "s1",
    at: datetime = T0,
    chunk: int | None = None,
) -> Memory:
    metadata: dict[str, Any] = {} if chunk is None else {"chunk_index": chunk}
    return Memory(
        id=id_,
        project="p",
        kind="turn",
        type="turn",
        content=content,
        created_at=at,
        updated_at=at,
        title=title,
        session_id=session,
        metadata=metadata,
    )


def test_units_split_words_and_cjk_bigrams() -> None:
    assert units("Fix the SQLite-WAL 設定ファイル") == [
        "fix", "the", "sqlite", "sq", "lite", "wal", "設定", "定フ", "ファ", "ァイ", "イル",
    ]  # fmt: skip
    assert units("日本") == ["日本"]
    assert units("本") == ["本"]
    assert units("!!!") == []


def test_an_identifier_is_its_words_as_the_full_text_index_splits_it() -> None:
    # FTS5's unicode61 tokenizer indexes `sessions_per_page` as three words; the reranker
    # and the keyword evidence counted one, which a question's "sessions per page" only
    # prefix-matched, so the line holding the answer ranked below text that merely
    # mentioned the words apart.
    assert units("@sessions_per_page 20") == ["sessions", "per", "page", "20"]
    question = prepare_query("how many sessions per page does the dashboard list?")
    code = text_features(question, "@sessions_per_page 20")
    found = {t for t, whole in zip(question.terms, code.whole, strict=True) if whole}
    assert found == {"sessions", "per", "page"}
    assert code.phrase > 0
    answer, apart = rerank(
        "sessions per page",
        [
            (mem(1, "the sessions list has a page title and a per-user filter"), 1.0),
            (mem(2, "@sessions_per_page 20"), 1.0),
        ],
    )
    assert answer[0].id == 2 and answer[1] > apart[1]


def test_a_camel_case_identifier_is_its_words_as_the_index_holds_them() -> None:
    # The full-text index holds the parts of `TranscriptRenderer` (memlane.text.index_terms);
    # the reranker read one word, which "transcript renderer" only prefix-matched.
    assert units("alias TranscriptRenderer, XMLHttpRequest, s3Bucket") == [
        "alias", "transcriptrenderer", "transcript", "renderer",
        "xmlhttprequest", "xml", "http", "request", "s3bucket", "s3", "bucket",
    ]  # fmt: skip
    assert units("README and HTTPServer") == ["readme", "and", "httpserver", "http", "server"]
    assert units("東京TowerRoad") == ["東京", "towerroad", "tower", "road"]
    # A query is taken as typed: "SQLite" asks for sqlite, "TranscriptRenderer" for itself.
    assert units("ask TranscriptRenderer", identifiers=False) == ["ask", "transcriptrenderer"]
    assert text_features("sqlite", "SQLite").coverage == 1.0
    answer, apart = rerank(
        "where does the transcript renderer cut output",
        [
            (mem(1, "the transcript output is long; the renderer is fine"), 1.0),
            (mem(2, "TranscriptRenderer.cut(output)"), 1.0),
        ],
    )
    assert answer[0].id == 2 and answer[1] > apart[1]


def test_cached_units_are_the_units_of_exactly_that_text() -> None:
    cached_units.cache_clear()
    text = "Retry the Stripe webhook with an idempotency key"
    first = cached_units(text)
    assert list(first) == units(text)
    assert cached_units(text) is first  # kept
    changed = text.replace("idempotency key", "backoff")  # the memory was edited
    assert list(cached_units(changed)) == units(changed)
    assert text_features("idempotency key", changed).coverage == 0.0
    assert text_features("idempotency key", text).coverage == 1.0


def test_the_units_cache_is_bounded() -> None:
    cached_units.cache_clear()
    for i in range(UNITS_CACHE_SIZE + 50):
        cached_units(f"memory number {i}")
    info = cached_units.cache_info()
    assert info.currsize == UNITS_CACHE_SIZE == info.maxsize


def test_stop_words_leave_coverage_but_not_phrases() -> None:
    q = prepare_query("how do I enable the WAL mode")
    assert q.terms == ("enable", "wal", "mode")
    assert q.sequence[0] == "how"
    assert prepare_query("the").terms == ("the",)  # nothing else left: keep it


def test_coverage_counts_query_terms_present() -> None:
    assert text_features("sqlite wal mode", "sqlite wal mode").coverage == 1.0
    assert text_features("sqlite wal mode", "the sqlite database").coverage == pytest.approx(1 / 3)
    assert text_features("sqlite wal mode", "nothing relevant").coverage == 0.0
    # A query word of 4+ characters matches a longer word it prefixes, for half.
    assert text_features("config", "configuration file").coverage == 0.5
    assert text_features("config", "configuration and config").coverage == 1.0
    assert text_features("record 4242", "record 42420").coverage == 0.75
    assert text_features("wal", "walrus").coverage == 0.0


def test_proximity_and_phrase() -> None:
    near = text_features("connection pool", "raise the connection pool size to 20")
    far = text_features(
        "connection pool", "connection errors happened; later we resized the worker pool"
    )
    assert near.proximity == 1.0 and near.phrase == 1.0
    assert 0 < far.proximity < near.proximity
    assert far.phrase == 0.0
    single = text_features("pool", "pool pool")
    assert single.proximity == 0.0 and single.phrase == 0.0


def test_density_favours_focused_text() -> None:
    focused = text_features("pytest fixture", "pytest fixture scope")
    diluted = text_features("pytest fixture", "pytest fixture " + "filler words " * 40)
    assert focused.density > diluted.density
    assert 0 <= diluted.density <= 1


def test_rerank_prefers_full_coverage() -> None:
    partial = mem(1, "The connection was refused by the server")
    full = mem(2, "Postgres connection refused: check listen_addresses in postgresql.conf")
    ranked = rerank("postgres connection refused", [(partial, 1.0), (full, 0.9)])
    assert [m.id for m, _ in ranked] == [2, 1]


def test_rerank_prefers_exact_phrase() -> None:
    scattered = mem(1, "refused a connection in postgres")
    phrase = mem(2, "postgres connection refused again")
    ranked = rerank("postgres connection refused", [(scattered, 1.0), (phrase, 1.0)])
    assert ranked[0][0].id == 2
    assert ranked[0][1] > ranked[1][1]


def test_rerank_scales_fused_scores_multiplicatively() -> None:
    weights = RerankWeights(coverage=1.0, phrase=0.0, proximity=0.0, density=0.0)
    m = mem(1, "alpha beta")
    ((_, score),) = rerank("alpha gamma", [(m, 0.03)], weights=weights)
    assert score == pytest.approx(0.03 * (1 + 0.5))
    # No evidence: the fused order is kept (stable sort), scores unchanged.
    a, b = mem(1, "xyz"), mem(2, "uvw")
    assert rerank("nothing", [(a, 0.5), (b, 0.5)]) == [(a, 0.5), (b, 0.5)]
    assert rerank("", [(b, 0.2), (a, 0.7)]) == [(a, 0.7), (b, 0.2)]


def test_rerank_uses_title_and_custom_text() -> None:
    titled = mem(1, "body without the words", title="WAL checkpoint tuning")
    plain = mem(2, "body without the words")
    ranked = rerank("wal checkpoint", [(plain, 1.0), (titled, 1.0)])
    assert ranked[0][0].id == 1
    ranked = rerank("wal checkpoint", [(plain, 1.0), (titled, 1.0)], text_of=lambda m: m.content)
    assert ranked[0][1] == ranked[1][1]


def test_cjk_coverage_and_phrase() -> None:
    query = "設定ファイル"
    whole = text_features(query, "この設定ファイルを編集する")
    split = text_features(query, "ファイルの設定を確認")
    other = text_features(query, "データベースの接続")
    assert whole.coverage == 1.0 and whole.phrase == 1.0
    assert 0 < split.coverage < 1.0 and split.phrase < 1.0
    assert other.coverage == 0.0
    docs = [(mem(1, "ファイルの設定を確認"), 1.0), (mem(2, "この設定ファイルを編集する"), 1.0)]
    assert rerank(query, docs)[0][0].id == 2


def test_chinese_and_mixed_queries() -> None:
    f = text_features("数据库 migration", "运行数据库 migration 脚本")
    assert f.coverage == 1.0
    assert text_features("数据库", "缓存服务").coverage == 0.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=300))
def test_features_stay_in_unit_range_for_any_text(query: str, text: str) -> None:
    f = text_features(query, text)
    for value in (f.coverage, f.density, f.proximity, f.phrase):
        assert 0.0 <= value <= 1.0
    ((_, score),) = rerank(query, [(mem(1, text), 0.25)])
    assert 0.25 <= score <= 0.25 * (1 + sum(vars_of(RerankWeights())))


def vars_of(weights: RerankWeights) -> list[float]:
    return [weights.coverage, weights.phrase, weights.proximity, weights.density]


_WORDS = st.lists(
    st.sampled_from(["pay", "payment", "payments", "payable", "retry", "retries", "key", "keys"]),
    max_size=30,
).map(" ".join)


@given(_WORDS, _WORDS)
def test_term_counts_are_those_of_term_of_for_every_word(query: str, text: str) -> None:
    # text_features decides most words without term_of (by their first letters):
    # the counts must be those term_of gives each word of the text.
    fresh = prepare_query(query)
    expected = [0] * len(fresh.terms)
    for unit in units(text):
        term = fresh.term_of(unit)
        if term is not None:
            expected[fresh.terms.index(term)] += 1
    if fresh.terms and units(text):
        assert text_features(prepare_query(query), text).counts == tuple(expected)
