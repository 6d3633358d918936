"""Search through the facade: keyword floor, CJK, short and hostile queries, modes, as_of."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memlane.arguments import blank
from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.search.engine import NOTICE_NO_VECTORS
from memlane.service import Memory
from memlane.service import open as open_memory


@pytest.fixture
def keyword_memory(settings: Settings, tmp_path: Path) -> Memory:
    """A memory whose configured embedder has never produced a vector."""
    mem = open_memory(str(tmp_path / "kw.db"), settings=replace(settings, embedder="toy"))
    mem.save("We use SQLite in WAL mode so hooks can write concurrently", project="p")
    mem.save("The cache warms up slowly after a restart", project="p")
    mem.save("Deploy with docker compose on the staging host", project="p")
    mem.save("昨日は東京タワーに行った。設定ファイルを変更した", project="p")
    mem.save("データベースの移行が完了しました", project="p")
    mem.save("数据库迁移已经完成,北京团队确认", project="p")
    mem.save("Go is fast", project="p")
    return mem


def ids_for(mem: Memory, query: str) -> list[str]:
    """Contents of the hits for ``query`` in project p (named for what they identify)."""
    return [hit.content for hit in mem.search(query, project="p", scope="project")]


def test_keyword_search_without_any_vectors_says_so(keyword_memory: Memory) -> None:
    hits = keyword_memory.search("sqlite concurrency", project="p")
    assert hits and "SQLite" in hits[0].content
    assert hits.notice == NOTICE_NO_VECTORS
    # Asking for semantic or hybrid explicitly still answers, in keyword mode.
    for mode in ("semantic", "hybrid"):
        again = keyword_memory.search("sqlite concurrency", project="p", mode=mode)
        assert [h.id for h in again] == [h.id for h in hits]
        assert again.notice == NOTICE_NO_VECTORS
    assert keyword_memory.search("sqlite", project="p", mode="keyword").notice is None


def test_embedder_none_is_keyword_only(settings: Settings, tmp_path: Path) -> None:
    mem = open_memory(str(tmp_path / "none.db"), settings=replace(settings, embedder="none"))
    mem.save("alpha beta gamma", project="p")
    hits = mem.search("beta", project="p")
    assert [h.content for h in hits] == ["alpha beta gamma"]
    assert hits.notice == NOTICE_NO_VECTORS


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("東京", "東京タワー"),  # a 2-character Japanese word inside a sentence
        ("設定", "設定ファイル"),
        ("タワー", "東京タワー"),
        ("設定ファイル", "設定ファイル"),  # a longer word
        ("データベース", "データベース"),
        ("迁移", "数据库迁移"),  # Chinese
        ("北京团队", "北京团队"),
        ("数据库", "数据库迁移"),
    ],
)
def test_cjk_words_are_found(keyword_memory: Memory, query: str, expected: str) -> None:
    found = ids_for(keyword_memory, query)
    assert found and expected in found[0]


def test_unrelated_cjk_finds_nothing(keyword_memory: Memory) -> None:
    assert ids_for(keyword_memory, "大阪城") == []


@pytest.mark.parametrize(("query", "expected"), [("Go", "Go is fast"), ("東", "東京タワー")])
def test_short_queries_use_substring_match(
    keyword_memory: Memory, query: str, expected: str
) -> None:
    found = ids_for(keyword_memory, query)
    assert any(expected in text for text in found)


def test_a_substring_match_reads_only_the_newest_memories_the_scan_allows(
    keyword_memory: Memory,
) -> None:
    from memlane.models import MemoryFilter
    from memlane.search.engine import keyword_candidates

    store, mine = keyword_memory.store, MemoryFilter(projects=("p",))
    # "achtower" is in no word the full-text index holds: a substring match (LIKE).
    assert ids_for(keyword_memory, "achtower") == []
    keyword_memory.save("the Wachtower sync job", project="p")
    assert ids_for(keyword_memory, "achtower") == ["the Wachtower sync job"]
    for i in range(3):
        keyword_memory.save(f"later note {i}", project="p")
    assert len(keyword_candidates(store, "achtower", mine, 10, scan=4)) == 1
    assert keyword_candidates(store, "achtower", mine, 10, scan=3) == []


def test_prefix_only_for_short_typed_queries(keyword_memory: Memory) -> None:
    assert ids_for(keyword_memory, "concurren")  # typing: the last word is a prefix
    assert not ids_for(keyword_memory, "please tell me everything about concurren")


def test_empty_query_is_invalid(keyword_memory: Memory) -> None:
    with pytest.raises(InvalidInput):
        keyword_memory.search("   ", project="p")


@hsettings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    query=st.text(
        alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=60
    ).filter(lambda q: not blank(q))
    | st.sampled_from(
        [
            '"',
            "'",
            "*",
            "NOT",
            "a OR",
            "AND AND",
            "NEAR(a b)",
            "col:value",
            "cjk_terms : x",
            '"unterminated',
            "(((",
            ")",
            "^start",
            "x*y*",
            "-minus",
            "+plus",
            "%_\\",
            "{a b}",
            "東京 OR",
            "\x00x",
        ]
    )
)
def test_hostile_queries_never_raise(keyword_memory: Memory, query: str) -> None:
    """As plain text any query searches; with the syntax it searches or fails in one line."""
    for mode in ("keyword", "hybrid"):
        hits = keyword_memory.search(query, project="p", mode=mode, syntax=False)
        assert all(0.0 <= hit.score <= 1.0 for hit in hits)
        try:
            hits = keyword_memory.search(query, project="p", mode=mode)
        except InvalidInput as exc:
            assert str(exc).startswith("search syntax: ")
            assert "\n" not in str(exc)
        else:
            assert all(0.0 <= hit.score <= 1.0 for hit in hits)


def test_as_of_ignores_later_memories_and_ranks_from_then(
    settings: Settings, tmp_path: Path
) -> None:
    mem = open_memory(str(tmp_path / "asof.db"), settings=replace(settings, embedder="none"))
    start = datetime.now(UTC) - timedelta(days=90)
    old = mem.save("release checklist version one", project="p", created_at=start)
    new = mem.save(
        "release checklist version two", project="p", created_at=start + timedelta(days=60)
    )
    now_hits = mem.search("release checklist", project="p", scope="project")
    assert [h.id for h in now_hits] == [new.id, old.id]
    then = mem.search(
        "release checklist", project="p", scope="project", as_of=start + timedelta(days=1)
    )
    assert [h.id for h in then] == [old.id]
    # Seen from day 1, the old memory is fresh: its score is higher than it is today.
    today_old = next(h for h in now_hits if h.id == old.id)
    assert then[0].score > today_old.score


def test_keyword_recall_does_not_import_numpy(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "lean.db"
    script = textwrap.dedent(
        f"""
        import sys
        import memlane
        mem = memlane.open({str(db)!r})
        mem.save("hooks write with WAL mode", project="p")
        hits = mem.recall("why WAL mode for hooks", project="p", mode="keyword")
        assert hits, hits
        mem.search("WAL", project="p")  # default mode, no vectors: keyword
        assert "numpy" not in sys.modules, "numpy was imported on the keyword path"
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_keyword_scan_bounds_the_scored_matches(settings: Settings, tmp_path: Path) -> None:
    mem = open_memory(str(tmp_path / "scan.db"), settings=replace(settings, embedder="none"))
    ids = [mem.save(f"common word entry {i}", project="p").id for i in range(30)]
    every = mem.search("common", project="p", scope="project", limit=50)
    assert {h.id for h in every} == set(ids)
    bounded = mem.search("common", project="p", scope="project", limit=50, keyword_scan=5)
    assert {h.id for h in bounded} == set(ids[-5:])  # the newest five matches
    assert mem.recall("common word", project="p", mode="keyword")


