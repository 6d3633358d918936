"""The search engine behind ``Memory.search``: candidates → scores → hits.

Foundation version: keyword mode (FTS5 BM25, LIKE under three characters)
with a recency signal and project scopes. Hybrid fusion, reranking and the
shared scoring signals plug in here (issue 4) behind the same signature.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memlane.models import Memory, MemoryFilter, SearchHit, to_epoch, utcnow
from memlane.search.fts import build_match, needs_like_fallback
from memlane.store.base import Store

CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    projects: tuple[str, ...] | None
    limit: int = 10
    mode: str = "keyword"
    as_of: datetime | None = None
    kinds: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    since: datetime | None = None
    half_life_days: float = 30.0


def keyword_candidates(
    store: Store, query: str, flt: MemoryFilter, limit: int
) -> list[tuple[int, float]]:
    """(id, bm25-like score) for ``query``; LIKE for very short queries."""
    if needs_like_fallback(query):
        needle = query.strip()
        return store.like_candidates(needle, flt, limit) if needle else []
    fts = build_match(query, operator="OR")
    if fts is None:
        return []
    found = store.fts_candidates(fts.match, flt, limit)
    if not found and len(query.strip()) >= 3:
        # e.g. a lone CJK character inside a longer query: fall back to substring match.
        found = store.like_candidates(query.strip(), flt, limit)
    return found


def recency(age_seconds: float, half_life_days: float) -> float:
    return math.exp(-math.log(2) * max(age_seconds, 0.0) / (half_life_days * 86400.0))


def run_search(store: Store, request: SearchRequest) -> list[SearchHit]:
    """Keyword search over the request's projects, newest-aware."""
    flt = MemoryFilter(
        projects=request.projects,
        kinds=request.kinds,
        types=request.types,
        created_after=request.since,
        created_before=request.as_of,
    )
    candidates = keyword_candidates(store, request.query, flt, CANDIDATES)
    if not candidates:
        return []
    top = max(score for _, score in candidates) or 1.0
    memories = {m.id: m for m in store.get_memories([mid for mid, _ in candidates])}
    now = to_epoch(request.as_of or utcnow())
    scored: list[tuple[float, Memory]] = []
    for mid, raw in candidates:
        memory = memories.get(mid)
        if memory is None:
            continue
        relevance = raw / top if top > 0 else 0.0
        fresh = recency(now - to_epoch(memory.created_at), request.half_life_days)
        scored.append((0.85 * relevance + 0.15 * fresh, memory))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return [to_hit(memory, score) for score, memory in scored[: request.limit]]


def to_hit(memory: Memory, score: float) -> SearchHit:
    return SearchHit(
        id=memory.id,
        project=memory.project,
        kind=memory.kind,
        type=memory.type,
        title=memory.title,
        content=memory.content,
        created_at=memory.created_at,
        score=round(score, 6),
        source_id=memory.source_id,
        session_id=memory.session_id,
        files=memory.files,
        stale=memory.stale,
    )


def tiered(
    store: Store,
    request: SearchRequest,
    project: str,
    penalty: float,
    others: Sequence[str],
) -> list[SearchHit]:
    """Current project first; other projects' hits scaled by ``penalty`` and tagged."""
    own = run_search(store, replace(request, projects=(project,)))
    if not others:
        return own
    foreign = run_search(store, replace(request, projects=tuple(others)))
    merged = own + [
        replace(hit, score=round(hit.score * penalty, 6), from_project=hit.project)
        for hit in foreign
    ]
    merged.sort(key=lambda hit: hit.score, reverse=True)
    return merged[: request.limit]
