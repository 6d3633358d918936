"""Search syntax: NOT/-word, OR, "phrases", word*, title:/file:/type:, on both stores."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.search.engine import SearchRequest
from memlane.search.fts import ranking_query
from memlane.search.syntax import parse
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.store.query import AnyOf, Phrase, Term


def test_plain_text_stays_plain() -> None:
    for text in ("how do I tune the connection pool", "e-mail address", "Note: the cache", "*"):
        parsed = parse(text)
        assert not parsed.boolean and parsed.match == ranking_query(text)


def test_operators_build_a_boolean_query() -> None:
    parsed = parse('"connection pool" timeout OR deadline -redis NOT memcached')
    match = parsed.match
    assert parsed.boolean and match is not None and match.operator == "all"
    assert match.phrases == (Phrase(("connection", "pool")),)
    assert match.alternatives == (AnyOf((Term("timeout"), Term("deadline"))),)
    assert match.excluded == (Term("redis"), Term("memcached"))
    assert parsed.text == "connection pool timeout deadline"
    fields = parse("title:wal file:engine.py conf* type:decision how")
    assert fields.types == ("decision",)
    assert fields.match is not None
    assert fields.match.terms == (
        Term("wal", field="title"),
        Term("engine.py", field="files"),
        Term("conf", prefix=True),
    )  # the bare stop word "how" is not required
    only_types = parse("type:decision OR type:bugfix")
    assert only_types.match is None and only_types.types == ("decision", "bugfix")


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ('"unclosed phrase', "quote at column 1 is not closed"),
        ("cache OR", 'OR needs a word after it (to search the word itself, quote it: "OR")'),
        ("OR cache", "OR needs a word or phrase on each side"),
        ("cache OR -redis", "OR needs a word or phrase on each side"),
        ("NOT", "NOT needs a word after it"),
        ("AND cache", "AND needs a word before it"),
        ("-redis", "the query only excludes; add a word to search for"),
        ('""', "the query holds no word to search for"),
        ("type:decision OR cache", "type: cannot be an alternative to words"),
        ("-type:note cache", "type: cannot be excluded"),
    ],
)
def test_bad_syntax_is_one_clear_line(query: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(query)
    message = str(caught.value)
    assert message.startswith("search syntax: ") and says in message and "\n" not in message


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["OR", "AND", "NOT", "-", '"', "title:", "file:", "type:", "*", "x", "東京", " "]
        )
        | st.text(max_size=6),
        max_size=8,
    )
)
def test_any_text_parses_or_fails_in_one_line(pieces: list[str]) -> None:
    query = "".join(pieces)
    try:
        parse(query)
    except InvalidInput as exc:
        assert "\n" not in str(exc)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mem(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Memory]:
    target = None if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    opened = open_memory(target, settings=replace(settings, embedder="toy"))
    yield opened
    opened.close()


def ids_of(mem: Memory, query: str, mode: str = "keyword") -> set[str]:
    request = SearchRequest(query=query, projects=("p",), limit=20, mode=mode, syntax=True)
    return {hit.source_id or "" for hit in mem.search_engine.search(request)}


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_operators_on_both_stores(mem: Memory, mode: str) -> None:
    rows = [
        ("pool-title", "connection pool", "raise the size to 20 under load", "decision", ()),
        ("pool-body", "leak", "the connection pool leaks on timeout", "bugfix", ()),
        ("redis", "cache", "redis cache eviction on timeout", "note", ()),
        ("memcached", "cache", "memcached cache eviction", "note", ()),
        ("engine", "ranking", "search engine notes", "note", ("src/search/engine.py",)),
        ("tokyo", "", "東京タワーに行った", "note", ()),
    ]
    for sid, title, text, type_, files in rows:
        mem.save(text, project="p", title=title, type=type_, files=files, source_id=sid)
    mem.embed_backfill()
    assert ids_of(mem, "cache -redis", mode) == {"memcached"}
    assert ids_of(mem, "cache NOT memcached", mode) == {"redis"}
    assert ids_of(mem, "eviction redis OR memcached", mode) == {"redis", "memcached"}
    assert ids_of(mem, '"connection pool"', mode) == {"pool-title", "pool-body"}
    assert ids_of(mem, '"pool connection"', mode) == set()
    assert ids_of(mem, "title:pool", mode) == {"pool-title"}
    assert ids_of(mem, "file:engine.py", mode) == {"engine"}
    assert ids_of(mem, "type:bugfix pool", mode) == {"pool-body"}
    assert ids_of(mem, "type:decision OR type:bugfix", mode) == {"pool-title", "pool-body"}
    assert ids_of(mem, "evic* -memcached", mode) == {"redis"}
    assert ids_of(mem, "東京 -大阪", mode) == {"tokyo"}
    # Plain text as always: any of its words.
    assert {"redis", "memcached", "pool-body"} <= ids_of(mem, "cache timeout", mode)
