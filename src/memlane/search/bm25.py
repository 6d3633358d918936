"""Keyword evidence: how much of a query's BM25 weight a text carries, in 0..1.

Keyword mode has no cosine, so its absolute text evidence (what makes a score
mean the same for every query, see ``search/engine.py``) is lexical. Counting
the share of the query's words a text contains treats "many" like "grandma",
and a 400-word reply that mentions each common word once like a short turn
that states the fact: it re-sorted the full-text ranking and put memlane's
keyword mode below a textbook BM25 on LongMemEval. So the evidence is BM25's
own measure, made absolute:

    share = min(1, Σ idf(t) · tf_weight(t) / Σ idf(t))

over the query's searched words ``t``. ``idf`` is Okapi BM25's inverse document
frequency in Lucene's never-negative form, from the store's counts (a word in
few memories weighs more); ``tf_weight`` is BM25's term-frequency factor,
``tf·(k1+1) / (tf + k1·(1 - b + b·length/average))`` — 1 for one mention in a
text of average length, less in a longer text, more for repeated mentions or a
shorter text, up to k1+1 — halved for a word found only as the start of longer
words. ``average`` is the mean length of the texts ranked for the query. A text
holding every word once at average length scores 1.

:func:`score` (the sum before it is divided and capped) is also the rank position
of keyword candidates on a store whose full-text score is not BM25 (PostgreSQL's
``ts_rank_cd``: ``Store.ranks_by_bm25``).

Standard library only: this runs on the per-prompt path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memlane.search.rerank import TextFeatures

K1 = 1.2
B = 0.75


def idf(documents: int, matching: int) -> float:
    """Okapi BM25's idf, ``log(1 + (N - n + 0.5) / (n + 0.5))`` (never negative)."""
    n = min(max(matching, 0), max(documents, 0))
    return math.log(1.0 + (max(documents, n) - n + 0.5) / (n + 0.5))


def tf_weight(count: int, length: int, average: float) -> float:
    """BM25's term-frequency factor: 1.0 for one mention at ``average`` length, 0 for none."""
    if count <= 0:
        return 0.0
    relative = length / average if average > 0 else 1.0
    return count * (K1 + 1) / (count + K1 * (1 - B + B * relative))


def score(features: TextFeatures, weights: Sequence[float], average: float) -> float:
    """The text's BM25 score: ``Σ idf · tf_weight`` (a prefix-only match counts half).

    ``weights``: the idf of each query term (``features.counts`` order; 0 for a
    word the query did not search); ``average``: the reference text length.
    """
    carried = 0.0
    for weight, count, whole in zip(weights, features.counts, features.whole, strict=True):
        if weight > 0 and count > 0:
            factor = tf_weight(count, features.length, average)
            carried += weight * (factor if whole else 0.5 * factor)
    return carried


def share(features: TextFeatures, weights: Sequence[float], average: float) -> float:
    """The share of the query's BM25 weight ``features`` carry, ``min(1, score / Σ idf)``."""
    total = sum(weights)
    if total <= 0 or not features.counts:
        return 0.0
    return min(1.0, score(features, weights, average) / total)
