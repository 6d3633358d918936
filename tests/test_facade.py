"""The Memory facade on a real SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane.errors import InvalidInput, NotFound
from memlane.service import Memory


def test_save_get_and_dedup(memory: Memory) -> None:
    first = memory.save("Use idempotency keys for payment retries", project="api", type="decision")
    assert first.status == "created"
    again = memory.save(
        "use  IDEMPOTENCY keys for payment retries ", project="api", type="decision"
    )
    assert again.status == "deduplicated"
    assert again.id == first.id
    other_project = memory.save("Use idempotency keys for payment retries", project="web")
    assert other_project.status == "created"
    stored = memory.get(first.id)
    assert stored.kind == "knowledge"
    assert stored.type == "decision"
    assert stored.project == "api"


def test_duplicate_extends_session_activity(memory: Memory) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    memory.session_start("s1", project="api", now=t0)
    memory.save("a fact worth keeping", project="api", session_id="s1")
    before = memory.get_session("s1").last_activity_at
    result = memory.save("a fact worth keeping", project="api", session_id="s1")
    assert result.status == "deduplicated"
    assert memory.get_session("s1").last_activity_at >= before


def test_topic_key_upsert_moves_to_current_session(memory: Memory) -> None:
    memory.session_start("old", project="api")
    memory.session_start("new", project="api")
    first = memory.save("DB is Postgres 14", project="api", topic_key="db", session_id="old")
    second = memory.save("DB is Postgres 16", project="api", topic_key="db", session_id="new")
    assert second.status == "updated"
    assert second.id == first.id
    stored = memory.get(first.id)
    assert stored.content == "DB is Postgres 16"
    assert stored.revision_count == 1
    assert stored.session_id == "new"


def test_source_id_reimport_is_idempotent(memory: Memory) -> None:
    a = memory.save("hello world", project="p", source="jsonl", source_id="x1")
    b = memory.save("hello world", project="p", source="jsonl", source_id="x1")
    assert (a.status, b.status) == ("created", "deduplicated")
    c = memory.save("hello world, edited", project="p", source="jsonl", source_id="x1")
    assert c.status == "updated"
    assert c.id == a.id


def test_observation_dedup_is_windowed(memory: Memory) -> None:
    t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
    kw = {"project": "p", "type": "command", "created_at": t0}
    assert memory.save("ran pytest", **kw).status == "created"
    assert (
        memory.save("ran pytest", **{**kw, "created_at": t0 + timedelta(minutes=1)}).status
        == "deduplicated"
    )
    assert (
        memory.save("ran pytest", **{**kw, "created_at": t0 + timedelta(hours=2)}).status
        == "created"
    )


def test_private_blocks_never_stored_and_hash_ignores_them(memory: Memory) -> None:
    first = memory.save("deploy notes <private>the vault pin is 9911</private> done", project="p")
    stored = memory.get(first.id)
    assert "9911" not in stored.content
    again = memory.save("deploy notes <private>another secret</private> done", project="p")
    assert again.status == "deduplicated"


def test_empty_after_privacy_is_rejected(memory: Memory) -> None:
    with pytest.raises(InvalidInput):
        memory.save("<private>only secret</private>", project="p")
    with pytest.raises(InvalidInput):
        memory.save("   ", project="p")


def test_huge_content_is_refused_not_cut(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="a memory holds at most 64,000"):
        memory.save("x " * 200_000, project="p")
    assert memory.memory_count() == 0


def test_update_and_delete(memory: Memory) -> None:
    saved = memory.save("first version", project="p", title="t")
    updated = memory.update(saved.id, content="second version")
    assert updated.content == "second version"
    assert updated.revision_count == 1
    assert [h.id for h in memory.search("second", project="p")] == [saved.id]
    assert memory.search("first", project="p") == []
    assert memory.delete(id=saved.id) == [saved.id]
    with pytest.raises(NotFound):
        memory.get(saved.id)
    with pytest.raises(NotFound):
        memory.update(saved.id, content="x")
    with pytest.raises(InvalidInput):
        memory.delete()


def test_delete_by_session_before_and_project(memory: Memory) -> None:
    old = datetime(2025, 1, 1, tzinfo=UTC)
    memory.save("old note", project="p", created_at=old)
    memory.save("session note", project="p", session_id="s9")
    memory.save("other project note", project="q")
    assert len(memory.delete(before=datetime(2025, 6, 1, tzinfo=UTC))) == 1
    assert len(memory.delete(session_id="s9")) == 1
    with pytest.raises(NotFound):
        memory.get_session("s9")
    assert len(memory.delete(project="q", dry_run=True)) == 1
    assert memory.stats().memories == 1
    assert len(memory.delete(project="q")) == 1
    assert memory.stats().memories == 0


def test_search_scopes_and_as_of(memory: Memory) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    own = memory.save("redis cache eviction policy", project="api", created_at=t0).id
    foreign = memory.save("redis cache warmup script", project="web", created_at=t0).id
    later = memory.save(
        "redis cache sharding", project="api", created_at=t0 + timedelta(days=30)
    ).id
    only_own = memory.search("redis cache", project="api", scope="project")
    assert {h.id for h in only_own} == {own, later}
    tiered = memory.search("redis cache", project="api", scope="tiered")
    tagged = {h.id: h.from_project for h in tiered}
    assert tagged[foreign] == "web"
    assert tagged[own] is None
    everything = memory.search("redis", scope="all")
    assert {h.id for h in everything} == {own, foreign, later}
    past = memory.search(
        "redis cache", project="api", scope="project", as_of=t0 + timedelta(days=1)
    )
    assert [h.id for h in past] == [own]


def test_search_hits_carry_contract_fields(memory: Memory) -> None:
    memory.save(
        "turn text about kafka", project="p", source="jsonl", source_id="t-1", session_id="s"
    )
    hit = memory.search("kafka", project="p")[0]
    assert (hit.source_id, hit.session_id, hit.project) == ("t-1", "s", "p")
    assert hit.score > 0
    assert hit.kind and hit.type and hit.created_at


def test_search_rejects_bad_input(memory: Memory) -> None:
    with pytest.raises(InvalidInput):
        memory.search("", project="p")
    with pytest.raises(InvalidInput):
        memory.search("x", project="p", mode="fuzzy")
    with pytest.raises(InvalidInput):
        memory.search("x", project="p", scope="galaxy")


@pytest.mark.parametrize(
    "query", ['"unbalanced', "AND OR NOT", "col:umn*", "NEAR(a b", "^-+*()", "a\x00b", "'; drop"]
)
def test_hostile_queries_never_raise(memory: Memory, query: str) -> None:
    """As plain text (recall) any query searches; with the syntax, bad syntax is one line."""
    memory.save("plain content AND more", project="p")
    memory.search(query, project="p", syntax=False)
    memory.recall(query, project="p")
    try:
        memory.search(query, project="p")
    except InvalidInput as exc:
        assert str(exc).startswith("search syntax: ") and "\n" not in str(exc)


def test_short_and_cjk_queries(memory: Memory) -> None:
    ja = memory.save("東京リージョンに移したらレイテンシが下がった", project="p").id
    zh = memory.save("我们使用数据库连接池来提高性能", project="p").id
    memory.save("go is a language", project="p")
    assert ja in {h.id for h in memory.search("東京", project="p")}
    assert ja in {h.id for h in memory.search("レイテンシ", project="p")}
    assert zh in {h.id for h in memory.search("数据库", project="p")}
    assert memory.search("go", project="p")
    assert ja in {h.id for h in memory.search("東", project="p")}


def test_sessions_idempotent_and_auto_close(memory: Memory) -> None:
    t0 = datetime(2026, 2, 1, tzinfo=UTC)
    s = memory.session_start("a", project="p", now=t0)
    s2 = memory.session_start("a", project="p", now=t0 + timedelta(minutes=1))
    assert s.started_at == s2.started_at
    assert len(memory.list_sessions(project="p")) == 1
    memory.save("edited main.py", project="p", session_id="a", type="file-write", created_at=t0)
    memory.session_start("b", project="p", now=t0 + timedelta(hours=10))
    closed = memory.get_session("a")
    assert closed.status == "auto_closed"
    assert closed.auto_closed
    summary = memory.get_summary("a")
    assert summary is not None
    assert summary.is_auto_generated is True
    ended = memory.session_end("b")
    assert ended.status == "ended"


def test_timeline_around_and_range(memory: Memory) -> None:
    t0 = datetime(2026, 4, 1, tzinfo=UTC)
    ids = [
        memory.save(f"event number {i}", project="p", created_at=t0 + timedelta(minutes=i)).id
        for i in range(10)
    ]
    around = memory.timeline(around=ids[5], before=2, after=2)
    assert [m.id for m in around] == ids[3:8]
    ranged = memory.timeline(
        project="p", start=t0 + timedelta(minutes=2), end=t0 + timedelta(minutes=4)
    )
    assert [m.id for m in ranged] == ids[2:4]
    with pytest.raises(InvalidInput):
        memory.timeline(project="p", start=t0, end=t0)


def test_stats_and_report(memory: Memory) -> None:
    memory.save("a decision", project="p", type="decision")
    memory.save("a note", project="q")
    stats = memory.stats()
    assert stats.memories == 2
    assert stats.projects == {"p": 1, "q": 1}
    assert stats.db_bytes > 0
    report = memory.report(project="p")
    assert report["memories"] == 1
    assert report["highlights"][0]["type"] == "decision"


def test_context_pack_respects_budget(memory: Memory) -> None:
    for i in range(40):
        memory.save(f"decision {i}: " + "detail " * 80, project="p", type="decision")
    text = memory.context(project="p", budget=300)
    assert text
    assert (len(text) + 3) // 4 <= 300
    assert memory.context(project="empty-project") == ""


def test_keyword_recall_needs_the_margin_above_the_floor(memory: Memory) -> None:
    from memlane.config import KEYWORD_RECALL_MARGIN

    memory.save("jittered exponential backoff for webhook retries", project="api", type="decision")
    memory.save("the dashboard uses a css grid layout", project="api", type="note")
    query = "how do webhook retries back off?"
    best = memory.search(query, project="api", mode="keyword", limit=1)[0].score
    just_below = round(best - KEYWORD_RECALL_MARGIN / 2, 4)
    assert [
        h.score for h in memory.search(query, project="api", mode="keyword", min_score=just_below)
    ]
    assert memory.recall(query, project="api", mode="keyword", min_score=just_below) == []
    below_margin = round(best - KEYWORD_RECALL_MARGIN - 0.01, 4)
    hits = memory.recall(query, project="api", mode="keyword", min_score=below_margin)
    assert [h.score for h in hits] == [best]


def test_the_python_api_takes_a_path_and_ids_no_memory_can_have(tmp_path: Path) -> None:
    """`memlane.open(pathlib.Path(...))` raised TypeError; `delete(ids=[2**70])` raised
    OverflowError where every command says there is no such memory."""
    import memlane

    memory = memlane.open(tmp_path / "api.db")
    try:
        kept = memory.save("the retry queue drains", project="p")
        assert memory.delete(ids=[2**70]) == []
        assert memory.delete(ids=[2**70, kept.id], dry_run=True) == [kept.id]
        assert memory.stats().memories == 1
    finally:
        memory.close()


def test_maintenance_calls_refuse_nan(memory: Memory) -> None:
    # NaN passed every range check and then failed converting: ValueError, not a refusal.
    with pytest.raises(InvalidInput, match="max_age_days"):
        memory.prune_old(max_age_days=float("nan"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="size cap"):
        memory.enforce_size_cap(max_mb=float("nan"))


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_project_name_is_refused_by_every_call(memory: Memory, name: str) -> None:
    """An empty name named no project: stats and delete matched a project named "" (or
    " "), save and search took the current directory's (probe s28 F10)."""
    memory.save("the retry queue drains", project="api")
    calls = [
        lambda: memory.save("a note", project=name),
        lambda: memory.search("retry", project=name),
        lambda: memory.search("retry", project=name, scope="all"),
        lambda: memory.stats(project=name),
        lambda: memory.delete(project=name, dry_run=True),
        lambda: memory.timeline(project=name, all_projects=True),
        lambda: memory.list_sessions(project=name),
    ]
    for call in calls:
        with pytest.raises(InvalidInput, match="the project name is empty"):
            call()
    assert memory.stats().memories == 1


