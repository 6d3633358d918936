"""Hypothesis properties of the input-facing pure parts (issue 10, item 4).

Transcript parser, chunker, privacy filters, FTS query builder (run against a real
FTS5 table) and the config loader: no exception escapes and the invariants each
module documents hold, whatever the input.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memlane import privacy
from memlane.capture.chunker import chunk_turns
from memlane.capture.transcript import ParseStats, Turn, iter_turns
from memlane.config import GUARDS, SPECS, Settings, env_var, load_settings
from memlane.errors import ConfigError
from memlane.models import MemoryFilter, NewMemory, utcnow
from memlane.search.fts import build_query, ranking_query
from memlane.store.sqlite import SQLiteStore, fts5_match
from tests.test_reliability_support import pick

if TYPE_CHECKING:
    from memlane.store.query import Operator

EXAMPLES = pick(200, 2000)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Text with the characters that break parsers: quotes, FTS operators, CJK, NUL,
# surrogate-free astral chars, combining marks, RTL, newlines.
NASTY = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("\"*^:()-+ NEAR AND OR NOT \\'\n\t\r\x00{}[]<>/")),
        st.characters(codec="utf-8"),
        st.sampled_from(list("日本語の検索東京中文한국어éßİﬁ\u0301\u200b\u202e")),
    ),
    max_size=80,
)


# -- transcript parser -------------------------------------------------------------------

_ROLES = st.sampled_from(["user", "assistant", "system", "summary", "progress", 3, None])
_CONTENT = st.one_of(
    NASTY,
    st.lists(
        st.one_of(
            st.fixed_dictionaries({"type": st.just("text"), "text": NASTY}),
            st.fixed_dictionaries(
                {
                    "type": st.just("tool_use"),
                    "id": st.text(max_size=5),
                    "name": st.sampled_from(["Bash", "Read", "Edit", "Task", ""]),
                    "input": st.dictionaries(st.text(max_size=8), NASTY, max_size=3),
                }
            ),
            st.fixed_dictionaries(
                {
                    "type": st.just("tool_result"),
                    "tool_use_id": st.text(max_size=5),
                    "content": st.one_of(NASTY, st.lists(st.dictionaries(st.text(), NASTY))),
                    "is_error": st.booleans(),
                }
            ),
            st.integers(),
            st.none(),
        ),
        max_size=4,
    ),
    st.integers(),
    st.none(),
)
_RECORD = st.fixed_dictionaries(
    {"type": _ROLES},
    optional={
        "uuid": st.text(max_size=6),
        "sessionId": st.text(max_size=6),
        "cwd": st.one_of(st.text(max_size=10), st.integers()),
        "timestamp": st.one_of(NASTY, st.just("2026-01-05T10:00:00.000Z"), st.integers()),
        "isMeta": st.booleans(),
        "isSidechain": st.booleans(),
        "toolUseResult": st.one_of(NASTY, st.dictionaries(st.text(max_size=4), NASTY)),
        "message": st.one_of(
            st.fixed_dictionaries(
                {"role": _ROLES, "content": _CONTENT},
                optional={"id": st.text(max_size=6)},
            ),
            NASTY,
            st.none(),
        ),
    },
)
_LINE = st.one_of(
    _RECORD.map(lambda r: json.dumps(r).encode()),
    _RECORD.map(lambda r: json.dumps(r, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.binary(max_size=60),
    st.just(b"[" * 5000 + b"]" * 5000),  # deep nesting
    st.just(b'{"type": "user", "message": '),  # truncated record
    st.just(b"\xff\xfe\x00garbage"),
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


@FUZZ
@given(
    lines=st.lists(_LINE, max_size=12),
    trailing_newline=st.booleans(),
    start=st.integers(0, 4000),
)
def test_transcript_parser_never_raises_and_resumes_exactly(
    scratch: Path, lines: list[bytes], trailing_newline: bool, start: int
) -> None:
    path = scratch / "t.jsonl"
    data = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    path.write_bytes(data)
    stats = ParseStats()
    turns = list(iter_turns(str(path), min(start, len(data)), stats))
    assert 0 <= stats.end_offset <= len(data)
    assert stats.corrupt >= 0 and stats.records >= 0
    for turn in turns:
        assert turn.role in ("user", "assistant")
        assert isinstance(turn.text, str)
        assert turn.start_offset <= turn.end_offset <= len(data)
    assert [t.end_offset for t in turns] == sorted(t.end_offset for t in turns)
    # Documented: parsing from a turn's end offset yields exactly the turns after it,
    # unless the next turn ends on the same record (tool results, then a prompt):
    # then resuming there would skip it, so the ingest never cuts a batch between them
    # (tests/test_reliability_ingest_boundaries.py).
    full = list(iter_turns(str(path)))
    for k, turn in enumerate(full[:-1]):
        if full[k + 1].end_offset == turn.end_offset:
            continue
        resumed = list(iter_turns(str(path), turn.end_offset))
        assert resumed == full[k + 1 :], (k, data[:3000])


# -- chunker ------------------------------------------------------------------------------

_TURN = st.builds(
    Turn,
    role=st.sampled_from(["user", "assistant"]),
    text=st.one_of(
        NASTY,
        st.text(alphabet=st.sampled_from(list("ab \n`~x")), max_size=3000),
        st.just("```\n" + "code line\n" * 300 + "```"),
        st.just("x" * 5000),
    ),
    tool_names=st.lists(st.sampled_from(["Bash", "Read", "Edit"]), max_size=2).map(tuple),
    files=st.lists(st.text(max_size=10), max_size=2).map(tuple),
    errors=st.lists(NASTY, max_size=2).map(tuple),
    end_offset=st.integers(0, 10_000),
)


@FUZZ
@given(
    turns=st.lists(_TURN, max_size=8),
    max_tokens=st.integers(16, 600),
    start_index=st.integers(0, 1000),
)
def test_chunker_respects_the_budget_and_numbers_in_order(
    turns: list[Turn], max_tokens: int, start_index: int
) -> None:
    chunks = chunk_turns(turns, max_tokens=max_tokens, start_index=start_index)
    assert [c.index for c in chunks] == list(range(start_index, start_index + len(chunks)))
    for chunk in chunks:
        assert len(chunk.text) <= 4 * max_tokens, (len(chunk.text), max_tokens)
        assert chunk.text.startswith(f"{chunk.role}: ")
    # Deterministic: the same turns give the same chunks (idempotent re-ingest relies on it).
    assert chunk_turns(turns, max_tokens=max_tokens, start_index=start_index) == chunks


@FUZZ
@given(max_tokens=st.integers(-1000, 15))
def test_chunker_rejects_a_budget_without_room(max_tokens: int) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_turns([Turn("user", "hello")], max_tokens=max_tokens)


# -- privacy filters ------------------------------------------------------------------------

_SECRETISH = st.sampled_from(
    [
        "api_key = 'sk-live-0123456789abcdefABCDEF0123'",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "postgres://user:hunter2secret@db.example.com/x",
        "password=correct-horse-battery-staple-42",
        "-----BEGIN PRIVATE KEY-----\nMIIBVQ\n-----END PRIVATE KEY-----",
    ]
)
_PRIV_TEXT = st.lists(
    st.one_of(
        NASTY,
        _SECRETISH,
        st.sampled_from(["<private>", "</private>", "<PRIVATE>", "<private ", ">", "<", "/"]),
        st.sampled_from(["<memlane-context>", "</memlane-context>"]),
    ),
    max_size=12,
).map("".join)


@FUZZ
@given(text=_PRIV_TEXT)
def test_scrub_is_a_fixpoint_and_hash_ignores_what_it_removes(text: str) -> None:
    clean = privacy.scrub(text)
    assert isinstance(clean, str)
    assert privacy.scrub(clean) == clean
    assert privacy.normalized_hash(text) == privacy.normalized_hash(clean)
    assert len(privacy.normalized_hash(text)) == 64


@FUZZ
@given(before=NASTY, secret=st.from_regex(r"[A-Za-z0-9]{6,20}", fullmatch=True), after=NASTY)
def test_private_block_content_never_survives(before: str, secret: str, after: str) -> None:
    marker = f"QZX{secret}QZX"
    assume(marker not in before + after)
    text = f"{before}<private>{marker}</private>{after}"
    assert marker not in privacy.scrub(text)
    # Unclosed, nested, or upper case: still private.
    assert marker not in privacy.scrub(f"{before}<private>{marker}")
    assert marker not in privacy.scrub(f"<private><private>x</private>{marker}</private>")
    assert marker not in privacy.scrub(f"{before}<PRIVATE>{marker}</Private>{after}")


@FUZZ
@given(text=NASTY, extra=st.lists(NASTY, max_size=3))
def test_custom_secret_patterns_filter_or_refuse(text: str, extra: list[str]) -> None:
    # A bad user regex refuses the text (nothing is stored): skipped with a log line, it
    # stored what it should have masked. Config loading refuses it before any filter.
    try:
        assert isinstance(privacy.scrub(text, tuple(extra)), str)
    except ValueError as exc:
        assert "is not a regular expression" in str(exc)


# -- FTS query builder against a real FTS5 table --------------------------------------------

FTS_FILTER = MemoryFilter(projects=("p",))


@pytest.fixture(scope="module")
def fts_store(scratch: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(scratch / "fts.db")
    for i, text in enumerate(
        ["alpha beta gamma", "東京の天気は晴れ", "configure the cache", 'quote "inside" text']
    ):
        store.insert_memory(
            NewMemory(
                project="p",
                kind="note",
                type="note",
                content=text,
                normalized_hash=f"h{i}",
                created_at=utcnow(),
            )
        )
    yield store
    store.close()


@FUZZ
@given(
    query=st.one_of(NASTY, st.text(max_size=200)),
    operator=st.sampled_from(["any", "all"]),
    prefix=st.booleans(),
    drop=st.booleans(),
)
def test_any_query_builds_a_match_sqlite_accepts(
    fts_store: SQLiteStore, query: str, operator: Operator, prefix: bool, drop: bool
) -> None:
    for built in (
        build_query(query, operator=operator, prefix=prefix, drop_stopwords=drop),
        ranking_query(query),
    ):
        if built is None:
            continue
        # Raises sqlite3.OperationalError on any FTS5 syntax error.
        fts_store.fts_candidates(built, FTS_FILTER, 10)
        conn = sqlite3.connect(fts_store.location)
        try:
            conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                (fts5_match(built),),
            ).fetchone()
        finally:
            conn.close()


@FUZZ
@given(
    stored=st.sampled_from(["alpha", "gamma", "cache", "configure", "東京の天気"]),
    cut=st.integers(3, 9),
    noise=st.sampled_from(["", ' "', " (", " -", " ^*", " :", ")"]),
)
def test_a_stored_word_is_found_by_its_own_query(
    fts_store: SQLiteStore, stored: str, cut: int, noise: str
) -> None:
    # A typed prefix of a stored word (what search-as-you-type sends) finds its row,
    # whatever operator-looking noise follows it.
    built = build_query(stored[:cut] + noise)
    assert built is not None
    assert fts_store.fts_candidates(built, FTS_FILTER, 10)


# -- config loader -------------------------------------------------------------------------

_TOML_SCALAR = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.lists(st.integers(), max_size=3),
)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    return "[" + ", ".join(_toml_value(v) for v in value) + "]"


def _toml(values: dict[str, Any]) -> str:
    top: list[str] = []
    sections: dict[str, list[str]] = {}
    for key, value in values.items():
        section, _, name = key.rpartition(".")
        line = f"{json.dumps(name)} = {_toml_value(value)}"
        (sections.setdefault(section, []) if section else top).append(line)
    out = "\n".join(top) + "\n"
    for section, lines in sections.items():
        out += f"[{section}]\n" + "\n".join(lines) + "\n"
    return out


def assert_valid(s: Settings) -> None:
    """Every setting has its default's type and lies inside its documented range/choices."""
    for key, spec in SPECS.items():
        value = s.get(key)
        default = spec.default
        if isinstance(default, bool):
            assert isinstance(value, bool), key
        elif isinstance(default, int | float):
            assert type(value) is type(default), (key, value)
            assert not (isinstance(value, float) and math.isnan(value)), (key, value)
            if spec.minimum is not None:
                assert value >= spec.minimum, (key, value)
            if spec.maximum is not None:
                assert value <= spec.maximum, (key, value)
        elif isinstance(default, list):
            assert isinstance(value, tuple) and all(isinstance(v, str) for v in value), key
        else:
            assert isinstance(value, str), key
            if spec.choices is not None:
                assert value in spec.choices, (key, value)


