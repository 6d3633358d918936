"""Full-text for PostgreSQL: the tsvector memlane stores and the tsquery it asks.

PostgreSQL's default parser does not split text the way SQLite FTS5's
``unicode61 remove_diacritics 2`` tokenizer does ('x.py' stays one token, an
unspaced CJK run too, 'élan' keeps its accent with the 'simple' config, and
``pg_trgm``/``unaccent`` are not in every build). So the store tokenizes in
Python, exactly like FTS5 does, and hands PostgreSQL a ready ``tsvector``
literal (sent as a parameter, cast with ``::tsvector``):

* tokens are runs of letters and digits (``[^\\W_]+`` on NFC text), lower-cased,
  with Latin diacritics removed — the same folding on both sides;
* weights stand for the FTS5 columns: title ``A``, files and tags ``B``, the CJK
  bigrams of title + content ``C``, content ``D``; a gap of one position
  between fields stops a phrase from spanning two of them;
* ``ts_rank_cd`` weights ``{D, C, B, A} = {1/3, 1/3, 2/3, 1}`` mirror the SQLite
  bm25 column weights (title 3, content 1, files 2, tags 2, cjk 1).

:func:`match_to_tsquery` turns the FTS5 MATCH string that ``search/fts.py``
builds (quoted terms, a trailing ``*`` prefix, ``cjk_terms : "a b"`` phrases,
``OR``/``AND``/``NOT``) into a ``tsquery`` literal: a quoted term becomes a
lexeme (or a ``<->`` phrase when it holds several tokens), ``*`` becomes
``:*``, a column filter becomes a weight restriction (``cjk_terms`` → ``:C``).
Anything it does not understand is read as plain words, so no input can make
the query fail to parse. An empty phrase matches nothing, as in FTS5.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memlane.text import cjk_terms

_TOKEN = re.compile(r"[^\W_]+")
# tsvector limits: lexeme < 2 KiB, positions 1..16383, 256 positions per lexeme, 1 MiB total.
MAX_LEXEME_BYTES = 2046
MAX_POSITION = 16383
MAX_POSITIONS_PER_LEXEME = 256
MAX_VECTOR_BYTES = 900_000
# ts_rank_cd weights in PostgreSQL's order {D, C, B, A}.
RANK_WEIGHTS = "{0.3333,0.3333,0.6667,1.0}"
_COLUMN_WEIGHTS = {"title": "A", "files": "B", "tags": "B", "cjk_terms": "C", "content": "D"}


@lru_cache(maxsize=8192)
def _fold_char(char: str) -> str:
    """Drop the diacritics of a Latin letter ('é' → 'e'); other scripts stay as they are."""
    decomposed = unicodedata.normalize("NFD", char)
    base = decomposed[0]
    if (
        len(decomposed) > 1
        and (base < "\u0250" or "\u1e00" <= base <= "\u1eff")
        and all(unicodedata.combining(mark) for mark in decomposed[1:])
    ):
        return base
    return char


def fold(token: str) -> str:
    token = token.lower()
    if token.isascii():
        return token
    return "".join(_fold_char(char) for char in token)


def tokens(text: str) -> list[str]:
    """The tokens FTS5's unicode61 tokenizer (remove_diacritics 2) would index."""
    if not text:
        return []
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return [fold(tok) for tok in _TOKEN.findall(text)]