def test_open_refuses_what_names_no_database(tmp_path: Path) -> None:
    """`open(5)`, `open(b"…")`, `open(settings="x")`, a NUL, a loop of links and a name too
    long raised TypeError, AttributeError, ValueError or OSError; `open(" ")` made a
    database file named " " (probe s28 F11)."""
    import os

    import memlane

    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    cases: list[tuple[Any, str]] = [
        (5, "must be a path .*not int 5"),
        (b"/tmp/x.db", "must be a path .*not bytes"),
        (" ", "the database path is blank"),
        (str(tmp_path / "a\0b.db"), "holds a NUL character"),
        (str(loop), "symbolic links"),
        (str(tmp_path / ("x" * 10_000)), "name too long"),
    ]
    for target, says in cases:
        with pytest.raises(InvalidInput, match=says):
            memlane.open(target)
    with pytest.raises(InvalidInput, match=r"settings must be memlane\.config\.Settings"):
        memlane.open(settings="x")  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loop"]


def test_the_python_api_refuses_arguments_of_the_wrong_type(memory: Memory, tmp_path: Path) -> None:
    """Each bad argument is InvalidInput naming it, never a TypeError, AttributeError or
    ValueError from deep inside (probe s28 F11), and nothing is stored."""
    kept = memory.save("the retry queue drains every five seconds", project="api")
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: memory.search("retry", since="9999-99-99"), "since must be a datetime, not str"),
        (lambda: memory.search("retry", as_of="2026-01-31"), "as_of must be a datetime"),
        (lambda: memory.search("retry", since=datetime(1969, 1, 1)), "since .* out of range"),
        (lambda: memory.delete(before=""), "before must be a datetime"),
        (lambda: memory.timeline(start="2026-01-01"), "start must be a datetime"),
        (lambda: memory.timeline(end=-1), "end must be a datetime, not int"),
        (lambda: memory.search("retry", types=[""]), "the type is empty"),
        (lambda: memory.search("retry", limit="5"), "limit must be a whole number, not str"),
        (lambda: memory.search("retry", limit=float("nan")), "limit must be a whole number"),
        (lambda: memory.search("retry", limit=10**30), "limit must be from 1 to 500"),
        (lambda: memory.search("retry", limit=True), "limit must be a whole number, not bool"),
        (lambda: memory.search("retry", min_score=float("nan")), "min_score must be a finite"),
        (lambda: memory.search("retry", min_score="0.5"), "min_score must be a number"),
        (lambda: memory.timeline(limit=0), "limit must be from 1 to 1,000"),
        (lambda: memory.get("1"), "a memory id is a whole number, not str '1'"),
        (lambda: memory.get(None), "a memory id is a whole number, not NoneType"),
        (lambda: memory.delete(ids=["1"]), "a memory id is a whole number"),
        (lambda: memory.save("a note", project=123), "the project name must be text, not int"),
        (lambda: memory.save("a note", tags=[None]), "tags must be strings; one is NoneType"),
        (lambda: memory.save("a note", files=[1]), "files must be strings; one is int"),
        (lambda: memory.save("a note", tags="abc"), r"tags must be a list .*\(tags=\['abc'\]"),
        (lambda: memory.save("a note", created_at="2026-01-01"), "created_at must be a datetime"),
        (lambda: memory.import_jsonl(None), "the JSONL file must be a path"),
        (lambda: memory.backup(str(tmp_path / "a\0b.db")), "holds a NUL character"),
    ]
    for call, says in cases:
        with pytest.raises(InvalidInput, match=says):
            call()
    assert memory.memory_count() == 1
    # What is right still works: a naive datetime is UTC, a Path names a file.
    found = memory.search("retry", since=datetime(2000, 1, 1), limit=500, min_score=0)
    assert [hit.id for hit in found] == [kept.id]
    assert memory.get(kept.id).tags == ()
    assert memory.delete(ids=(i for i in [kept.id]), dry_run=True) == [kept.id]
