"""The facade's scenarios on both backends (``any_memory``: SQLite, then PostgreSQL).

Each scenario goes through ``Memory`` only, so a PostgreSQL store that differs
from the SQLite one in any rule the facade relies on (dedup lookups, upserts,
filters, time order, FTS, sessions) fails here. The last test runs the same
queries on both stores side by side and wants the same hits.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.errors import InvalidInput, NotFound
from memlane.service import Memory
from memlane.service import open as open_memory

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def test_save_dedup_and_project_isolation(any_memory: Memory) -> None:
    first = any_memory.save("Use idempotency keys for retries", project="api", type="decision")
    again = any_memory.save("use  IDEMPOTENCY keys for retries ", project="api", type="decision")
    assert (first.status, again.status, again.id) == ("created", "deduplicated", first.id)
    other = any_memory.save("Use idempotency keys for retries", project="web")
    assert other.status == "created" and other.id != first.id
    stored = any_memory.get(first.id)
    assert (stored.kind, stored.type, stored.project) == ("knowledge", "decision", "api")


def test_observation_dedup_window(any_memory: Memory) -> None:
    kw = {"project": "p", "type": "command"}
    assert any_memory.save("ran pytest", created_at=T0, **kw).status == "created"
    later = T0 + timedelta(minutes=1)
    assert any_memory.save("ran pytest", created_at=later, **kw).status == "deduplicated"
    much_later = T0 + timedelta(hours=2)
    assert any_memory.save("ran pytest", created_at=much_later, **kw).status == "created"


def test_topic_upsert_moves_to_current_session(any_memory: Memory) -> None:
    any_memory.session_start("old", project="api")
    any_memory.session_start("new", project="api")
    first = any_memory.save("DB is Postgres 14", project="api", topic_key="db", session_id="old")
    second = any_memory.save("DB is Postgres 16", project="api", topic_key="db", session_id="new")
    assert (second.status, second.id) == ("updated", first.id)
    stored = any_memory.get(first.id)
    assert (stored.content, stored.revision_count, stored.session_id) == (
        "DB is Postgres 16",
        1,
        "new",
    )
    assert [h.id for h in any_memory.search("postgres 16", project="api")] == [first.id]
    assert any_memory.search("14", project="api") == []


def test_source_id_reimport(any_memory: Memory) -> None:
    a = any_memory.save("hello world", project="p", source="jsonl", source_id="x1")
    b = any_memory.save("hello world", project="p", source="jsonl", source_id="x1")
    c = any_memory.save("hello world, edited", project="p", source="jsonl", source_id="x1")
    assert (a.status, b.status, c.status) == ("created", "deduplicated", "updated")
    assert a.id == b.id == c.id


def test_search_scopes_as_of_cjk_and_short(any_memory: Memory) -> None:
    own = any_memory.save("redis cache eviction policy", project="api", created_at=T0).id
    foreign = any_memory.save("redis cache warmup script", project="web", created_at=T0).id
    later = any_memory.save(
        "redis cache sharding", project="api", created_at=T0 + timedelta(days=30)
    ).id
    assert {h.id for h in any_memory.search("redis cache", project="api", scope="project")} == {
        own,
        later,
    }
    tiered = {
        h.id: h.from_project for h in any_memory.search("redis", project="api", scope="tiered")
    }
    assert tiered == {own: None, later: None, foreign: "web"}
    assert {h.id for h in any_memory.search("redis", scope="all")} == {own, foreign, later}
    past = any_memory.search(
        "redis cache", project="api", scope="project", as_of=T0 + timedelta(days=1)
    )
    assert [h.id for h in past] == [own]
    assert [h.id for h in any_memory.search("evict", project="api", scope="project")] == [own]

    ja = any_memory.save("東京リージョンに移したらレイテンシが下がった", project="api").id
    zh = any_memory.save("我们使用数据库连接池来提高性能", project="api").id
    assert ja in {h.id for h in any_memory.search("東京", project="api")}
    assert ja in {h.id for h in any_memory.search("レイテンシ", project="api")}
    assert zh in {h.id for h in any_memory.search("数据库", project="api")}
    assert ja in {h.id for h in any_memory.search("東", project="api")}  # LIKE fallback
    go = any_memory.save("go is a language", project="api").id
    assert go in {h.id for h in any_memory.search("go", project="api")}


@pytest.mark.parametrize("query", ['"unbalanced', "AND OR NOT", "col:umn*", "a\x00b", "'; drop"])
def test_hostile_searches(any_memory: Memory, query: str) -> None:
    any_memory.save("plain content AND more", project="p")
    assert isinstance(any_memory.search(query, project="p", syntax=False), list)
    try:
        assert isinstance(any_memory.search(query, project="p"), list)
    except InvalidInput as exc:  # bad search syntax: one line, never the store's parser error
        assert str(exc).startswith("search syntax: ") and "\n" not in str(exc)


def test_timeline_update_delete(any_memory: Memory) -> None:
    ids = [
        any_memory.save(f"event number {i}", project="p", created_at=T0 + timedelta(minutes=i)).id
        for i in range(10)
    ]
    assert [m.id for m in any_memory.timeline(around=ids[5], before=2, after=2)] == ids[3:8]
    ranged = any_memory.timeline(
        project="p", start=T0 + timedelta(minutes=2), end=T0 + timedelta(minutes=4)
    )
    assert [m.id for m in ranged] == ids[2:4]
    updated = any_memory.update(ids[0], content="rewritten entry")
    assert updated.revision_count == 1
    assert [h.id for h in any_memory.search("rewritten", project="p")] == [ids[0]]
    assert any_memory.delete(id=ids[0]) == [ids[0]]
    with pytest.raises(NotFound):
        any_memory.get(ids[0])
    assert len(any_memory.delete(before=T0 + timedelta(minutes=3))) == 2
    assert any_memory.stats().memories == 7


def test_sessions_and_auto_close(any_memory: Memory) -> None:
    s = any_memory.session_start("a", project="p", now=T0)
    s2 = any_memory.session_start("a", project="p", now=T0 + timedelta(minutes=1))
    assert s.started_at == s2.started_at
    any_memory.save("edited main.py", project="p", session_id="a", type="file-write", created_at=T0)
    any_memory.session_start("b", project="p", now=T0 + timedelta(hours=10))
    closed = any_memory.get_session("a")
    assert closed.status == "auto_closed"
    summary = any_memory.get_summary("a")
    assert summary is not None and summary.is_auto_generated is True
    assert any_memory.session_end("b").status == "ended"
    assert [x.id for x in any_memory.list_sessions(project="p")] == ["b", "a"]
    assert len(any_memory.delete(session_id="a")) >= 1
    with pytest.raises(NotFound):
        any_memory.get_session("a")


def test_get_with_record_access_returns_the_counted_record(any_memory: Memory) -> None:
    saved = any_memory.save("retry with idempotency keys", project="api", type="decision")
    assert any_memory.get(saved.id).access_count == 0
    first = any_memory.get(saved.id, record_access=True)
    assert first.access_count == 1 and first.last_accessed_at is not None
    assert any_memory.get(saved.id, record_access=True).access_count == 2
    with pytest.raises(NotFound):
        any_memory.get(10**9, record_access=True)


def test_stats_of_one_project(any_memory: Memory) -> None:
    any_memory.session_start("s-api", project="api")
    any_memory.save("retry with idempotency keys", project="api", type="decision")
    any_memory.save("ran pytest", project="api", type="command", session_id="s-api")
    any_memory.save("css grid for the dashboard", project="web", type="note")
    whole, api = any_memory.stats(), any_memory.stats(project="api")
    assert (whole.memories, api.memories) == (3, 2)
    assert api.projects == {"api": 2} and set(whole.projects) == {"api", "web"}
    assert api.kinds == {"knowledge": 1, "observation": 1} and api.sessions == 1
    nobody = any_memory.stats(project="nobody")
    assert (nobody.memories, nobody.sessions, nobody.oldest) == (0, 0, None)


def test_import_jsonl_is_idempotent(any_memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    records = [
        {"id": "r1", "text": "we chose PostgreSQL for the team store", "type": "decision"},
        {
            "id": "r2",
            "content": "東京の会議メモ",
            "session": "s1",
            "timestamp": "2026-01-02T03:04:05Z",
        },
        {"text": "   "},
        "not an object",
    ]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n{bad\n")
    report = any_memory.import_jsonl(str(path), project="team")
    assert report.created == 2
    assert len(report.errors) >= 2
    again = any_memory.import_jsonl(str(path), project="team")
    assert again.created == 0 and again.skipped + again.updated == 2
    assert {h.source_id for h in any_memory.search("postgresql", project="team")} == {"r1"}
    assert {h.source_id for h in any_memory.search("会議", project="team")} == {"r2"}


@pytest.mark.postgres
def test_same_hits_on_both_backends(settings: Settings, pg_dsn: str) -> None:
    corpus = [
        ("api", "Retry payments with idempotency keys", "decision"),
        ("api", "The payment webhook times out after 30 s", "bugfix"),
        ("api", "Use connection pooling for PostgreSQL (pgbouncer)", "decision"),
        ("web", "Hydration mismatch fixed by moving Date.now() to an effect", "bugfix"),
        ("web", "東京リージョンのCDNキャッシュを有効にした", "feature"),
        ("api", "idempotent retries also for refunds", "lesson"),
        ("web", "Der Übergang zur neuen Datenbank ist abgeschlossen", "note"),
    ]
    queries = [
        "payment",
        "idempotency",
        "retries",
        "postgresql pooling",
        "date",
        "東京",
        "CDN",
        "uber",
        "übergang",
        "pay",
        "refunds retries",
        "webhook 30",
        "キャッシュ",
    ]
    results: list[dict[str, list[int]]] = []
    for target in (None, pg_dsn):
        mem = open_memory(target, settings=settings)
        try:
            for i, (project, text, type_) in enumerate(corpus):
                mem.save(text, project=project, type=type_, created_at=T0 + timedelta(hours=i))
            results.append(
                {q: sorted(h.id for h in mem.search(q, scope="all", limit=20)) for q in queries}
            )
        finally:
            mem.close()
    assert results[0] == results[1]
    assert all(results[0][q] for q in queries if q != "uber")


@pytest.mark.postgres
def test_cli_end_to_end_on_postgres(home: Path, pg_dsn: str, tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import MEMLANE_CMD, run_env

    def memlane(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [*MEMLANE_CMD, "--db", pg_dsn, *args],
            env=run_env(home),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    saved = json.loads(
        memlane("save", "pgvector HNSW serves the team", "--project", "team", "--json")
    )
    assert saved["status"] == "created"
    memlane("save", "-", "--project", "team", stdin="東京チームのメモ: デプロイは金曜日")
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps({"id": "j1", "text": "imported through the CLI into postgres"}) + "\n"
    )
    assert "1 new" in memlane("import", "jsonl", str(path), "--project", "team")
    for query, expected in (("pgvector", saved["id"]), ("デプロイ", None), ("imported", None)):
        hits = json.loads(memlane("search", query, "--project", "team", "--json"))
        assert len(hits) == 1, query
        if expected is not None:
            assert hits[0]["id"] == expected
    assert "team" in memlane("stats")
