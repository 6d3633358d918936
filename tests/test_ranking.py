"""Ranking properties: recency, staleness, scope tiers, relaxation, budgets, score types."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memlane.config import Settings
from memlane.filestate import FILE_STATE_KEY, file_state
from memlane.models import TRANSCRIPT_SOURCE, MemoryFilter
from memlane.search.engine import SearchEngine, SearchRequest, context_order
from memlane.search.scoring import ContextScore, SearchScore
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.store.query import FtsQuery
from memlane.text import estimate_tokens

NOW = datetime.now(UTC)


@pytest.fixture
def mem(settings: Settings, tmp_path: Path) -> Memory:
    return open_memory(str(tmp_path / "rank.db"), settings=replace(settings, embedder="none"))


def search_ids(mem: Memory, query: str, **kwargs: object) -> list[int]:
    return [hit.id for hit in mem.search(query, **kwargs)]  # type: ignore[arg-type]


def test_same_text_newer_ranks_first(mem: Memory) -> None:
    ids = [
        mem.save(f"deploy script notes {n}", project="p", created_at=NOW - timedelta(days=d)).id
        for n, d in ((1, 90), (2, 1), (3, 30))
    ]
    assert search_ids(mem, "deploy script notes", project="p", scope="project") == [
        ids[1],
        ids[2],
        ids[0],
    ]


def test_recency_decides_among_equals_without_burying_the_only_answer(mem: Memory) -> None:
    january = datetime(2025, 1, 10, tzinfo=UTC)
    june = datetime(2025, 6, 10, tzinfo=UTC)
    # Texts of about one length: keyword evidence counts a mention in a longer text for less (BM25).
    old = mem.save(
        "The staging database password rotation runs weekly, on Sunday nights from cron",
        project="p",
        created_at=january,
    ).id
    new = mem.save(
        "The staging database password rotation now runs daily, at 02:00 from cron",
        project="p",
        created_at=june,
    ).id
    others = [
        mem.save(text, project="p", created_at=june).id
        for text in ("staging database migrated to the new cluster", "database backups at 03:00")
    ]
    query = "staging database password rotation"
    for as_of in (datetime(2025, 7, 1, tzinfo=UTC), None):  # months old, or a year old
        hits = search_ids(mem, query, project="p", scope="project", as_of=as_of)
        assert hits[:2] == [new, old], as_of
    hits = search_ids(mem, "how often does the password rotation run", project="p")
    assert hits[0] in (old, new) and set(hits[2:]) <= set(others)
    only = search_ids(mem, "weekly rotation", project="p", scope="project")
    assert only[0] == old


def test_a_longer_half_life_narrows_the_recency_gap(mem: Memory) -> None:
    old = mem.save("cache tuning", project="p", created_at=NOW - timedelta(days=60)).id
    new = mem.save("cache tuning notes", project="p", created_at=NOW).id
    short = {h.id: h.score for h in mem.search("cache tuning", project="p", scope="project")}
    mem.settings = replace(mem.settings, recency_half_life_days=3650.0)
    long = {h.id: h.score for h in mem.search("cache tuning", project="p", scope="project")}
    assert short[new] - short[old] > long[new] - long[old]


def test_stale_flag_demotes(mem: Memory) -> None:
    a = mem.save("migration guide for the orders table", project="p").id
    b = mem.save("migration guide for the orders table, updated", project="p").id
    before = search_ids(mem, "migration guide orders", project="p", scope="project")
    top = before[0]
    mem.store.update_memory(top, {"stale": True})
    after = mem.search("migration guide orders", project="p", scope="project")
    assert after[0].id == (b if top == a else a)
    assert next(h for h in after if h.id == top).stale


def test_changed_linked_file_demotes(mem: Memory, tmp_path: Path) -> None:
    linked = tmp_path / "handler.py"
    linked.write_text("v1")
    captured = NOW - timedelta(hours=1)
    changed = mem.save(
        "retry logic lives in the handler", project="p", files=[str(linked)], created_at=captured
    ).id
    other = mem.save("retry logic lives in the handler module", project="p", created_at=captured)
    os.utime(linked, (time.time(), time.time()))  # modified after capture
    hits = mem.search("retry logic handler", project="p", scope="project")
    assert [h.id for h in hits] == [other.id, changed]
    assert hits[1].stale and not hits[0].stale
    # Ranking "as of" the capture time ignores today's file change.
    then = mem.search("retry logic handler", project="p", scope="project", as_of=NOW)
    assert not any(h.stale for h in then)


def test_search_and_maintenance_judge_linked_files_alike(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("v1")
    metadata = {"cwd": str(tmp_path), FILE_STATE_KEY: file_state(["app.py"], str(tmp_path))}
    changed = mem.save(
        "the handler retries twice", project="p", files=["app.py"], metadata=metadata
    ).id
    assert not mem.search("handler retries", project="p", scope="project")[0].stale
    original = path.stat()
    path.write_text("v2, longer")
    os.utime(path, (original.st_atime, original.st_mtime))  # same mtime, other size
    hit = mem.search("handler retries", project="p", scope="project")[0]
    assert hit.id == changed and hit.stale
    assert mem.refresh_staleness(project="p").marked == (changed,)


def test_tiered_scope_penalizes_and_tags_other_projects(mem: Memory) -> None:
    own = mem.save("flaky test in the payment service", project="api").id
    other = mem.save("flaky test in the payment service", project="web").id
    hits = mem.search("flaky payment test", project="api", scope="tiered")
    assert [h.id for h in hits] == [own, other]
    assert hits[0].from_project is None and hits[1].from_project == "web"
    penalty = mem.settings.cross_project_penalty
    # Same text: the other project's hit keeps about `penalty` of the score (its fused
    # rank is second, so slightly less).
    assert hits[1].score <= hits[0].score * penalty
    assert hits[1].score == pytest.approx(hits[0].score * penalty, rel=0.05)
    only = mem.search("flaky payment test", project="api", scope="project")
    assert [h.id for h in only] == [own]
    everywhere = mem.search("flaky payment test", project="api", scope="all")
    assert {h.id for h in everywhere} == {own, other}
    assert all(h.from_project is None for h in everywhere)


def test_tiered_scope_uses_one_candidate_query(mem: Memory) -> None:
    calls: list[MemoryFilter] = []
    original = mem.store.fts_candidates

    def spy(
        query: FtsQuery, flt: MemoryFilter, limit: int, *, scan: int | None = None
    ) -> list[tuple[int, float]]:
        calls.append(flt)
        return original(query, flt, limit, scan=scan)

    mem.store.fts_candidates = spy  # type: ignore[method-assign]
    mem.save("shared word", project="a")
    mem.save("shared word too", project="b")
    mem.search("shared word", project="a", scope="tiered")
    assert len(calls) == 1 and calls[0].projects is None


def test_relaxation_only_while_min_score_is_zero(mem: Memory) -> None:
    weak = mem.save("a note that mentions kubernetes once among many other words", project="p")
    query = "kubernetes ingress controller certificate renewal"
    relaxed = mem.search(query, project="p", scope="project")
    assert [h.id for h in relaxed] == [weak.id]
    score = relaxed[0].score
    assert score < 0.5  # one of five content words: weak evidence, an absolute low score
    strict = mem.search(query, project="p", scope="project", min_score=score + 0.01)
    assert strict == []
    assert mem.search(query, project="p", scope="project", min_score=score - 0.01)


def test_relaxation_admits_other_projects_with_the_penalty_kept(mem: Memory) -> None:
    foreign = mem.save("rotate the signing keys every quarter", project="ops").id
    hits = mem.search("rotate signing keys", project="api", scope="tiered")
    assert [h.id for h in hits] == [foreign] and hits[0].from_project == "ops"
    strict = mem.search("rotate signing keys", project="api", scope="tiered", min_score=0.9)
    assert strict == []


def test_scores_are_absolute(mem: Memory) -> None:
    mem.save("postgres vacuum settings for large tables", project="p")
    strong = mem.search("postgres vacuum settings", project="p", scope="project")[0].score
    weak_hits = mem.search("mysql vacuum replication lag", project="p", scope="project")
    assert weak_hits and weak_hits[0].score < strong
    assert strong > 0.6 and weak_hits[0].score < 0.45


def test_recall_floor_drops_weak_hits(mem: Memory) -> None:
    mem.save("postgres vacuum settings for large tables", project="p")
    assert mem.recall("postgres vacuum settings", project="p", mode="keyword", min_score=0.5)
    assert not mem.recall("tell me about vacuum cleaners", project="p", min_score=0.5)


def test_adjacent_chunks_are_grouped(mem: Memory) -> None:
    at = NOW - timedelta(days=1)
    ids = [
        mem.save(
            f"session chunk {i}: websocket reconnect backoff",
            project="p",
            session_id="s1",
            type="turn",
            source=TRANSCRIPT_SOURCE,
            source_id=f"s1:{i}",
            created_at=at + timedelta(seconds=i),
            metadata={"chunk_index": i, "role": "assistant"},
        ).id
        for i in range(3)
    ]
    lone = mem.save(
        "websocket reconnect backoff in another session", project="p", session_id="s2"
    ).id
    hits = mem.search("websocket reconnect backoff", project="p", scope="project")
    assert len(hits) == 2
    assert {h.id for h in hits} & set(ids) and lone in {h.id for h in hits}
    grouped = next(h for h in hits if h.id != lone)
    assert grouped.members == tuple(ids)
    assert grouped.source_ids == ("s1:0", "s1:1", "s1:2")


def test_search_and_context_scores_are_different_types() -> None:
    with pytest.raises(TypeError):
        _ = SearchScore(0.5) < ContextScore(0.5)  # type: ignore[operator]


def test_context_order_prefers_recent_and_used(mem: Memory) -> None:
    old = mem.save(
        "old decision", project="p", type="decision", created_at=NOW - timedelta(days=200)
    )
    new = mem.save("new decision", project="p", type="decision", created_at=NOW)
    used = mem.save(
        "used decision", project="p", type="decision", created_at=NOW - timedelta(days=200)
    )
    for _ in range(30):
        mem.store.record_access([used.id], NOW)
    ordered = context_order(mem.get_many([old.id, new.id, used.id]))
    assert [m.id for m in ordered] == [new.id, used.id, old.id]


@hsettings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    texts=st.lists(st.text(min_size=1, max_size=3000).filter(str.strip), min_size=1, max_size=12),
    budget=st.integers(min_value=100, max_value=3000),
)
def test_context_never_exceeds_the_budget(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory, texts: list[str], budget: int
) -> None:
    path = tmp_path_factory.mktemp("budget") / "b.db"
    mem = open_memory(str(path), settings=replace(settings, embedder="none"))
    try:
        for i, text in enumerate(texts):
            kind = ("decision", "note", "command")[i % 3]
            try:
                mem.save(text, project="p", type=kind)
            except Exception:
                continue
        packed = mem.context(project="p", budget=budget)
        assert estimate_tokens(packed) <= budget
    finally:
        mem.close()


def test_engine_request_defaults_are_keyword_and_every_project(mem: Memory) -> None:
    a = mem.save("shared term alpha", project="a").id
    b = mem.save("shared term alpha", project="b").id
    engine = SearchEngine(mem.store, embedder="none")
    hits = engine.search(SearchRequest(query="alpha"))
    assert {h.id for h in hits} == {a, b}


def test_a_question_and_its_answer_are_not_grouped(mem: Memory) -> None:
    ids = [
        mem.save(
            text,
            project="p",
            session_id="s1",
            type="turn",
            source=TRANSCRIPT_SOURCE,
            metadata={"chunk_index": i, "role": role},
        ).id
        for i, (role, text) in enumerate(
            [
                ("user", "how do I pin the websocket backoff"),
                ("assistant", "websocket backoff: pin"),
            ]
        )
    ]
    hits = mem.search("websocket backoff", project="p", scope="project")
    assert {h.id for h in hits} == set(ids)