_KEYS = st.sampled_from([*SPECS, "unknown_key", "worker.nope", "maintenance"])


@FUZZ
@given(
    file_values=st.dictionaries(_KEYS, _TOML_SCALAR, max_size=8),
    env_values=st.dictionaries(
        st.sampled_from(list(SPECS)), st.text(max_size=20).filter(lambda t: "\x00" not in t)
    ),
    raw_file=st.one_of(st.none(), st.binary(max_size=200)),
)
def test_config_loader_validates_or_refuses_in_one_line(
    scratch: Path, file_values: dict[str, Any], env_values: dict[str, str], raw_file: bytes | None
) -> None:
    home = scratch / "cfg-home"
    home.mkdir(exist_ok=True)
    config = home / "config.toml"
    if raw_file is not None:
        config.write_bytes(raw_file)
    else:
        text = _toml({k: v for k, v in file_values.items() if k != "maintenance"})
        config.write_text(text, encoding="utf-8")
    environ = {"MEMLANE_HOME": str(home), **{env_var(k): v for k, v in env_values.items()}}
    # Only an unreadable file or a bad value of a GUARDS key raises (no defaults there).
    try:
        loaded, warnings = load_settings(environ=environ)
    except ConfigError as exc:
        _assert_refusal(str(exc))
        return
    assert isinstance(loaded, Settings)
    assert all(isinstance(w, str) and "\n" not in w for w in warnings)
    assert_valid(loaded)
    # Overrides (CLI flags) go through the same validation.
    overrides = {k: v for k, v in file_values.items() if k in SPECS}
    try:
        loaded, _ = load_settings(environ=environ, overrides=overrides)
    except ConfigError as exc:
        _assert_refusal(str(exc))
        return
    assert_valid(loaded)


def _assert_refusal(message: str) -> None:
    assert "\n" not in message
    assert "cannot read" in message or any(f"for {key}" in message for key in GUARDS), message


def test_config_env_is_read_from_the_process_by_default(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_HOME", str(scratch / "env-home"))
    monkeypatch.setenv("MEMLANE_RECALL_LIMIT", "99999")
    loaded, warnings = load_settings()
    assert loaded.recall_limit == SPECS["recall_limit"].default  # out of range: not clamped
    assert any("MEMLANE_RECALL_LIMIT" in w for w in warnings)
    assert os.environ["MEMLANE_RECALL_LIMIT"] == "99999"
