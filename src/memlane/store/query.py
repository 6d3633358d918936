"""A full-text query in domain terms; each store renders it in its own dialect.

``search/fts.py`` builds an :class:`FtsQuery` from what a person typed, and
``Store.fts_candidates`` takes it. The SQLite store renders it as an FTS5
MATCH expression, the PostgreSQL store as a ``tsquery``; neither parses the
other's syntax, and no query text can make either fail to parse, because every
word travels as data, never as syntax.

A query is a list of *clauses*, joined by its ``operator`` ("any": a memory
matching one clause qualifies, and BM25 ranks those matching more clauses
higher; "all": every clause must match), minus ``excluded`` terms:

* :class:`Term` — one word, matched exactly or, with ``prefix``, as the start
  of a word;
* :class:`Phrase` — words that must occur adjacent and in order;
* CJK grams — the overlapping bigrams of one unspaced CJK run, matched as a
  sequence against the stores' CJK bigram index (see ``memlane.text``).

A word is matched the way the store tokenizes documents: if its tokenizer
splits a word ("app_main"), the parts must occur adjacent, as in a phrase.

Room to grow: a field restriction (``title:``, ``file:``) is a ``field``
attribute on :class:`Term` and :class:`Phrase`, which a store maps to a column
(FTS5 column filter) or a weight label (tsvector); ``type:`` restricts a
memory column and belongs in :class:`~memlane.models.MemoryFilter`.

Standard library only: this is on the per-prompt hook path. Term and Phrase
are named tuples: a dataclass costs ~20 times more to define at import, and
the per-prompt path already imports ``typing`` (``search/rerank.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Operator = Literal["any", "all"]

OPERATORS: tuple[Operator, ...] = ("any", "all")


class Term(NamedTuple):
    """One word; with ``prefix`` any word that starts with it matches too."""

    text: str
    prefix: bool = False


class Phrase(NamedTuple):
    """Words that must occur adjacent and in this order."""

    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FtsQuery:
    """What to match (see the module docstring); build one with ``search.fts``."""

    terms: tuple[Term, ...] = ()
    phrases: tuple[Phrase, ...] = ()
    cjk_grams: tuple[tuple[str, ...], ...] = ()
    operator: Operator = "any"
    excluded: tuple[Term, ...] = ()

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise ValueError(f"unknown operator {self.operator!r} (any or all)")

    @property
    def empty(self) -> bool:
        """True when there is no clause to match (excluded terms alone match nothing)."""
        return not (self.terms or self.phrases or self.cjk_grams)
