"""Lexical reranking of fused candidates (DESIGN §6).

Fusion knows ranks and scores but not *how well* a text answers a query. The
reranker looks at the text of each candidate and measures, each in 0..1:

* ``coverage``  — fraction of the query's terms present in the text (a term
                  present only as the prefix of longer words counts half);
* ``density``   — √(share of the text's terms that are query terms): short focused
                  texts beat long ones that mention a term once;
* ``proximity`` — matched distinct terms / length of the smallest window holding
                  them all (1.0 when adjacent; 0 when fewer than two terms match);
* ``phrase``    — 1.0 when the whole query occurs as a phrase, else half the share
                  of the query's adjacent term pairs that occur adjacent in the text.

Text is split into *units*: lower-cased words (``memlane.text.WORD``: an identifier
is its parts, as the full-text index splits it; a camelCase one is followed by its
parts, ``memlane.text.words``), and overlapping bigrams of each
unspaced CJK run (``memlane.text.bigrams``), so the same measures work for
"sqlite wal mode" and for "設定ファイル" (its bigrams 設定, 定フ, ファ, …). For
coverage and proximity, common English stop words are dropped from the query
(unless nothing else is left) and a query word of 4+ characters also matches a
text word it prefixes ("config" ↔ "configuration"), for half the coverage of an
exact match.

The new score is ``fused × (1 + Σ weight·feature)``: multiplicative so it works on
any fused scale (RRF's ~0.03 or convex's 0..1) and never reorders two candidates
with identical text evidence.

Standard library only (+ ``memlane.text``): this runs on the per-prompt path.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memlane.text import FUNCTION_WORDS, WORD, bigrams, cjk_run_pattern, has_cjk, words

T = TypeVar("T")

_PREFIX_MIN = 4
# Texts whose units are kept (see cached_units). A worker reranks the same memories
# prompt after prompt: over the coding-recall questions 11 of 12 candidate texts
# had been reranked for an earlier question. Each entry holds the text and a tuple
# of shared (interned) words: ~1.5 KB for a 600-character memory.
UNITS_CACHE_SIZE = 2048


def units(text: str, *, identifiers: bool = True) -> list[str]:
    """Split text into match units: lower-cased words and CJK-run bigrams, in order.

    With ``identifiers`` a camelCase identifier is followed by its parts, as the index
    holds it (``memlane.text.words``); a query is taken as typed: "SQLite" asks for
    that word, not for "sq" and "lite".
    """
    found = words(text) if identifiers else WORD.findall(text.lower())
    if not has_cjk(text):
        return found  # the common case, without per-word checks
    out: list[str] = []
    for token in found:
        if not has_cjk(token):
            out.append(token)
            continue
        pos = 0
        for run in cjk_run_pattern().finditer(token):
            if run.start() > pos:
                out.append(token[pos : run.start()])
            out.extend(bigrams(run.group()))
            pos = run.end()
        if pos < len(token):
            out.append(token[pos:])
    return out


@functools.lru_cache(maxsize=UNITS_CACHE_SIZE)
def cached_units(text: str) -> tuple[str, ...]:
    """:func:`units` of ``text``, remembered for the :data:`UNITS_CACHE_SIZE` texts
    used last (a text is its own key: a changed memory is a new text)."""
    return tuple(map(sys.intern, units(text)))


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A query prepared once for many candidates (see :func:`prepare_query`)."""

    sequence: tuple[str, ...]  # every unit in order, stop words included (phrases)
    terms: tuple[str, ...]  # distinct content units (coverage, proximity, density)
    sequence_set: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    # Exact set, (length, prefix → term) tables and query order, for term_of.
    exact: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    by_size: tuple[tuple[int, dict[str, str]], ...] = field(default=(), compare=False, repr=False)
    order: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # The first _PREFIX_MIN characters of every prefix-matched term: a unit that
    # starts otherwise and is no exact term matches nothing (decided without term_of).
    heads: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    # Which term each text unit seen so far matches (None: none): shared by every
    # candidate reranked for this query, so each distinct word is resolved once.
    resolved: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def term_of(self, unit: str) -> str | None:
        """The first query term (in query order) that ``unit`` matches, if any."""
        found = self.resolved.get(unit, "")
        if found != "":
            return found
        order = self.order
        match: str | None = unit if unit in self.exact else None
        for size, table in self.by_size:
            if len(unit) > size:
                term = table.get(unit[:size])
                if term is not None and (match is None or order[term] < order[match]):
                    match = term
        self.resolved[unit] = match
        return match


def prepare_query(query: str) -> QueryTerms:
    """Units of ``query``: the full sequence and the distinct content terms."""
    sequence = tuple(units(query, identifiers=False))
    content = [u for u in sequence if u not in FUNCTION_WORDS] or list(sequence)
    terms = tuple(dict.fromkeys(content))
    by_size: dict[int, dict[str, str]] = {}
    for term in terms:
        if len(term) >= _PREFIX_MIN and not has_cjk(term):
            by_size.setdefault(len(term), {})[term] = term
    return QueryTerms(
        sequence=sequence,
        terms=terms,
        sequence_set=frozenset(sequence),
        exact=frozenset(terms),
        by_size=tuple(sorted(by_size.items())),
        order={term: i for i, term in enumerate(terms)},
        heads=frozenset(term[:_PREFIX_MIN] for table in by_size.values() for term in table),
    )


def _matches(term: str, unit: str) -> bool:
    if unit == term:
        return True
    return len(term) >= _PREFIX_MIN and unit.startswith(term) and not has_cjk(term)


