"""Turn what a person typed into an :class:`~memlane.store.query.FtsQuery`.

Words are the query's ``\\w+`` runs, lower-cased and deduplicated; each unspaced
CJK run becomes its overlapping bigrams (matched against the stores' CJK bigram
index): in an "any" query each bigram on its own (a natural sentence shares
words, not the whole run, with a memory), in an "all" query the run's sequence.
A lone CJK character has no bigram (the engine falls back to LIKE). The stores
render the query in their own dialect (FTS5 MATCH, PostgreSQL tsquery), so
nothing here knows either syntax. The last word of a short query is a prefix;
the stores rank an exact match of it above a word it only begins.

For ranking, :func:`build_query` can drop English stop words (``drop_stopwords``):
"how do I configure the cache" asks for "configure" or "cache". That is both
better BM25 evidence and much cheaper: a stop word's posting list is nearly
the whole table, and full-text search scores every row an "any" query matches.
A query made only of stop words keeps them (it would otherwise match nothing).

Standard library only: this runs on the per-prompt hook path.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from memlane.store.query import FtsQuery, Term
from memlane.text import QUERY_STOPWORDS, bigrams, cjk_run_pattern, cjk_runs, has_cjk

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from memlane.store.query import Operator

_WORD = re.compile(r"\w+", re.UNICODE)
# What an apostrophe adds to a word ("I'm", "we've", "Claude's"): searched alone, "m" or
# "s" would match every memory holding any such word. Compiled on first use (~0.2 ms: the
# prompt hook loads this module, and most prompts hold no apostrophe).
_CLITIC = r"(?<=\w)['’](?:m|s|re|ve|ll|d|t)\b"
# Queries of at most this many words are treated as typed search terms: the last
# word may be unfinished, so it gets a prefix star. Longer text (a prompt, a
# question) is complete, and a star there only adds noise and cost.
PREFIX_MAX_WORDS = 3
# A prefix shorter than this would match too many words to be worth its cost.
PREFIX_MIN_CHARS = 3


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """Split a query into latin-ish words and CJK runs (both lower-cased, deduplicated)."""
    runs = cjk_runs(query)
    rest = cjk_run_pattern().sub(" ", query) if runs else query
    if "'" in rest or "’" in rest:
        rest = re.sub(_CLITIC, "", rest, flags=re.IGNORECASE)
    words: list[str] = []
    for w in _WORD.findall(rest.lower()):
        if w not in words:
            words.append(w)
    return words, list(dict.fromkeys(runs))


def content_words(words: list[str]) -> list[str]:
    """``words`` without stop words, or all of them when nothing else is left."""
    kept = [w for w in words if w not in QUERY_STOPWORDS]
    return kept or words


def build_query(
    query: str,
    *,
    operator: Operator = "any",
    prefix: bool = True,
    drop_stopwords: bool = False,
) -> FtsQuery | None:
    """The full-text query for ``query``; None when it holds nothing searchable.

    ``operator``: "all" for strict matching, "any" for broad recall. The last
    latin word is a prefix when ``prefix`` (typing-as-you-search).
    ``drop_stopwords`` removes English stop words (see the module docstring).
    """
    words, runs = query_terms(query)
    if drop_stopwords:
        words = content_words(words)
    last = len(words) - 1
    terms = tuple(
        Term(w, prefix=prefix and i == last and len(w) >= PREFIX_MIN_CHARS)
        for i, w in enumerate(words)
    )
    # A lone CJK character is no bigram; the engine falls back to LIKE for it.
    grams = tuple(tuple(bigrams(run)) for run in runs if len(run) > 1)
    if operator == "any":
        # A sentence's run holds particles and words the memory may not: any shared
        # bigram is evidence, and BM25 ranks memories by how many they share.
        grams = tuple((gram,) for gram in dict.fromkeys(g for run in grams for g in run))
    if not terms and not grams:
        return None
    return FtsQuery(terms=terms, cjk_grams=grams, operator=operator)


def ranking_query(query: str) -> FtsQuery | None:
    """The query search ranks with: any content word, a prefix only for short queries."""
    words, _ = query_terms(query)
    return build_query(
        query, operator="any", prefix=len(words) <= PREFIX_MAX_WORDS, drop_stopwords=True
    )


def unit_query(unit: str) -> FtsQuery:
    """The full-text query matching one match unit of the reranker (a word or a CJK bigram)."""
    if has_cjk(unit):
        return FtsQuery(cjk_grams=((unit,),))
    return FtsQuery(terms=(Term(unit),))


def needs_like_fallback(query: str) -> bool:
    """Queries under three characters (after trimming) are matched with LIKE."""
    return len(query.strip()) < 3


class ParsedQuery(NamedTuple):
    """A search query, understood (see :mod:`memlane.search.syntax` for operators).

    ``text``: the words to rank and embed (without operators, fields or excluded
    words). ``match``: the full-text query of keyword candidates (None when only
    filters were given, or nothing is searchable). ``types``: a ``type:``
    filter. ``structured``: the query used the syntax. ``must`` / ``must_not``:
    what every candidate, semantic ones too, must match / must not match.
    """

    text: str
    match: FtsQuery | None
    types: tuple[str, ...] | None = None
    structured: bool = False
    must: FtsQuery | None = None
    must_not: FtsQuery | None = None


def plain(query: str) -> ParsedQuery:
    """``query`` as plain text: any of its content words, ranked."""
    return ParsedQuery(text=query, match=ranking_query(query))
