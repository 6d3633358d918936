"""A full-text query in domain terms; each store renders it in its own dialect.

``search/fts.py`` builds an :class:`FtsQuery` from what a person typed, and
``Store.fts_candidates`` takes it. The SQLite store renders it as an FTS5
MATCH expression, the PostgreSQL store as a ``tsquery``; neither parses the
other's syntax, and no query text can make either fail to parse, because every
word travels as data, never as syntax.

A query is a list of *clauses*, joined by its ``operator`` ("any": a memory
matching one clause qualifies, and BM25 ranks those matching more clauses
higher; "all": every clause must match), plus ``required`` clauses, minus
``excluded`` ones. A memory must match every required clause; when there is
one, the other clauses no longer select, they only rank (memories holding more
of them first). Clauses:

* :class:`Term` — one word, matched exactly or, with ``prefix``, as the start
  of a word (an exact match ranks above a word it only begins);
* :class:`Phrase` — words that must occur adjacent and in order;
* :class:`Grams` (``cjk_grams``) — the overlapping bigrams of one unspaced CJK
  run, matched as a sequence against the stores' CJK bigram index (see
  ``memlane.text``); a single bigram is one CJK word-piece;
* :class:`AnyOf` — alternatives, matching when one of them does (a required
  ``a OR b``).

A word is matched the way the store tokenizes documents: if its tokenizer
splits a word ("app_main"), the parts must occur adjacent, as in a phrase.
A term or phrase may be restricted to one ``field`` of :data:`FIELDS` (the
title, or the linked file paths); a store maps it to a column (FTS5 column
filter) or a weight label (tsvector). CJK grams are matched over title and
content together. ``type:`` restricts a memory column and belongs in
:class:`~memlane.models.MemoryFilter`.

Standard library only: this is on the per-prompt hook path. The clauses are
named tuples: a dataclass costs ~20 times more to define at import, and the
per-prompt path already imports ``typing`` (``search/rerank.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Operator = Literal["any", "all"]

OPERATORS: tuple[Operator, ...] = ("any", "all")
# Fields a term or phrase can be restricted to: the title, the linked file paths.
FIELDS: tuple[str, ...] = ("title", "files")


class Term(NamedTuple):
    """One word; with ``prefix`` any word that starts with it matches too."""

    text: str
    prefix: bool = False
    field: str | None = None


class Phrase(NamedTuple):
    """Words that must occur adjacent and in this order."""

    words: tuple[str, ...]
    field: str | None = None


class Grams(NamedTuple):
    """The bigrams of one CJK run, in order: they must occur as this sequence."""

    grams: tuple[str, ...]


class AnyOf(NamedTuple):
    """Alternatives: the clause matches when one of ``options`` does."""

    options: tuple[Term | Phrase | Grams, ...]


Clause = Term | Phrase | Grams | AnyOf


@dataclass(frozen=True, slots=True)
class FtsQuery:
    """What to match (see the module docstring); build one with ``search.fts``."""

    terms: tuple[Term, ...] = ()
    phrases: tuple[Phrase, ...] = ()
    cjk_grams: tuple[tuple[str, ...], ...] = ()
    operator: Operator = "any"
    excluded: tuple[Term | Phrase | Grams, ...] = ()
    required: tuple[Clause, ...] = ()

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise ValueError(f"unknown operator {self.operator!r} (any or all)")
        clauses = (*self.terms, *self.phrases, *self.excluded, *self.required)
        for clause in clauses:
            options = clause.options if isinstance(clause, AnyOf) else (clause,)
            for option in options:
                field = getattr(option, "field", None)
                if field is not None and field not in FIELDS:
                    raise ValueError(f"unknown field {field!r} ({', '.join(FIELDS)})")

    @property
    def clauses(self) -> tuple[Term | Phrase | Grams, ...]:
        """The clauses joined by ``operator``, in a fixed order: terms, phrases, grams."""
        grams = tuple(Grams(tuple(g)) for g in self.cjk_grams)
        return (*self.terms, *self.phrases, *grams)

    @property
    def empty(self) -> bool:
        """True when there is no clause to match (excluded terms alone match nothing)."""
        return not (self.terms or self.phrases or self.cjk_grams or self.required)
