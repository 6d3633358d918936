"""The Store contract: what every backend must do, the same way.

``StoreContract`` is collected through ``tests/test_store_contract.py``, which
gives it two fixtures on each backend (SQLite file, PostgreSQL schema):

* ``store`` — a fresh, empty store;
* ``reopen`` — a callable opening a second store on the same database.

Scores are compared only by order (BM25 and ts_rank_cd differ in scale).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memlane.errors import InvalidInput
from memlane.models import MemoryFilter, NewMemory, Session
from memlane.search.fts import build_query, unit_query
from memlane.search.syntax import parse as parse_syntax
from memlane.store.base import Store
from memlane.store.query import OPERATORS, AnyOf, FtsQuery, Grams, Phrase, Term
from memlane.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from memlane.store.query import Operator

T0 = datetime(2026, 1, 5, 9, 30, 15, 250_000, tzinfo=UTC)

HOSTILE = [
    '"',
    '""',
    "'",
    "a\"b'c",
    "NOT",
    "AND OR NOT",
    "foo AND",
    "(unclosed",
    "col:umn",
    "title: x",
    "*",
    "a*b*",
    "NEAR(a b)",
    "^start",
    "-minus +plus",
    "{a b}: c",
    "\\",
    "%_%",
    "x\x00y",
    "😀 emoji",
    "'; DROP TABLE memories; --",
    "東",
    "a" * 3000,
    "ﬁ ligature",
    "___",
]


def new(
    content: str,
    *,
    project: str = "p",
    title: str = "",
    kind: str = "note",
    type_: str = "note",
    created_at: datetime = T0,
    **extra: Any,
) -> NewMemory:
    return NewMemory(
        project=project,
        kind=kind,
        type=type_,
        content=content,
        normalized_hash=extra.pop("normalized_hash", content),
        created_at=created_at,
        title=title,
        **extra,
    )


def vec(*values: float) -> bytes:
    return array("f", values).tobytes()


def fts(
    store: Store, query: str, flt: MemoryFilter | None = None, op: Operator = "any"
) -> list[int]:
    built = build_query(query, operator=op)
    assert built is not None, query
    return [mid for mid, _ in store.fts_candidates(built, flt or MemoryFilter(), 50)]


def matched(store: Store, query: FtsQuery) -> set[int]:
    return {mid for mid, _ in store.fts_candidates(query, MemoryFilter(), 50)}


def session(sid: str, project: str = "p", at: datetime = T0, **extra: Any) -> Session:
    return Session(
        id=sid, project=project, status="active", started_at=at, last_activity_at=at, **extra
    )


def close_to(a: datetime | None, b: datetime) -> bool:
    return a is not None and abs((a - b).total_seconds()) < 1e-3


class StoreContract:
    """Run by every backend; see the module docstring."""

    # -- memories -------------------------------------------------------------

    def test_insert_then_get_round_trips_every_field(self, store: Store) -> None:
        mid = store.insert_memory(
            new(
                "content with ünïcode and 日本語",
                title="A title",
                kind="knowledge",
                type_="decision",
                session_id="s1",
                files=("src/a.py", "docs/b.md"),
                tags=("db", "perf"),
                topic_key="db-choice",
                source="jsonl",
                source_id="x-1",
                metadata={"nested": {"list": [1, "two"], "flag": True}, "é": "ü"},
            )
        )
        (got,) = store.get_memories([mid])
        assert got.id == mid
        assert (got.project, got.kind, got.type) == ("p", "knowledge", "decision")
        assert got.title == "A title"
        assert got.content == "content with ünïcode and 日本語"
        assert got.session_id == "s1"
        assert got.files == ("src/a.py", "docs/b.md")
        assert got.tags == ("db", "perf")
        assert (got.topic_key, got.source, got.source_id) == ("db-choice", "jsonl", "x-1")
        assert got.metadata == {"nested": {"list": [1, "two"], "flag": True}, "é": "ü"}
        assert got.normalized_hash == "content with ünïcode and 日本語"
        assert (got.revision_count, got.access_count, got.stale) == (0, 0, False)
        assert got.last_accessed_at is None
        assert close_to(got.created_at, T0)
        assert got.created_at.utcoffset() == timedelta(0)
        assert got.updated_at >= got.created_at

    def test_a_filter_with_a_lone_surrogate_is_bound_and_finds_nothing(self, store: Store) -> None:
        # UTF-8 has no form for it; the driver refused the statement (a traceback).
        store.insert_memory(new("kept", session_id="s1"))
        assert store.list_memories(MemoryFilter(session_id="s1\udcff")) == []
        assert store.list_memories(MemoryFilter(projects=("p\ud83d",))) == []
        assert store.get_session("s1\udcff") is None

    def test_ids_grow_and_get_keeps_the_order_asked(self, store: Store) -> None:
        ids = [store.insert_memory(new(f"m{i}")) for i in range(3)]
        assert ids == sorted(ids) and len(set(ids)) == 3
        got = store.get_memories([ids[2], 999_999, ids[0]])
        assert [m.id for m in got] == [ids[2], ids[0]]
        assert store.get_memories([]) == []

    def test_insert_memories_stores_what_insert_memory_stores(self, store: Store) -> None:
        def rows(project: str) -> list[NewMemory]:
            return [
                new(
                    f"row {i} retry queue 日本語" if i % 3 == 0 else f"row {i} retry queue",
                    project=project,
                    title=f"title {i}",
                    session_id=f"s{i % 2}",
                    files=(f"src/f{i}.py",) if i % 2 else (),
                    tags=("t",) if i % 4 == 0 else (),
                    source="transcript",
                    source_id=f"{project}:{i}",
                    metadata={"chunk_index": i, "role": "user", "x": [1.5, None, "é"]},
                    created_at=T0 + timedelta(seconds=i, microseconds=317 * i),
                )
                for i in range(40)
            ]

        one = [store.insert_memory(row) for row in rows("one")]
        many = store.insert_memories(rows("many"))
        with store.transaction():
            job = store.insert_batch(rows("beside"), beside=True)
            count = store.count_memories(MemoryFilter(projects=("beside",)))  # waits for it
        beside = job.result()
        assert count == 40
        assert many == sorted(many) and beside == sorted(beside) and min(many) > max(one)
        assert store.insert_memories([]) == []

        def stored(ids: list[int]) -> list[tuple[Any, ...]]:
            fields = ("title", "content", "session_id", "files", "tags", "metadata")
            fields += ("created_at", "kind", "type", "normalized_hash")
            return [
                (*(getattr(m, f) for f in fields), (m.source_id or "").split(":")[1])
                for m in store.get_memories(ids)
            ]

        assert stored(many) == stored(one) == stored(beside)
        for project in ("one", "many", "beside"):
            flt = MemoryFilter(projects=(project,))
            assert len(fts(store, "retry", flt)) == 40
            assert len(fts(store, "日本", flt)) == 14

    def test_future_created_at_keeps_updated_at_not_older(self, store: Store) -> None:
        future = datetime(2100, 1, 1, tzinfo=UTC)
        (got,) = store.get_memories([store.insert_memory(new("later", created_at=future))])
        assert got.updated_at >= future - timedelta(milliseconds=1)

    def test_update_memory_changes_fields(self, store: Store) -> None:
        mid = store.insert_memory(new("before", title="t"))
        later = T0 + timedelta(hours=1)
        store.update_memory(
            mid,
            {
                "content": "after",
                "title": "t2",
                "files": ("x.py",),
                "tags": ("k",),
                "metadata": {"a": 1},
                "stale": True,
                "revision_count": 2,
                "updated_at": later,
                "session_id": "s9",
                "project": "q",
            },
        )
        (got,) = store.get_memories([mid])
        assert (got.content, got.title, got.files, got.tags) == ("after", "t2", ("x.py",), ("k",))
        assert got.metadata == {"a": 1}
        assert got.stale is True
        assert got.revision_count == 2
        assert close_to(got.updated_at, later)
        assert (got.session_id, got.project) == ("s9", "q")

    def test_update_rejects_unknown_fields_and_ignores_missing_rows(self, store: Store) -> None:
        mid = store.insert_memory(new("x"))
        with pytest.raises(ValueError):
            store.update_memory(mid, {"id": 5})
        with pytest.raises(ValueError):
            store.update_memory(mid, {"search": "x"})
        store.update_memory(mid, {})
        store.update_memory(123_456, {"content": "nobody"})
        assert store.count_memories(MemoryFilter()) == 1

    def test_delete_memories(self, store: Store) -> None:
        ids = [store.insert_memory(new(f"d{i}")) for i in range(4)]
        assert store.delete_memories([ids[0], ids[2], 999_999]) == 2
        assert store.memory_ids(MemoryFilter()) == [ids[1], ids[3]]
        assert store.delete_memories([]) == 0

    def test_find_memory_by_each_key(self, store: Store) -> None:
        a = store.insert_memory(new("one", normalized_hash="h1", kind="knowledge"))
        b = store.insert_memory(
            new("two", normalized_hash="h1", created_at=T0 + timedelta(minutes=1))
        )
        c = store.insert_memory(new("three", topic_key="tk", source="jsonl", source_id="s-1"))
        store.insert_memory(new("other", project="q", normalized_hash="h1"))

        def found(**keys: Any) -> int | None:
            memory = store.find_memory("p", **keys)
            return None if memory is None else memory.id

        assert found(normalized_hash="h1") == b  # the newest wins
        assert found(normalized_hash="h1", kinds=("knowledge",)) == a
        assert found(normalized_hash="h1", kinds=("summary",)) is None
        assert found(normalized_hash="h1", created_after=T0 + timedelta(seconds=30)) == b
        assert found(normalized_hash="h1", created_after=T0 + timedelta(hours=1)) is None
        assert found(topic_key="tk") == c
        assert found(source="jsonl", source_id="s-1") == c
        assert found(source="other", source_id="s-1") is None
        assert found(normalized_hash="nope") is None
        assert store.find_memory("zzz", normalized_hash="h1") is None

    def test_list_by_several_types_is_one_time_order(self, store: Store) -> None:
        types = ("bugfix", "decision", "command")
        ids, times = [], {}
        for i in range(12):  # the types interleave in time, two memories share a moment
            at = T0 + timedelta(minutes=i - (i == 7))
            mid = store.insert_memory(
                new(f"m{i}", kind="observation", type_=types[i % 3], created_at=at)
            )
            ids.append(mid)
            times[mid] = at
        store.insert_memory(new("other kind", kind="knowledge", type_="bugfix"))
        store.insert_memory(new("other project", project="q", kind="observation"))
        flt = MemoryFilter(projects=("p",), kinds=("observation",), types=("bugfix", "decision"))
        chosen = [mid for i, mid in enumerate(ids) if i % 3 != 2]
        by_time = sorted(chosen, key=lambda mid: (times[mid], mid))
        newest = by_time[::-1]

        def listed(**kw: Any) -> list[int]:
            return [m.id for m in store.list_memories(flt, **kw)]

        assert listed() == newest
        assert listed(limit=3) == newest[:3]
        assert listed(limit=3, offset=2) == newest[2:5]
        assert listed(limit=50, offset=7) == newest[7:]
        assert listed(newest_first=False, limit=4, offset=1) == by_time[1:5]
        doubled = MemoryFilter(projects=("p",), kinds=("observation",), types=("bugfix",) * 2)
        assert [m.id for m in store.list_memories(doubled)] == [
            mid for mid in newest if mid in ids[0::3]
        ]

    def test_list_and_count_filters(self, store: Store) -> None:
        days = [T0 + timedelta(days=i) for i in range(5)]
        ids = [
            store.insert_memory(new("a", project="p", created_at=days[0], session_id="s1")),
            store.insert_memory(
                new("b", project="p", kind="knowledge", type_="bugfix", created_at=days[1])
            ),
            store.insert_memory(
                new("c", project="q", created_at=days[2], files=("src/x.py", "y.md"))
            ),
            store.insert_memory(
                new("d", project="r", kind="observation", type_="command", created_at=days[3])
            ),
            store.insert_memory(new("e", project="p", created_at=days[4], session_id="s1")),
        ]

        def listed(flt: MemoryFilter, **kw: Any) -> list[int]:
            result = [m.id for m in store.list_memories(flt, **kw)]
            if not kw:
                assert store.count_memories(flt) == len(result)
                assert store.has_memories(flt) == bool(result)
                assert store.memory_ids(flt) == sorted(result)
            return result

        assert listed(MemoryFilter()) == ids[::-1]
        assert listed(MemoryFilter(), newest_first=False) == ids
        assert listed(MemoryFilter(), limit=2, offset=1) == [ids[3], ids[2]]
        assert listed(MemoryFilter(projects=("p",))) == [ids[4], ids[1], ids[0]]
        assert listed(MemoryFilter(projects=("q", "r"))) == [ids[3], ids[2]]
        assert listed(MemoryFilter(projects=())) == []
        assert listed(MemoryFilter(kinds=("knowledge", "observation"))) == [ids[3], ids[1]]
        assert listed(MemoryFilter(types=("bugfix",))) == [ids[1]]
        assert listed(MemoryFilter(session_id="s1")) == [ids[4], ids[0]]
        assert listed(MemoryFilter(created_after=days[1], created_before=days[3])) == [
            ids[2],
            ids[1],
        ]
        assert listed(MemoryFilter(ids=(ids[0], ids[3], 999))) == [ids[3], ids[0]]
        assert listed(MemoryFilter(ids=())) == []
        assert listed(MemoryFilter(files=("src/x.py",))) == [ids[2]]
        assert listed(MemoryFilter(files=("y.md", "none"))) == [ids[2]]
        assert listed(MemoryFilter(files=("src/x",))) == []
        assert listed(MemoryFilter(projects=("p",), kinds=("note",), session_id="s1")) == [
            ids[4],
            ids[0],
        ]

    def test_record_access(self, store: Store) -> None:
        a = store.insert_memory(new("a"))
        b = store.insert_memory(new("b"))
        at = T0 + timedelta(days=2)
        store.record_access([a], at)
        store.record_access([a, b], at)
        store.record_access([], at)
        got = {m.id: m for m in store.get_memories([a, b])}
        assert (got[a].access_count, got[b].access_count) == (2, 1)
        assert close_to(got[a].last_accessed_at, at)

    # -- full text ------------------------------------------------------------

    def test_fts_in_sync_after_insert_update_delete(self, store: Store) -> None:
        a = store.insert_memory(new("alpha bravo"))
        b = store.insert_memory(new("charlie", title="delta", tags=("golf",)))
        assert fts(store, "alpha") == [a]
        assert fts(store, "delta") == [b]
        assert fts(store, "golf") == [b]
        store.update_memory(a, {"content": "echo foxtrot"})
        assert fts(store, "alpha") == []
        assert fts(store, "foxtrot") == [a]
        store.update_memory(b, {"access_count": 3})
        assert fts(store, "delta") == [b]
        store.update_memory(b, {"tags": ("hotel",)})
        assert fts(store, "golf") == []
        assert fts(store, "hotel") == [b]
        store.update_memory(b, {"title": "india"})
        assert fts(store, "delta") == []
        assert fts(store, "india") == [b]
        assert fts(store, "charlie") == [b]
        store.delete_memories([b])
        assert fts(store, "india") == []
        assert fts(store, "charlie") == []

    def test_fts_tokens_like_fts5(self, store: Store) -> None:
        a = store.insert_memory(new("Configured the Élan module in src/app_main.py (v2.5)"))
        b = store.insert_memory(new("unrelated words", files=("lib/Parser.ts",)))
        assert fts(store, "elan") == [a]
        assert fts(store, "ÉLAN") == [a]
        assert fts(store, "app") == [a]  # prefix of the last word
        assert fts(store, "main py") == [a]
        assert fts(store, "app_main") == [a]  # a phrase of two tokens
        assert fts(store, "parser") == [b]  # files are searchable
        assert fts(store, "configured module", op="all") == [a]
        assert fts(store, "configured unrelated", op="all") == []
        assert sorted(fts(store, "configured unrelated")) == sorted([a, b])

    def test_match_counts_are_document_frequencies(self, store: Store) -> None:
        assert store.match_counts([unit_query("cache")]) == (0, [0])
        store.insert_memory(new("cache cache warm", title="Cache"))
        store.insert_memory(new("the cache is cold", project="other"))
        store.insert_memory(new("app_main reads 東京タワー"))
        store.insert_memory(new("nothing here", files=("src/cache.py",)))
        queries = [unit_query(u) for u in ("cache", "warm", "app_main", "東京", "absent", "the")]
        # Every project counts, each memory once (title, content and files alike).
        assert store.match_counts(queries) == (4, [3, 1, 1, 1, 0, 1])
        assert store.match_counts([]) == (4, [])
        store.delete_memories([store.insert_memory(new("cache again"))])
        assert store.match_counts([unit_query("cache")]) == (4, [3])

    def test_match_counts_of_a_common_word_are_estimated_from_the_newest(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from memlane.store import common

        monkeypatch.setattr(common, "MATCH_COUNT_SCAN", 3)
        ids = [
            store.insert_memory(new(f"note {n}" + (" cache" if n % 2 else ""))) for n in range(10)
        ]
        holding = [mid for n, mid in enumerate(ids) if n % 2]
        assert store.match_counts([unit_query("note"), unit_query("cache")]) == (
            10,
            [10, 3 * 10 // (ids[-1] - holding[-3] + 1)],  # 3 of the newest 5 hold "cache"
        )
        assert store.match_counts([unit_query("absent")]) == (10, [0])

    def test_fts_prefix_only_on_the_last_word(self, store: Store) -> None:
        a = store.insert_memory(new("authentication tokens rotate"))
        assert fts(store, "authen") == [a]
        built = build_query("authen", prefix=False)
        assert built is not None
        assert store.fts_candidates(built, MemoryFilter(), 10) == []
        assert fts(store, "authen tokens", op="all") == []  # no prefix on "authen"

    def test_fts_cjk_bigrams(self, store: Store) -> None:
        ja = store.insert_memory(new("昨日は東京タワーに行った"))
        zh = store.insert_memory(new("数据库迁移完成", title="北京"))
        store.insert_memory(new("nothing asian here"))
        assert fts(store, "東京") == [ja]
        assert fts(store, "タワー") == [ja]
        assert fts(store, "東京タワー") == [ja]
        assert fts(store, "大阪") == []
        assert fts(store, "迁移") == [zh]
        assert fts(store, "北京") == [zh]
        assert fts(store, "京タ") == [ja]  # a bigram across a word boundary is still a bigram
        assert fts(store, "タワー東京", op="all") == []  # bigrams in the wrong order: no phrase
        # "any" matches each bigram: a natural sentence finds what shares its words.
        assert fts(store, "タワー東京") == [ja]
        other = store.insert_memory(new("東京の天気"))
        assert fts(store, "東京タワーに行った日") == [ja, other]
        assert fts(store, "数据库迁移是什么时候完成的？") == [zh]

    def test_fts_a_camel_case_identifier_is_found_by_its_words(self, store: Store) -> None:
        a = store.insert_memory(
            new("alias Spotter.Services.TranscriptRenderer", title="getUserName")
        )
        b = store.insert_memory(new("the transcript was long"))
        assert fts(store, "renderer") == [a]
        assert fts(store, "user name", op="all") == [a]  # words of the title's identifier
        assert fts(store, "transcriptrenderer") == [a]  # the whole token stays
        assert sorted(fts(store, "transcript")) == sorted([a, b])
        assert store.match_counts([unit_query("renderer")]) == (2, [1])
        store.update_memory(a, {"content": "a ReviewContextBuilder only"})
        assert fts(store, "renderer") == []
        assert fts(store, "builder") == [a]

    def test_fts_exact_word_outranks_words_it_begins(self, store: Store) -> None:
        longer = [store.insert_memory(new(f"record {n}")) for n in range(42420, 42426)]
        exact = store.insert_memory(new("record 4242"))
        found = fts(store, "4242")
        assert found[0] == exact and set(found) == {exact, *longer}
        assert fts(store, "record 4242")[0] == exact

    def test_fts_fields_and_required_clauses(self, store: Store) -> None:
        titled = store.insert_memory(new("pool size tuning", title="connection pool"))
        body = store.insert_memory(new("the connection pool leaks", title="leak"))
        linked = store.insert_memory(new("engine notes", files=("src/search/engine.py",)))
        pool_in_title = FtsQuery(terms=(Term("pool", field="title"),))
        assert matched(store, pool_in_title) == {titled}
        in_files = FtsQuery(phrases=(Phrase(("engine", "py"), field="files"),))
        assert matched(store, in_files) == {linked}
        begins = FtsQuery(terms=(Term("eng", prefix=True, field="files"),))
        assert matched(store, begins) == {linked}
        either = FtsQuery(required=(AnyOf((Term("leaks"), Term("notes"))), Term("pool")))
        assert matched(store, either) == {body}
        # With a required clause the others only rank: memories holding them come first.
        ranked = FtsQuery(terms=(Term("size"), Term("tuning")), required=(Term("pool"),))
        found = [mid for mid, _ in store.fts_candidates(ranked, MemoryFilter(), 10)]
        assert found == [titled, body]
        no_phrase = FtsQuery(terms=(Term("pool"),), excluded=(Phrase(("pool", "leaks")),))
        assert matched(store, no_phrase) == {titled}
        cjk = store.insert_memory(new("設定ファイルの場所"))
        assert matched(store, FtsQuery(terms=(Term("notes"),), excluded=(Grams(("設定",)),))) == {
            linked
        }
        assert matched(store, FtsQuery(required=(AnyOf((Grams(("設定",)),)),))) == {cjk}

    def test_fts_title_outranks_content(self, store: Store) -> None:
        body = store.insert_memory(new("the cache warms up slowly, see notes", title="misc"))
        head = store.insert_memory(new("see notes on warm up speed", title="cache"))
        assert fts(store, "cache") == [head, body]

    def test_fts_respects_the_filter(self, store: Store) -> None:
        a = store.insert_memory(new("shared word", project="p"))
        b = store.insert_memory(new("shared word", project="q"))
        assert sorted(fts(store, "shared")) == sorted([a, b])
        assert fts(store, "shared", MemoryFilter(projects=("q",))) == [b]
        assert fts(store, "shared", MemoryFilter(projects=())) == []
        assert fts(store, "shared", MemoryFilter(ids=(a,))) == [a]

    def test_fts_scores_are_higher_for_better_matches(self, store: Store) -> None:
        store.insert_memory(new("postgres"))
        store.insert_memory(new("postgres postgres replication and postgres tuning"))
        built = build_query("postgres replication")
        assert built is not None
        found = store.fts_candidates(built, MemoryFilter(), 10)
        scores = [score for _, score in found]
        assert len(found) == 2 and scores == sorted(scores, reverse=True)
        assert scores[0] > scores[1]

    @pytest.mark.parametrize("query", HOSTILE)
    def test_hostile_queries_do_not_raise(self, store: Store, query: str) -> None:
        store.insert_memory(new("ordinary text about foo and ligature ﬁ"))
        for op in OPERATORS:
            built = build_query(query, operator=op)
            if built is not None:
                assert isinstance(store.fts_candidates(built, MemoryFilter(), 10), list)
            # Words reach the store as data: text a parser would not have split or cleaned
            # (quotes, operators, column names, stars) still cannot break the query.
            raw = FtsQuery(
                terms=(Term(query), Term(query, prefix=True)),
                phrases=(Phrase((query, "foo")),),
                cjk_grams=((query,),),
                operator=op,
                excluded=(Term(query),),
            )
            assert isinstance(store.fts_candidates(raw, MemoryFilter(), 10), list)
        assert isinstance(store.like_candidates(query, MemoryFilter(), 10), list)
        # The search syntax either understands the text or says why in one line.
        try:
            parsed = parse_syntax(query)
        except InvalidInput as exc:
            assert "\n" not in str(exc) and str(exc).startswith("search syntax: ")
        else:
            if parsed.match is not None:
                assert isinstance(store.fts_candidates(parsed.match, MemoryFilter(), 10), list)

    def test_fts_query_clauses(self, store: Store) -> None:
        fox = store.insert_memory(new("the red fox jumps"))
        backwards = store.insert_memory(new("a fox that is red"))
        apple = store.insert_memory(new("red apple pie", title="dessert"))
        red = Term("red")
        assert matched(store, FtsQuery(terms=(red,))) == {fox, backwards, apple}
        assert matched(store, FtsQuery(phrases=(Phrase(("red", "fox")),))) == {fox}
        either = FtsQuery(terms=(Term("jumps"), Term("pie")))
        assert matched(store, either) == {fox, apple}
        assert matched(store, FtsQuery(terms=either.terms, operator="all")) == set()
        both = FtsQuery(terms=(red, Term("fox")), operator="all")
        assert matched(store, both) == {fox, backwards}
        # Excluded terms drop matches, by prefix too, whatever the operator.
        assert matched(store, FtsQuery(terms=(red,), excluded=(Term("apple"),))) == {
            fox,
            backwards,
        }
        no_jumps = FtsQuery(terms=(red, Term("fox")), operator="all", excluded=(Term("jum", True),))
        assert matched(store, no_jumps) == {backwards}
        several = FtsQuery(terms=(red,), excluded=(Term("pie"), Term("jumps")))
        assert matched(store, several) == {backwards}
        # A word that cannot match: "any" ignores it, "all" fails, excluding it excludes nothing.
        nothing = Term("___")
        assert matched(store, FtsQuery(terms=(red, nothing))) == {fox, backwards, apple}
        assert matched(store, FtsQuery(terms=(red, nothing), operator="all")) == set()
        assert matched(store, FtsQuery(terms=(red,), excluded=(nothing,))) == {
            fox,
            backwards,
            apple,
        }
        assert matched(store, FtsQuery(excluded=(Term("apple"),))) == set()
        assert matched(store, FtsQuery()) == set()

    def test_like_candidates_are_literal_and_case_insensitive(self, store: Store) -> None:
        a = store.insert_memory(new("progress: 50% done", title="Go"))
        b = store.insert_memory(new("snake_case name"))
        store.insert_memory(new("50 percent, snakeXcase"))
        assert [i for i, _ in store.like_candidates("50%", MemoryFilter(), 10)] == [a]
        assert [i for i, _ in store.like_candidates("e_c", MemoryFilter(), 10)] == [b]
        assert [i for i, _ in store.like_candidates("go", MemoryFilter(), 10)] == [a]
        assert store.like_candidates("50%", MemoryFilter(projects=("zz",)), 10) == []
        assert store.like_candidates("e_c", MemoryFilter(), 10)[0][1] > 0

    def test_like_candidates_within_a_scan_read_the_newest_memories_only(
        self, store: Store
    ) -> None:
        day = timedelta(days=1)
        old = store.insert_memory(new("the frobnicator broke", created_at=T0))
        fixed = store.insert_memory(new("frobnicator fixed", created_at=T0 + day))
        store.insert_memory(new("unrelated note", created_at=T0 + 2 * day))
        store.insert_memory(new("a frobnicator elsewhere", project="q", created_at=T0 + 3 * day))
        mine = MemoryFilter(projects=("p",))

        def like(scan: int | None) -> list[int]:
            return [i for i, _ in store.like_candidates("frobnicator", mine, 10, scan=scan)]

        assert like(None) == [fixed, old]
        assert like(3) == [fixed, old]
        assert like(2) == [fixed]  # the newest two of the project: the note and the fix
        assert like(1) == []

    # -- vectors --------------------------------------------------------------

    def test_vectors_put_iterate_and_missing(self, store: Store) -> None:
        ids = [store.insert_memory(new(f"v{i}", title="t" if i == 0 else "")) for i in range(5)]
        blobs = {mid: vec(float(i), 0.5, -1.25) for i, mid in enumerate(ids)}
        store.put_embeddings("toy", 3, [(mid, blobs[mid]) for mid in ids[:4]])
        store.put_embeddings("toy", 3, [(999_999, vec(1, 2, 3))])  # no such memory: ignored
        store.put_embeddings("other", 3, [(ids[0], vec(0, 0, 1))])
        batches = list(store.iter_embeddings("toy", batch=3))
        assert [len(batch) for batch in batches] == [3, 1]
        assert dict(pair for batch in batches for pair in batch) == {
            mid: blobs[mid] for mid in ids[:4]
        }
        after = list(store.iter_embeddings("toy", after_id=ids[1]))
        assert [mid for batch in after for mid, _ in batch] == ids[2:4]
        assert store.missing_embeddings("toy", 10) == [(ids[4], "v4")]
        assert store.missing_embeddings("other", 2) == [(ids[1], "v1"), (ids[2], "v2")]
        assert store.embedding_counts() == {"toy": 4, "other": 1}
        store.put_embeddings("toy", 3, [(ids[0], vec(9, 9, 9))])  # replace
        assert store.embedding_counts()["toy"] == 4
        assert next(iter(store.iter_embeddings("toy")))[0] == (ids[0], vec(9, 9, 9))
        assert store.delete_embeddings("other") == 1
        assert store.embedding_counts() == {"toy": 4}
        assert store.delete_embeddings() == 4
        assert store.embedding_counts() == {}
        assert [mid for mid, _ in store.missing_embeddings("toy", 10)] == ids
        assert store.missing_embeddings("toy", 10)[0] == (ids[0], "t\nv0")

    def test_vectors_follow_text_changes_and_deletes(self, store: Store) -> None:
        a = store.insert_memory(new("one"))
        b = store.insert_memory(new("two"))
        store.put_embeddings("toy", 2, [(a, vec(1, 0)), (b, vec(0, 1))])
        store.update_memory(a, {"access_count": 4, "tags": ("x",)})
        assert store.embedding_counts() == {"toy": 2}
        store.update_memory(a, {"content": "one, edited"})
        assert store.embedding_counts() == {"toy": 1}
        assert [mid for mid, _ in store.missing_embeddings("toy", 10)] == [a]
        store.delete_memories([b])
        assert store.embedding_counts() == {}

    def test_vector_candidates_rank_by_cosine_within_the_filter(self, store: Store) -> None:
        rows = {
            "east": (vec(1, 0, 0), "p"),
            "north-east": (vec(0.7071, 0.7071, 0), "p"),
            "north": (vec(0, 1, 0), "q"),
            "west": (vec(-1, 0, 0), "q"),
        }
        ids = {name: store.insert_memory(new(name, project=p)) for name, (_, p) in rows.items()}
        store.put_embeddings("toy", 3, [(ids[name], blob) for name, (blob, _) in rows.items()])
        store.put_embeddings("big", 4, [(ids["east"], vec(1, 0, 0, 0))])
        found = store.vector_candidates("toy", [1.0, 0.0, 0.0], MemoryFilter(), 10)
        assert [mid for mid, _ in found] == [
            ids["east"],
            ids["north-east"],
            ids["north"],
            ids["west"],
        ]
        scores = [score for _, score in found]
        assert scores[0] == pytest.approx(1.0, abs=1e-4)
        assert scores[1] == pytest.approx(0.7071, abs=1e-3)
        assert scores[3] == pytest.approx(-1.0, abs=1e-4)
        top2 = store.vector_candidates("toy", [1.0, 0.0, 0.0], MemoryFilter(), 2)
        assert [mid for mid, _ in top2] == [ids["east"], ids["north-east"]]
        in_q = store.vector_candidates("toy", [1.0, 0.0, 0.0], MemoryFilter(projects=("q",)), 10)
        assert [mid for mid, _ in in_q] == [ids["north"], ids["west"]]
        only = store.vector_candidates(
            "toy", [0.0, 1.0, 0.0], MemoryFilter(ids=(ids["west"], ids["east"])), 10
        )
        assert {mid for mid, _ in only} == {ids["west"], ids["east"]}
        assert store.vector_candidates("none", [1.0, 0.0, 0.0], MemoryFilter(), 10) == []
        assert store.vector_candidates("toy", [1.0, 0.0, 0.0], MemoryFilter(projects=()), 10) == []
        assert [
            m for m, _ in store.vector_candidates("big", [1.0, 0, 0, 0], MemoryFilter(), 5)
        ] == [ids["east"]]

    # -- sessions -------------------------------------------------------------

    def test_sessions_upsert_update_list_delete(self, store: Store) -> None:
        store.upsert_session(session("s1", at=T0, transcript_path="/t/1.jsonl", agent="claude"))
        store.upsert_session(session("s1", at=T0 - timedelta(hours=1)))  # older: ignored
        got = store.get_session("s1")
        assert got is not None
        assert close_to(got.last_activity_at, T0)
        assert got.transcript_path == "/t/1.jsonl"
        assert got.agent == "claude"
        store.upsert_session(session("s1", at=T0 + timedelta(hours=1), transcript_path="/t/2"))
        got = store.get_session("s1")
        assert got is not None
        assert close_to(got.last_activity_at, T0 + timedelta(hours=1))
        assert got.transcript_path == "/t/2"
        assert close_to(got.started_at, T0)
        store.update_session(
            "s1",
            {
                "status": "ended",
                "ended_at": T0 + timedelta(hours=2),
                "transcript_offset": 12_345_678_901,
                "prompt_count": 7,
                "parent_session_id": "s0",
            },
        )
        got = store.get_session("s1")
        assert got is not None
        assert (got.status, got.transcript_offset, got.prompt_count) == ("ended", 12_345_678_901, 7)
        assert got.parent_session_id == "s0"
        assert close_to(got.ended_at, T0 + timedelta(hours=2))
        store.update_session("s1", {"ended_at": None, "status": "active"})
        got = store.get_session("s1")
        assert got is not None and got.ended_at is None
        with pytest.raises(ValueError):
            store.update_session("s1", {"id": "x"})
        assert store.get_session("nope") is None

    def test_list_sessions_filters_and_idle(self, store: Store) -> None:
        store.upsert_session(session("a", "p", T0))
        store.upsert_session(session("b", "p", T0 + timedelta(hours=5)))
        store.upsert_session(session("c", "q", T0 + timedelta(hours=1)))
        store.update_session("c", {"status": "ended"})

        def ids(**kw: Any) -> list[str]:
            return [s.id for s in store.list_sessions(**kw)]

        assert ids() == ["b", "c", "a"]
        assert ids(limit=1) == ["b"]
        assert ids(projects=("p",)) == ["b", "a"]
        assert ids(projects=()) == []
        assert ids(statuses=("active",)) == ["b", "a"]
        assert ids(idle_before=T0 + timedelta(hours=2)) == ["c", "a"]
        assert ids(statuses=("active",), idle_before=T0 + timedelta(hours=2)) == ["a"]
        assert store.delete_sessions(["a", "zz"]) == 1
        assert store.delete_sessions([]) == 0
        assert ids() == ["b", "c"]

    def test_first_memories_of_sessions(self, store: Store) -> None:
        later = T0 + timedelta(minutes=5)
        for sid, text, at in (("s1", "second prompt", later), ("s1", "first prompt", T0)):
            store.insert_memory(new(text, kind="prompt", session_id=sid, created_at=at))
        store.insert_memory(new("an earlier note", kind="note", session_id="s1", created_at=T0))
        store.insert_memory(new("other session", kind="prompt", session_id="s2", created_at=T0))
        store.insert_memory(new("no session", kind="prompt", created_at=T0))
        found = store.first_memories(["s1", "s2", "s3", "s1"], "prompt")
        assert {sid: m.content for sid, m in found.items()} == {
            "s1": "first prompt",
            "s2": "other session",
        }
        assert found["s1"].session_id == "s1"
        assert store.first_memories(["s1"], "summary") == {}
        assert store.first_memories([], "prompt") == {}

    # -- bookkeeping ----------------------------------------------------------

    def test_seen_keys(self, store: Store) -> None:
        assert store.seen("ns", ["a", "b"]) == set()
        store.mark_seen("ns", ["a", "b", "a"])
        store.mark_seen("ns", ["b", "c"])
        store.mark_seen("ns", [])
        assert store.seen("ns", ["a", "b", "c", "d"]) == {"a", "b", "c"}
        assert store.seen("other", ["a"]) == set()
        assert store.seen("ns", []) == set()
        many = [f"k{i}" for i in range(1200)]
        store.mark_seen("bulk", many)
        assert store.seen("bulk", [*many, "x"]) == set(many)
        batches = list(store.iter_seen_keys(batch=500))
        assert [len(b) for b in batches] == [500, 500, 203]
        listed = [pair for b in batches for pair in b]
        assert listed == sorted(listed) and len(set(listed)) == 1203
        assert listed[-3:] == [("ns", "a"), ("ns", "b"), ("ns", "c")]

    def test_maintenance_log(self, store: Store) -> None:
        assert store.last_maintenance("prune") is None
        store.log_maintenance("prune", T0, {"removed": 3, "when": T0})
        first = store.last_maintenance("prune")
        assert first is not None and first.tzinfo is not None
        store.log_maintenance("prune", T0, {})
        second = store.last_maintenance("prune")
        assert second is not None and second >= first
        assert store.last_maintenance("vacuum") is None

    def test_stats(self, store: Store) -> None:
        empty = store.stats()
        assert (empty.memories, empty.sessions, empty.embedded) == (0, 0, 0)
        assert empty.oldest is None and empty.newest is None
        a = store.insert_memory(new("a", project="p", created_at=T0))
        store.insert_memory(new("b", project="p", kind="knowledge", type_="bugfix"))
        store.insert_memory(new("c", project="q", created_at=T0 + timedelta(days=3)))
        store.upsert_session(session("s"))
        store.put_embeddings("toy", 2, [(a, vec(1, 0))])
        store.put_embeddings("toy2", 2, [(a, vec(0, 1))])
        stats = store.stats()
        assert (stats.memories, stats.sessions, stats.embedded) == (3, 1, 1)
        assert stats.projects == {"p": 2, "q": 1}
        assert list(stats.projects) == ["p", "q"]
        assert stats.kinds == {"note": 2, "knowledge": 1}
        assert stats.types == {"note": 2, "bugfix": 1}
        assert list(stats.kinds) == ["note", "knowledge"]
        assert list(stats.types) == ["note", "bugfix"]
        of_q = store.stats("q")
        assert (of_q.memories, of_q.embedded, of_q.projects) == (1, 0, {"q": 1})
        assert store.stats("p").embedded == 1
        assert close_to(stats.oldest, T0)
        assert close_to(stats.newest, T0 + timedelta(days=3))
        assert stats.db_bytes > 0

    def test_change_marker_moves_with_writes(self, store: Store) -> None:
        assert store.change_marker() == (0, 0)
        mid = store.insert_memory(new("x"))
        assert store.change_marker()[0] == mid
        store.upsert_session(session("s", at=T0))
        marker = store.change_marker()
        assert marker == (mid, int(T0.timestamp()) * 1_000_000 + T0.microsecond)
        store.update_session("s", {"last_activity_at": T0 + timedelta(microseconds=1)})
        assert store.change_marker()[1] == marker[1] + 1  # exact microseconds

    def test_commit_marker_moves_with_any_commit(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        marker = store.commit_marker()
        if marker is None:  # PostgreSQL cannot tell cheaply: pollers count instead,
            store.insert_memory(new("x"))  # and a store that cannot tell never does
            assert store.commit_marker() is None
            return
        assert store.commit_marker() == marker  # nothing written: the same
        mid = store.insert_memory(new("x"))
        after_own = store.commit_marker()
        assert after_own != marker
        other = reopen()
        try:
            other.update_memory(mid, {"title": "edited elsewhere"})
        finally:
            other.close()
        after_other = store.commit_marker()
        assert after_other != after_own  # another connection's commit shows too
        assert store.commit_marker() == after_other
        store.put_embeddings("m", 2, [(mid, b"\x00" * 8)])
        assert store.commit_marker() != after_other

    # -- transactions and migrations ---------------------------------------------

    def test_transaction_commits_and_rolls_back(
        self, store: Store, reopen: Callable[[], Store]
    ) -> None:
        with store.transaction():
            kept = store.insert_memory(new("kept"))
            with store.transaction():
                store.upsert_session(session("s-kept"))
        with pytest.raises(RuntimeError), store.transaction():
            store.insert_memory(new("lost"))
            store.mark_seen("ns", ["lost"])
            with store.transaction():
                store.upsert_session(session("s-lost"))
            raise RuntimeError("boom")
        with pytest.raises(KeyError), store.transaction(), store.transaction():
            store.insert_memory(new("lost too"))
            raise KeyError("inner")
        assert store.memory_ids(MemoryFilter()) == [kept]
        assert store.get_session("s-lost") is None
        assert store.seen("ns", ["lost"]) == set()
        other = reopen()
        try:
            assert other.memory_ids(MemoryFilter()) == [kept]
            assert other.get_session("s-kept") is not None
        finally:
            other.close()

    def test_store_usable_after_a_rolled_back_transaction(self, store: Store) -> None:
        with pytest.raises(ValueError), store.transaction():
            store.insert_memory(new("x"))
            store.update_memory(1, {"bogus": 1})
        mid = store.insert_memory(new("y"))
        assert store.memory_ids(MemoryFilter()) == [mid]

    def test_migrations_rerun_is_a_no_op(self, store: Store, reopen: Callable[[], Store]) -> None:
        version = store.schema_version()
        assert version >= 1
        mid = store.insert_memory(new("survives", topic_key="k"))
        store.put_embeddings("toy", 2, [(mid, vec(1, 0))])
        for _ in range(2):
            again = reopen()
            try:
                assert again.schema_version() == version
                assert again.memory_ids(MemoryFilter()) == [mid]
                assert again.embedding_counts() == {"toy": 1}
                assert fts(again, "survives") == [mid]
            finally:
                again.close()

    def test_project_names_and_memory_keys(self, store: Store) -> None:
        a = store.insert_memory(new("one", project="beta"))
        b = store.insert_memory(new("two", project="alpha"))
        store.insert_memory(new("three", project="beta"))
        assert store.project_names() == ["alpha", "beta"]
        keys = {row[0]: row for row in store.memory_keys([a, b, 999_999])}
        assert set(keys) == {a, b}
        assert keys[a][1:4] == ("beta", "note", "note")
        assert abs(keys[b][4] - T0.timestamp()) < 1

    def test_fts_scan_bounds_to_newest_matches(self, store: Store) -> None:
        ids = [
            store.insert_memory(new(f"common word {i}", created_at=T0 + timedelta(minutes=i)))
            for i in range(6)
        ]
        query = build_query("common")
        assert query is not None
        bounded = store.fts_candidates(query, MemoryFilter(), 10, scan=2)
        assert sorted(i for i, _ in bounded) == sorted(ids[-2:])
        assert len(store.fts_candidates(query, MemoryFilter(), 10)) == 6

    def test_fts_scan_bounds_the_matches_the_filter_allows(self, store: Store) -> None:
        old = [
            store.insert_memory(
                new(f"common word {i}", project="small", created_at=T0 + timedelta(minutes=i))
            )
            for i in range(3)
        ]
        newer = [
            store.insert_memory(
                new(
                    f"common word {i}", project="big", created_at=T0 + timedelta(hours=1, minutes=i)
                )
            )
            for i in range(4)
        ]
        query = build_query("common")
        assert query is not None
        small = MemoryFilter(projects=("small",))
        # Newer matches of another project do not use up a small project's bound.
        assert sorted(i for i, _ in store.fts_candidates(query, small, 10, scan=3)) == old
        assert sorted(i for i, _ in store.fts_candidates(query, small, 10, scan=2)) == old[-2:]
        big = MemoryFilter(projects=("big",))
        assert sorted(i for i, _ in store.fts_candidates(query, big, 10, scan=4)) == newer

    # -- the database as a whole -------------------------------------------------

    def test_storage_bytes_grow_with_the_data(self, store: Store) -> None:
        before_used, before_disk = store.storage_bytes()
        assert 0 <= before_used <= before_disk
        for i in range(300):
            store.insert_memory(new(f"row {i} " + "payload words " * 80))
        used, disk = store.storage_bytes()
        assert before_used < used <= disk

    def test_reclaim_space_keeps_the_data_and_never_grows_the_disk(self, store: Store) -> None:
        ids = [store.insert_memory(new(f"row {i} " + "payload words " * 80)) for i in range(300)]
        kept = store.insert_memory(new("the survivor"))
        store.delete_memories(ids)
        _used, disk = store.storage_bytes()
        ran = store.reclaim_space()
        assert isinstance(ran, bool)
        if ran:
            assert store.storage_bytes()[1] < disk
        assert store.reclaim_space(full=True) == ran
        assert [m.content for m in store.get_memories([kept])] == ["the survivor"]
        assert fts(store, "survivor") == [kept]

    def test_same_database_is_never_another_file(self, store: Store, tmp_path: Path) -> None:
        other = tmp_path / "elsewhere.db"
        SQLiteStore(other).close()
        assert store.same_database(other) is False
        assert store.same_database(tmp_path / "missing" / "x.db") is False

    def test_backup_to_copies_everything_or_refuses_and_writes_nothing(
        self, store: Store, tmp_path: Path
    ) -> None:
        ids = [store.insert_memory(new(f"row {i}", title=f"t{i}")) for i in range(3)]
        dest = tmp_path / "copies" / "copy.db"
        try:
            count = store.backup_to(dest, tmp_path / "data")
        except InvalidInput as exc:
            assert "pg_dump" in str(exc)
            assert not dest.exists()
            return
        assert count == 3
        assert dest.stat().st_mode & 0o777 == 0o600
        copy = SQLiteStore(dest)
        try:
            assert [m.content for m in copy.get_memories(ids)] == ["row 0", "row 1", "row 2"]
            assert fts(copy, "t1") == [ids[1]]
        finally:
            copy.close()
