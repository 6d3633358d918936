"""Search syntax: NOT/-word, OR, "phrases", word*, title:/file:/type:, on both stores."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.mcp_server import build_server
from memlane.search.engine import SearchRequest
from memlane.search.fts import ranking_query
from memlane.search.syntax import parse
from memlane.service import Memory
from memlane.service import open as open_memory
from memlane.store.query import AnyOf, FtsQuery, Phrase, Term
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import LiveServer


def test_plain_text_stays_plain() -> None:
    for text in ("how do I tune the connection pool", "e-mail address", "Note: the cache", "*"):
        parsed = parse(text)
        assert not parsed.structured and parsed.match == ranking_query(text)
        assert parsed.must is None and parsed.must_not is None


def test_operators_are_constraints_and_words_still_rank() -> None:
    parsed = parse('"connection pool" timeout OR deadline -redis NOT memcached tuning')
    match = parsed.match
    assert parsed.structured and match is not None
    assert match.required == (
        Phrase(("connection", "pool")),
        AnyOf((Term("timeout"), Term("deadline"))),
    )
    assert match.terms == (Term("tuning", prefix=True),)  # ranks as plain words do
    assert match.excluded == (Term("redis"), Term("memcached"))
    assert parsed.must == FtsQuery(required=match.required)
    assert parsed.must_not == FtsQuery(required=(AnyOf((Term("redis"), Term("memcached"))),))
    assert parsed.text == "connection pool timeout deadline tuning"
    fields = parse("title:wal file:engine.py conf* type:decision how")
    assert fields.types == ("decision",)
    assert fields.match is not None
    assert fields.match.required == (Term("wal", field="title"), Term("engine.py", field="files"))
    assert fields.match.terms == (Term("conf", prefix=True),)  # "how" ranks nothing
    both = parse("redis AND timeout cache")
    assert both.match is not None and both.match.required == (Term("redis"), Term("timeout"))
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
        ("AND cache", "AND needs a word or phrase on each side"),
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


ROWS = [
    ("pool-title", "connection pool", "raise the size to 20 under load", "decision", ()),
    ("pool-body", "leak", "the connection pool leaks on timeout", "bugfix", ()),
    ("redis", "cache", "redis cache eviction on timeout", "note", ()),
    ("memcached", "cache", "memcached cache eviction", "note", ()),
    ("engine", "ranking", "search engine notes", "note", ("src/search/engine.py",)),
    ("tokyo", "", "東京タワーに行った", "note", ()),
]
ALL = {row[0] for row in ROWS}
# (query, what comes first, what never comes). A constraint holds in every mode; in
# hybrid mode the plain words also let semantic neighbours rank after the matches.
CASES: list[tuple[str, set[str], set[str]]] = [
    ("cache -redis", {"memcached"}, {"redis"}),
    ("cache NOT memcached", {"redis"}, {"memcached"}),
    ("eviction AND redis", {"redis"}, ALL - {"redis"}),
    ("eviction redis OR memcached", {"redis", "memcached"}, ALL - {"redis", "memcached"}),
    ('"connection pool"', {"pool-title", "pool-body"}, ALL - {"pool-title", "pool-body"}),
    ('"pool connection"', set(), ALL),
    ("title:pool", {"pool-title"}, ALL - {"pool-title"}),
    ("file:engine.py", {"engine"}, ALL - {"engine"}),
    ("type:bugfix pool", {"pool-body"}, ALL - {"pool-body"}),
    ("type:decision OR type:bugfix", {"pool-title", "pool-body"}, {"redis", "engine", "tokyo"}),
    ("evic* -memcached", {"redis"}, {"memcached"}),
    ("東京 -大阪", {"tokyo"}, set()),
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def mem(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Memory]:
    target = None if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    opened = open_memory(target, settings=replace(settings, embedder="toy"))
    yield opened
    opened.close()


def ranked(mem: Memory, query: str, mode: str) -> list[str]:
    request = SearchRequest(query=query, projects=("p",), limit=20, mode=mode, syntax=True)
    return [hit.source_id or "" for hit in mem.search_engine.search(request)]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_operators_on_both_stores(mem: Memory, mode: str) -> None:
    for sid, title, text, type_, files in ROWS:
        mem.save(text, project="p", title=title, type=type_, files=files, source_id=sid)
    mem.embed_backfill()
    for query, first, never in CASES:
        found = ranked(mem, query, mode)
        assert set(found[: len(first)]) == first, (query, found)
        assert not set(found) & never, (query, found)
        if mode == "keyword":
            assert set(found) == first, (query, found)  # every keyword hit holds a word
    # A quoted name is required (redis times out too, without it), the other words rank.
    quoted = ranked(mem, 'what leaks on timeout in the "connection pool"', mode)
    assert set(quoted) == {"pool-body", "pool-title"}
    # Plain text as always: any of its words.
    assert {"redis", "memcached", "pool-body"} <= set(ranked(mem, "cache timeout", mode))


# -- through every interface ---------------------------------------------------------


def seed(memory: Memory) -> None:
    for sid, text, type_ in (
        ("redis", "redis cache eviction on timeout", "note"),
        ("memcached", "memcached cache eviction", "decision"),
    ):
        memory.save(text, project="p", type=type_, source_id=sid)


def test_cli_understands_the_syntax_and_says_what_is_wrong(memory: Memory, home: Path) -> None:
    seed(memory)
    memory.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMLANE_CMD, "search", *args, "--project", "p", "--json"],
            capture_output=True,
            text=True,
            env=run_env(home),
            timeout=120,
        )

    found = cli("cache -redis")
    assert found.returncode == 0, found.stderr
    assert [h["source_id"] for h in json.loads(found.stdout)] == ["memcached"]
    typed = cli("type:decision OR type:note", "--fusion", "rrf")
    assert {h["source_id"] for h in json.loads(typed.stdout)} == {"redis", "memcached"}
    bad = cli('"cache')
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().count("\n") == 0 and "quote at column 1" in bad.stderr
    wrong = cli("cache", "--fusion", "borda")
    assert wrong.returncode == 2 and "borda" in wrong.stderr


def test_http_q_understands_the_syntax(memory: Memory) -> None:
    seed(memory)
    live = LiveServer(memory).start()
    try:
        with httpx.Client(base_url=live.base_url, headers=live.auth(), timeout=10) as client:
            found = client.get("/api/search", params={"q": "cache NOT redis", "project": "p"})
            assert found.status_code == 200, found.text
            (hit,) = found.json()["hits"]
            assert hit["source_id"] == "memcached"
            assert hit["members"] == [hit["id"]] and hit["source_ids"] == ["memcached"]
            bad = client.get("/api/search", params={"q": "cache OR", "project": "p"})
            assert bad.status_code == 422
            body = bad.json()
            assert body["error"] == "invalid_input" and "OR needs a word" in body["message"]
            assert "\n" not in body["message"]
    finally:
        live.stop()


def test_mcp_search_understands_the_syntax(memory: Memory) -> None:
    seed(memory)
    server = build_server(lambda: memory, cwd=None)

    async def main() -> tuple[Any, Any]:
        async with Client(server) as client:
            found = await client.call_tool("search", {"query": '"cache eviction" -redis'})
            bad = await client.call_tool("search", {"query": "-redis"})
            return found, bad

    found, bad = anyio.run(main)
    assert not found.is_error
    assert [r["id"] for r in found.structured_content["results"]] == [
        memory.search("memcached", project="p", mode="keyword")[0].id
    ]
    assert bad.is_error and "only excludes" in bad.content[0].text