def _quote_lexeme(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def search_vector(title: str, content: str, files: Iterable[str], tags: Iterable[str]) -> str:
    """The ``tsvector`` literal of a memory (see the module docstring)."""
    fields = (
        ("A", title),
        ("D", content),
        ("B", " ".join(files)),
        ("B", " ".join(tags)),
        ("C", cjk_terms(f"{title}\n{content}")),
    )
    positions: dict[str, list[str]] = {}
    size = 0
    pos = 0
    for weight, text in fields:
        suffix = "" if weight == "D" else weight
        for token in tokens(text):
            pos = min(pos + 1, MAX_POSITION)
            entry = positions.get(token)
            if entry is None:
                length = len(token.encode())
                if length > MAX_LEXEME_BYTES or size + length > MAX_VECTOR_BYTES:
                    continue  # PostgreSQL would reject it; FTS5 limits differ, nothing to match
                size += length + 8
                positions[token] = [f"{pos}{suffix}"]
            elif len(entry) < MAX_POSITIONS_PER_LEXEME:
                entry.append(f"{pos}{suffix}")
        pos = min(pos + 1, MAX_POSITION)
    return " ".join(f"{_quote_lexeme(lex)}:{','.join(pos_)}" for lex, pos_ in positions.items())


# -- MATCH → tsquery ----------------------------------------------------------

_FALSE = None  # an operand that matches nothing (an empty phrase)


def _operand(text: str, prefix: bool, column: str | None) -> str | None:
    lexemes = tokens(text)
    if not lexemes or any(len(lex.encode()) > MAX_LEXEME_BYTES for lex in lexemes):
        return _FALSE  # an empty phrase, or a word too long to have been indexed
    weight = _COLUMN_WEIGHTS.get(column or "", "")
    parts = [_quote_lexeme(lex) + (":" + weight if weight else "") for lex in lexemes]
    if prefix:
        last = _quote_lexeme(lexemes[-1])
        parts[-1] = f"{last}:*{weight}"
    if len(parts) == 1:
        return parts[0]
    return "(" + " <-> ".join(parts) + ")"


def _lex(match: str) -> list[tuple[str, str | None]]:
    """Tokens of a MATCH string: ('op', AND|OR|NOT) or ('term', tsquery operand or None)."""
    out: list[tuple[str, str | None]] = []
    column: str | None = None
    i, n = 0, len(match)
    while i < n:
        char = match[i]
        if char.isspace():
            i += 1
            continue
        if char == '"':
            j = i + 1
            buf: list[str] = []
            while j < n:
                if match[j] == '"':
                    if j + 1 < n and match[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(match[j])
                j += 1
            i = j + 1
            prefix = i < n and match[i] == "*"
            if prefix:
                i += 1
            out.append(("term", _operand("".join(buf), prefix, column)))
            column = None
            continue
        word_match = re.compile(r'[^\s"():*^+{},-]+').match(match, i)
        if word_match is None:
            i += 1  # punctuation FTS5 gives a meaning we do not need: ( ) ^ + - { } ,
            continue
        word = word_match.group()
        i = word_match.end()
        rest = match[i:].lstrip()
        if rest.startswith(":") and not rest.startswith(":*"):
            column = word.lower()
            i = n - len(rest) + 1
            continue
        if word in ("AND", "OR", "NOT"):
            out.append(("op", word))
            continue
        if word == "NEAR":
            continue
        prefix = i < n and match[i] == "*"
        if prefix:
            i += 1
        out.append(("term", _operand(word, prefix, column)))
        column = None
    return out


def match_to_tsquery(match: str) -> str | None:
    """A ``tsquery`` literal equivalent to an FTS5 MATCH string; None when nothing can match.

    Precedence is FTS5's (NOT, then AND, then OR), which is also tsquery's.
    Two operands with no operator between them are ANDed, as in FTS5.
    """
    groups: list[list[tuple[bool, str | None]]] = [[]]
    negate = False
    expect_operand = True
    for kind, value in _lex(match):
        if kind == "op":
            if value == "OR":
                groups.append([])
                negate = False
            elif value == "NOT":
                negate = True
            expect_operand = True
            continue
        if not expect_operand:
            negate = False  # implicit AND
        groups[-1].append((negate, value))
        negate = False
        expect_operand = False
    alternatives: list[str] = []
    for group in groups:
        alternative = _and_group(group)
        if alternative is not None:
            alternatives.append(alternative)
    if not alternatives:
        return None
    return " | ".join(alternatives)


def _and_group(group: Sequence[tuple[bool, str | None]]) -> str | None:
    positive: list[str] = []
    negative: list[str] = []
    for negated, operand in group:
        if operand is _FALSE:
            if negated:
                continue  # NOT (nothing) excludes nothing
            return None
        (negative if negated else positive).append(operand)
    if not positive:
        return None  # FTS5 cannot run a query made of NOT alone either
    parts = positive + ["!" + operand for operand in negative]
    return parts[0] if len(parts) == 1 else "(" + " & ".join(parts) + ")"
