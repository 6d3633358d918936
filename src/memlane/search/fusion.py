"""Fuse a keyword ranking and a semantic ranking into one (DESIGN §6).

Two families, so the retrieval benchmark can choose rather than taste:

* ``"rrf"`` — reciprocal rank fusion: ``Σ wᵢ / (k + rankᵢ)``. Uses ranks only, so
  BM25 and cosine never need to share a scale. The default (k = 60).
* ``"convex"`` — min-max normalize each list's scores to 0..1, then
  ``α·keyword + (1-α)·semantic`` (a document missing from a list gets 0 there).
  Uses score gaps, which RRF throws away.
* ``"dbsf"`` — distribution-based score fusion: each list's scores are mapped to
  0..1 through ``mean ± 3σ`` of that list, then combined like ``convex``. Less
  sensitive than min-max to one extreme score.

Inputs are ``(id, score)`` pairs where **higher is better** (negate FTS5's
``bm25()``, which is lower-is-better). Lists need not be sorted; each is ordered
by score (stable, so equal scores keep their input order) before ranks are taken.
Output is ``(id, fused)`` sorted best first; ties go to the better best-rank, then
the smaller id, so results are deterministic.

Standard library only: this runs on the per-prompt path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

DEFAULT_RRF_K = 60

Scored = list[tuple[int, float]]


def rrf(
    rankings: Sequence[Sequence[int]],
    k: int = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
) -> dict[int, float]:
    """Reciprocal rank fusion of ranked id lists (best first).

    ``score(d) = Σᵢ weights[i] / (k + rankᵢ(d))`` with ranks starting at 1; a list
    that does not contain ``d`` adds nothing. A duplicate id inside one list counts
    at its first (best) position only. ``weights`` defaults to 1.0 per list.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k!r}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights given for {len(rankings)} rankings")
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[int] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return fused


def _ordered(scored: Sequence[tuple[int, float]]) -> Scored:
    """Sort best first (stable) and keep the first occurrence of each id."""
    out: Scored = []
    seen: set[int] = set()
    for doc, score in sorted(scored, key=lambda pair: -pair[1]):
        if doc not in seen:
            seen.add(doc)
            out.append((doc, float(score)))
    return out


def minmax(scored: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scores mapped linearly to 0..1 (best → 1, worst → 0; all equal → all 1.0)."""
    items = _ordered(scored)
    if not items:
        return {}
    hi = items[0][1]
    lo = items[-1][1]
    span = hi - lo
    if span <= 0 or not math.isfinite(span):
        return {doc: 1.0 for doc, _ in items}
    return {doc: (score - lo) / span for doc, score in items}


def zscore_unit(scored: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Scores mapped to 0..1 through ``[mean - 3σ, mean + 3σ]`` (clamped).

    One item or zero variance maps everything to 1.0 (nothing to tell apart).
    """
    items = _ordered(scored)
    if not items:
        return {}
    values = [score for _, score in items]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    sigma = math.sqrt(var)
    if sigma <= 0 or not math.isfinite(sigma):
        return {doc: 1.0 for doc, _ in items}
    lo = mean - 3 * sigma
    span = 6 * sigma
    return {doc: min(1.0, max(0.0, (score - lo) / span)) for doc, score in items}


def _best_ranks(*lists: Scored) -> dict[int, int]:
    best: dict[int, int] = {}
    for items in lists:
        for rank, (doc, _) in enumerate(items):
            if rank < best.get(doc, rank + 1):
                best[doc] = rank
    return best


def _sorted(fused: dict[int, float], best_rank: dict[int, int]) -> Scored:
    return sorted(fused.items(), key=lambda pair: (-pair[1], best_rank[pair[0]], pair[0]))


def _fuse_rrf(
    keyword: Scored,
    semantic: Scored,
    *,
    k: int = DEFAULT_RRF_K,
    keyword_weight: float = 1.0,
    semantic_weight: float = 1.0,
) -> Scored:
    kw, sem = _ordered(keyword), _ordered(semantic)
    fused = rrf(
        [[doc for doc, _ in kw], [doc for doc, _ in sem]],
        k=k,
        weights=[keyword_weight, semantic_weight],
    )
    return _sorted(fused, _best_ranks(kw, sem))


def _convex_with(
    normalize: Callable[[Sequence[tuple[int, float]]], dict[int, float]],
) -> Callable[..., Scored]:
    def fuse_normalized(keyword: Scored, semantic: Scored, *, alpha: float = 0.5) -> Scored:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        kw_norm, sem_norm = normalize(keyword), normalize(semantic)
        fused = {
            doc: alpha * kw_norm.get(doc, 0.0) + (1 - alpha) * sem_norm.get(doc, 0.0)
            for doc in kw_norm.keys() | sem_norm.keys()
        }
        return _sorted(fused, _best_ranks(_ordered(keyword), _ordered(semantic)))

    return fuse_normalized


_METHODS: dict[str, Callable[..., Scored]] = {
    "rrf": _fuse_rrf,
    "convex": _convex_with(minmax),
    "dbsf": _convex_with(zscore_unit),
}
METHODS: tuple[str, ...] = tuple(_METHODS)


def fuse(
    method: str,
    keyword: Sequence[tuple[int, float]],
    semantic: Sequence[tuple[int, float]],
    **params: float,
) -> Scored:
    """Fuse keyword and semantic ``(id, score)`` lists (higher is better) into one.

    ``method`` and its ``params``:

    * ``"rrf"``: ``k`` (default 60), ``keyword_weight``, ``semantic_weight`` (1.0 each);
    * ``"convex"`` / ``"dbsf"``: ``alpha`` — weight of the keyword side (default 0.5).

    Either list may be empty (keyword-only or semantic-only search), in which case
    the result is the other list's order. Returns ``(id, fused_score)`` best first.
    Fused scores are comparable only within one call and one method.
    """
    try:
        impl = _METHODS[method]
    except KeyError:
        raise ValueError(
            f"unknown fusion method {method!r}; choose one of {', '.join(METHODS)}"
        ) from None
    if "k" in params:
        params["k"] = int(params["k"])
    return impl(list(keyword), list(semantic), **params)