def test_a_bounded_scan_still_reaches_old_memories_by_their_rare_words(
    settings: Settings, tmp_path: Path
) -> None:
    """The newest matches of a common word are a window of recent memories; every memory
    holding one of the query's rare words is scored too, by the same BM25."""
    mem = open_memory(str(tmp_path / "reach.db"), settings=replace(settings, embedder="none"))
    old = mem.save("the deploy script pins pgbouncer to version 1.21", project="p").id
    newer = [mem.save(f"deploy notes for day {i}", project="p").id for i in range(30)]
    query = "which pgbouncer version does the deploy script pin"
    every = mem.search(query, project="p", scope="project", limit=50)
    bounded = mem.search(query, project="p", scope="project", limit=50, keyword_scan=5)
    assert every[0].id == old
    assert bounded[0].id == old
    assert {h.id for h in bounded} == {old, *newer[-5:]}
    # A query whose words are all rare needs no second look: the window holds them all.
    assert [h.id for h in mem.search("pgbouncer", project="p", keyword_scan=5)] == [old]


def test_a_request_alpha_sets_the_keyword_weight_of_the_fusion(keyword_memory: Memory) -> None:
    """Recall weighs the words more than search does (queries.RECALL_ALPHA): the same two
    lists fuse in the other order when the request's alpha favours the keyword side."""
    from memlane.search.queries import RECALL_ALPHA

    engine = keyword_memory.search_engine
    keyword = [(1, 10.0), (2, 6.0)]  # BM25: 1 matches the words best
    semantic = [(2, 0.60), (1, 0.35)]  # cosine: 2 is closer in meaning
    assert engine.ranking.alpha < RECALL_ALPHA
    by_meaning = engine._fuse(keyword, semantic, "calibrated", engine.ranking.alpha)
    by_words = engine._fuse(keyword, semantic, "calibrated", 0.9)
    assert [mid for mid, _ in by_meaning] == [2, 1]
    assert [mid for mid, _ in by_words] == [1, 2]


