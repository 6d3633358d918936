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

:func:`to_tsquery` renders a :class:`~memlane.store.query.FtsQuery` as a
``tsquery`` literal: each word is tokenized like documents (a word of several
tokens becomes a ``<->`` phrase), a prefix term is ``('w' | 'w':*)`` (the
exact word ranks first), a CJK bigram sequence is a phrase restricted to
weight ``C``, a field restriction is the field's weight label. A word that
cannot have been indexed (no token, or too long) matches nothing, as an empty
phrase does in FTS5.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memlane.store.query import AnyOf, FtsQuery, Grams, Phrase, Term
from memlane.text import index_terms

_TOKEN = re.compile(r"[^\W_]+")
# tsvector limits: lexeme < 2 KiB, positions 1..16383, 256 positions per lexeme, 1 MiB total.
MAX_LEXEME_BYTES = 2046
MAX_POSITION = 16383
MAX_POSITIONS_PER_LEXEME = 256
MAX_VECTOR_BYTES = 900_000
# ts_rank_cd weights in PostgreSQL's order {D, C, B, A}.
RANK_WEIGHTS = "{0.3333,0.3333,0.6667,1.0}"
CJK_WEIGHT = "C"


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
        (CJK_WEIGHT, index_terms(f"{title}\n{content}")),
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


# -- FtsQuery → tsquery -------------------------------------------------------

# Weight labels of the fields a clause may be restricted to. One label holds both
# the files and the tags (the tsvector has four labels for five FTS5 columns), so
# ``files`` also matches a tag here.
FIELD_WEIGHTS = {"title": "A", "files": "B"}


def _operand(text: str, prefix: bool, weight: str = "") -> str | None:
    """One word or phrase as a tsquery operand; None when it cannot match anything.

    A prefix matches the word itself or any word it begins, the exact word
    twice: it ranks above a word it only begins, as in FTS5.
    """
    lexemes = tokens(text)
    if not lexemes or any(len(lex.encode()) > MAX_LEXEME_BYTES for lex in lexemes):
        return None
    label = ":" + weight if weight else ""
    parts = [_quote_lexeme(lex) + label for lex in lexemes]
    exact = parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"
    if not prefix:
        return exact
    parts[-1] = f"{_quote_lexeme(lexemes[-1])}:*{weight}"
    begins = parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"
    return f"({exact} | {begins})"


def _clause(clause: Term | Phrase | Grams | AnyOf) -> str | None:
    """One clause as a tsquery operand; None when it cannot match anything."""
    if isinstance(clause, AnyOf):
        options = [op for op in map(_clause, clause.options) if op is not None]
        if len(options) <= 1:
            return options[0] if options else None
        return "(" + " | ".join(options) + ")"
    if isinstance(clause, Grams):
        return _operand(" ".join(clause.grams), False, CJK_WEIGHT)
    weight = FIELD_WEIGHTS[clause.field] if clause.field else ""
    if isinstance(clause, Phrase):
        return _operand(" ".join(clause.words), False, weight)
    return _operand(clause.text, clause.prefix, weight)


def _conjunction(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else "(" + " & ".join(parts) + ")"


def to_tsquery(query: FtsQuery) -> str | None:
    """The ``tsquery`` literal of ``query``; None when nothing can match.

    "any" drops clauses that cannot match; "all" cannot match if one of them
    cannot. Excluded clauses that cannot match exclude nothing.
    """
    if query.empty:
        return None
    operands = [_clause(clause) for clause in query.clauses]
    negated = ["!" + op for op in map(_clause, query.excluded) if op is not None]
    kept = [operand for operand in operands if operand is not None]
    if query.operator == "all" and len(kept) < len(operands):
        return None
    joined = (" & " if query.operator == "all" else " | ").join(kept)
    selecting = joined if len(kept) <= 1 else f"({joined})"
    if query.required:
        required = [_clause(clause) for clause in query.required]
        if any(operand is None for operand in required):
            return None
        parts = [operand for operand in required if operand is not None]
        if kept:
            # Ranked, not selecting: "first required | the others" adds them to the rank.
            parts.append(f"({parts[0]} | {selecting})")
    elif not kept:
        return None
    else:
        parts = [selecting if negated or query.operator == "all" else joined]
    return _conjunction(parts + negated)