@dataclass(frozen=True, slots=True)
class TextFeatures:
    """How well one text answers one query; the four measures are in 0..1.

    ``length``: the text's units; ``counts``: how often each query term
    (``QueryTerms.terms``, in order) occurs in it, and ``whole``: whether it occurs
    as a whole word (False: only as the start of longer words) — what
    :mod:`memlane.search.bm25` weighs.
    """

    coverage: float = 0.0
    density: float = 0.0
    proximity: float = 0.0
    phrase: float = 0.0
    length: int = 0
    counts: tuple[int, ...] = ()
    whole: tuple[bool, ...] = ()


def _min_window(positions: dict[str, list[int]]) -> int:
    """Length (in units) of the smallest window holding one position of each term."""
    events = sorted((pos, term) for term, plist in positions.items() for pos in plist)
    need = len(positions)
    counts: dict[str, int] = {}
    have = 0
    best = math.inf
    left = 0
    for right_pos, term in events:
        counts[term] = counts.get(term, 0) + 1
        if counts[term] == 1:
            have += 1
        while have == need:
            left_pos, left_term = events[left]
            best = min(best, right_pos - left_pos + 1)
            counts[left_term] -= 1
            if counts[left_term] == 0:
                have -= 1
            left += 1
    return int(best)


def _contains_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    first = needle[0]
    return any(
        haystack[i] == first and tuple(haystack[i : i + n]) == tuple(needle)
        for i in range(len(haystack) - n + 1)
    )


def text_features(query: QueryTerms | str, text: str) -> TextFeatures:
    """Measure ``text`` against ``query`` (a string or a prepared :class:`QueryTerms`)."""
    q = prepare_query(query) if isinstance(query, str) else query
    if not q.terms:
        return TextFeatures()
    text_units = cached_units(text)
    if not text_units:
        return TextFeatures()

    resolved = q.resolved
    exact_terms, heads = q.exact, q.heads
    for unit in set(text_units).difference(resolved):
        if unit in exact_terms or unit[:_PREFIX_MIN] in heads:
            q.term_of(unit)
        else:
            resolved[unit] = None
    get = resolved.get
    matched = [(i, term) for i, unit in enumerate(text_units) if (term := get(unit)) is not None]
    positions: dict[str, list[int]] = {}
    for i, term in matched:
        positions.setdefault(term, []).append(i)
    occurrences = len(matched)

    # A term found only as the start of longer words counts half: exact matches first.
    exact = {term for i, term in matched if text_units[i] == term}
    coverage = (len(exact) + 0.5 * (len(positions) - len(exact))) / len(q.terms)
    density = math.sqrt(min(1.0, occurrences / len(text_units)))
    proximity = 0.0
    if len(positions) >= 2:
        proximity = len(positions) / _min_window(positions)

    phrase = 0.0
    seq = q.sequence
    if len(seq) >= 2:
        # Only positions of the query's own units matter: gather them once (C speed)
        # instead of scanning every window of the text.
        wanted = q.sequence_set
        at: dict[str, list[int]] = {}
        for i, unit in [(i, u) for i, u in enumerate(text_units) if u in wanted]:
            at.setdefault(unit, []).append(i)
        n = len(text_units)
        if all(unit in at for unit in seq) and any(
            tuple(text_units[i : i + len(seq)]) == seq for i in at[seq[0]] if i + len(seq) <= n
        ):
            phrase = 1.0
        else:
            pairs = list(itertools.pairwise(seq))
            adjacent = sum(
                1
                for a, b in pairs
                if a in at and b in at and any(i + 1 < n and text_units[i + 1] == b for i in at[a])
            )
            phrase = 0.5 * adjacent / len(pairs)
    return TextFeatures(
        coverage=coverage,
        density=density,
        proximity=proximity,
        phrase=phrase,
        length=len(text_units),
        counts=tuple(len(positions.get(term, ())) for term in q.terms),
        whole=tuple(term in exact for term in q.terms),
    )


@dataclass(frozen=True, slots=True)
class RerankWeights:
    """Weights of each feature in ``fused × (1 + Σ weight·feature)``.

    Defaults favour coverage (answering every part of the query), then the exact
    phrase, proximity and density. Starting points for the retrieval benchmark.
    """

    coverage: float = 0.5
    phrase: float = 0.25
    proximity: float = 0.15
    density: float = 0.1


def default_text(item: Any) -> str:
    """The text of a candidate: ``title`` and ``content`` (Memory, SearchHit…)."""
    title = getattr(item, "title", "") or ""
    content = getattr(item, "content", "") or ""
    return f"{title}\n{content}" if title else str(content)


def rerank(
    query: str,
    hits: Sequence[tuple[T, float]],
    *,
    weights: RerankWeights = RerankWeights(),
    text_of: Callable[[T], str] = default_text,
) -> list[tuple[T, float]]:
    """Rescore candidates by their text and return ``(item, score)`` best first.

    ``hits`` are ``(candidate, fused_score)`` pairs (fused scores ≥ 0, higher is
    better), e.g. ``Memory`` objects with their RRF score. ``text_of`` gives the
    text to match (default: title + content). The sort is stable: equal new scores
    keep their input order. A query with no units (empty, punctuation only) adds no
    boost: the result is the input sorted by fused score.
    """
    q = prepare_query(query)
    rescored: list[tuple[T, float]] = []
    for item, fused in hits:
        f = text_features(q, text_of(item))
        boost = (
            weights.coverage * f.coverage
            + weights.phrase * f.phrase
            + weights.proximity * f.proximity
            + weights.density * f.density
        )
        rescored.append((item, fused * (1.0 + boost)))
    rescored.sort(key=lambda pair: -pair[1])
    return rescored
