"""Turn a user's query into a safe FTS5 MATCH expression.

Every term is emitted as a double-quoted FTS5 string (embedded quotes doubled),
so no query text, however hostile, can raise an FTS syntax error. CJK runs are
matched as phrases of overlapping bigrams against the ``cjk_terms`` column.

For ranking, :func:`build_match` can drop English stop words (``drop_stopwords``):
"how do I configure the cache" becomes ``"configure" OR "cache"``. That is both
better BM25 evidence and much cheaper: a stop word's posting list is nearly
the whole table, and FTS5 scores every row an OR query matches. A query made
only of stop words keeps them (it would otherwise match nothing).

The same MATCH syntax is understood by the PostgreSQL store (``pg_text``).
Standard library only: this runs on the per-prompt hook path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memlane.text import QUERY_STOPWORDS, bigrams, cjk_run_pattern, cjk_runs

_WORD = re.compile(r"\w+", re.UNICODE)
# Queries of at most this many words are treated as typed search terms: the last
# word may be unfinished, so it gets a prefix star. Longer text (a prompt, a
# question) is complete, and a star there only adds noise and cost.
PREFIX_MAX_WORDS = 3


@dataclass(frozen=True, slots=True)
class FtsQuery:
    """A MATCH expression plus the plain terms it was built from."""

    match: str
    terms: tuple[str, ...]
    cjk_terms: tuple[str, ...]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """Split a query into latin-ish words and CJK runs (both lower-cased, deduplicated)."""
    runs = cjk_runs(query)
    rest = cjk_run_pattern().sub(" ", query) if runs else query
    words: list[str] = []
    for w in _WORD.findall(rest.lower()):
        if w not in words:
            words.append(w)
    return words, list(dict.fromkeys(runs))


def content_words(words: list[str]) -> list[str]:
    """``words`` without stop words, or all of them when nothing else is left."""
    kept = [w for w in words if w not in QUERY_STOPWORDS]
    return kept or words


def build_match(
    query: str,
    *,
    operator: str = "OR",
    prefix: bool = True,
    drop_stopwords: bool = False,
) -> FtsQuery | None:
    """Build a MATCH expression; None when the query holds nothing searchable.

    ``operator`` joins terms ("AND" for strict, "OR" for broad recall). The
    last latin word gets a prefix star when ``prefix`` (typing-as-you-search).
    ``drop_stopwords`` removes English stop words (see the module docstring).
    """
    words, runs = query_terms(query)
    if drop_stopwords:
        words = content_words(words)
    parts: list[str] = []
    for i, w in enumerate(words):
        star = "*" if prefix and i == len(words) - 1 and len(w) >= 3 else ""
        parts.append(_quote(w) + star)
    for run in runs:
        grams = bigrams(run)
        if len(grams) == 1 and len(run) == 1:
            # A single CJK character is no bigram; the caller falls back to LIKE.
            continue
        parts.append("cjk_terms : " + _quote(" ".join(grams)))
    if not parts:
        return None
    joiner = f" {operator} "
    return FtsQuery(match=joiner.join(parts), terms=tuple(words), cjk_terms=tuple(runs))


def ranking_match(query: str) -> FtsQuery | None:
    """The MATCH expression search uses: OR of content words, a star only for short queries."""
    words, _ = query_terms(query)
    return build_match(
        query, operator="OR", prefix=len(words) <= PREFIX_MAX_WORDS, drop_stopwords=True
    )


def needs_like_fallback(query: str) -> bool:
    """Queries under three characters (after trimming) are matched with LIKE."""
    return len(query.strip()) < 3