def test_rare_words_are_the_rarest_that_fit_the_budget_together() -> None:
    from memlane.search.engine import rare_words
    from memlane.search.fts import build_query

    held = {"deploy": 900, "pgbouncer": 3, "version": 400, "pin": 120, "script": 0}

    def counts(words: list[str]) -> list[int]:
        return [held[w] for w in words]

    query = build_query("deploy pgbouncer version pin script", prefix=False)
    assert query is not None
    rare = rare_words(query, 250, counts)
    assert rare is not None
    assert [t.text for t in rare.terms] == ["pgbouncer", "pin"]  # 3 + 120; 400 more would not fit
    assert rare_words(query, 2_000, counts) is None  # the window holds every match anyway
    assert rare_words(query, 2, counts) is None  # no word that rare
    one = build_query("pgbouncer", prefix=False)
    assert one is not None and rare_words(one, 1, counts) is None


def test_a_warm_engine_ranks_an_edited_memory_by_its_new_text(
    settings: Settings, tmp_path: Path
) -> None:
    """What the engine keeps between searches (the units of texts it reranked, the
    words' counts) never outlives an edit: warm, it scores as a fresh process does."""
    from memlane.search.rerank import cached_units

    db = str(tmp_path / "edit.db")
    config = replace(settings, embedder="none")
    warm = open_memory(db, settings=config)
    warm.save("webhook handler: sleeps, then calls retry", project="p", topic_key="t")
    warm.save("unrelated: the webhook dashboard shows counts", project="p")
    before = warm.search("webhook retry", project="p", mode="keyword")
    assert before and "retry" in before[0].content
    saved = warm.save("webhook handler: webhook retry with backoff", project="p", topic_key="t")
    assert saved.status == "updated"
    after = warm.search("webhook retry", project="p", mode="keyword")
    cached_units.cache_clear()
    cold = open_memory(db, settings=config)
    try:
        fresh = cold.search("webhook retry", project="p", mode="keyword")
    finally:
        cold.close()
        warm.close()
    assert after[0].content == "webhook handler: webhook retry with backoff"
    assert after[0].score > before[0].score  # the whole phrase now, in a short text
    assert [(h.id, h.content, h.score) for h in after] == [
        (h.id, h.content, h.score) for h in fresh
    ]


def test_a_compaction_summary_ranks_below_the_turn_it_restates(
    settings: Settings, tmp_path: Path
) -> None:
    from memlane.search.scoring import RESTATEMENT_FACTOR

    mem = open_memory(str(tmp_path / "restate.db"), settings=replace(settings, embedder="none"))
    when = datetime.now(UTC) - timedelta(days=1)
    text = "the review page flash says Closed 3 annotations after closing the review"
    summary = mem.save(text, project="p", kind="turn", type="compaction", created_at=when)
    reply = mem.save(text, project="p", kind="turn", type="reply", created_at=when)
    hits = mem.search("review page flash", project="p", scope="project")
    assert [h.id for h in hits] == [reply.id, summary.id]
    assert hits[1].score == pytest.approx(RESTATEMENT_FACTOR * hits[0].score, rel=1e-6)


def test_a_memory_about_the_file_the_query_names_ranks_above_pages_that_share_its_words(
    keyword_memory: Memory,
) -> None:
    mem = keyword_memory
    mem.save(
        "Search: mix igniter.install adds a dependency to mix.exs; there is no igniter "
        "installer for credo yet, the latest version of the docs covers tasks and "
        "generators for projects",
        project="p",
    )
    read = mem.save(
        'Read mix.exs\n{:igniter, "~> 0.6", only: [:dev, :test]}\n{:phoenix, "~> 1.8"}',
        project="p",
        files=["mix.exs"],
    )
    mem.save("Edit remix.exs: igniter left out", project="p", files=["lib/remix.exs"])
    hits = mem.search(
        "What version requirement does mix.exs put on igniter?", project="p", mode="keyword"
    )
    assert hits[0].id == read.id, [(h.score, h.content[:30]) for h in hits]
    remix = next(h for h in hits if "remix" in h.content)
    assert remix.score < hits[1].score  # lib/remix.exs is not mix.exs
