"""The search engine behind ``Memory.search`` / ``recall``: candidates → fusion → scores → hits.

One request flows through five steps (DESIGN §6):

1. **Candidates.** Keyword: the store's BM25 over any of the query's content
   words (stop words dropped; a prefix only for short typed queries; LIKE under
   three characters). Semantic: cosine top-k over the vectors of the configured
   embedder (a persisted :class:`~memlane.search.vectors.VectorTable` kept in step
   with the store's change log — exact below ``ANN_THRESHOLD`` rows, an HNSW graph
   with exact re-scoring above — or ``store.vector_candidates`` when the store
   keeps its own vector index).
   Each list is bounded (``Ranking.candidates``). Filters — project, kind,
   type, ``since``, ``as_of`` — are applied inside both candidate queries.
2. **Fusion** of the two lists (``calibrated`` by default, or ``rrf``: the
   request's ``fusion``): BM25 relative to the best match and the calibrated
   cosine, mixed 0.2 / 0.8 (chosen on LongMemEval dev150 over RRF, min-max and
   z-score fusion; see :class:`Ranking`).
3. **Scores.** Each candidate gets an *absolute* relevance in 0..1 so that
   ``min_relevance_score`` means the same thing for every query: the geometric
   blend of its fused rank position (relative) and its text evidence
   (absolute: the share of the query's content words it contains, or its
   calibrated cosine, whichever is stronger). The lexical reranker
   (coverage, density, proximity, phrase) lifts the rank part. Then the shared
   signals of :mod:`memlane.search.scoring` (recency with a half-life counted
   back from the newest candidate, no later than ``as_of``; frequency;
   staleness) decide a share of it: the :class:`SearchScore`.
4. **Grouping.** Neighbouring pieces of one split transcript turn become one hit,
   represented by its best piece and listing them all (``members``, ``source_ids``;
   see :mod:`memlane.search.grouping`).
5. **Scope.** ``tiered`` runs *one* candidate query over every project and
   splits it: other projects' hits are scaled by ``cross_project_penalty`` and
   tagged ``from_project``. When fewer than ``limit`` hits clear the floor and
   ``min_relevance_score`` is 0, a relaxation cascade widens the net (penalty
   ×3, half-life ×3, floor → 0); a positive ``min_relevance_score`` is never
   relaxed.

Keyword mode imports no numpy and loads no model: the per-prompt hook uses it.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from memlane.models import (
    CALL_KEY,
    FUSIONS,
    SEARCH_MODES,
    Memory,
    MemoryFilter,
    SearchHit,
    SearchResult,
    to_epoch,
    utcnow,
)
from memlane.paths import UnsafePath
from memlane.search import bm25
from memlane.search.fts import ParsedQuery, content_words, needs_like_fallback, plain, unit_query
from memlane.search.grouping import group_pieces
from memlane.search.model_names import dimensions
from memlane.search.rerank import (
    QueryTerms,
    RerankWeights,
    TextFeatures,
    prepare_query,
    text_features,
)
from memlane.search.scoring import (
    ContextWeights,
    SearchScore,
    SearchWeights,
    compute_signals,
    context_score,
    linked_files_changed,
    recency_anchor,
    search_score,
)
from memlane.search.word_counts import WordCounts
from memlane.store.query import FtsQuery, Term

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.search.embedder import Embedder
    from memlane.search.vectors import VectorTable
    from memlane.store.base import Store, VectorLog


# Rows from which a vector table gets an ANN graph (search/vectors.py measures it;
# kept here too so that keyword search never imports numpy).
ANN_THRESHOLD = 20_000
MIN_EVIDENCE = 0.01
# What a memory about a file the query names (``mix.exs``, ``config/test.exs``: one of
# its files) gains, as much as a query phrase found whole: the Read of ``mix.exs``
# answers "what does mix.exs put on igniter" better than web pages about igniter.
NAMED_FILE_BOOST = 0.25
# In no interface's words (HTTP and MCP pass it on too): the CLI adds its command.
NOTICE_NO_VECTORS = "keyword mode: no vectors yet"


def _warn(message: str, *args: object) -> None:
    # logging is imported only when there is something to say: keyword recall runs per prompt.
    import logging

    logging.getLogger(__name__).warning(message, *args)


@dataclass(frozen=True, slots=True)
class Calibration:
    """Maps an embedder's cosine to 0..1 evidence: ``(cos - floor) / (ceiling - floor)``.

    Cosines of unrelated texts are not 0 for real models (USE: ~0.1–0.2), so the
    raw cosine would overstate weak matches.
    """

    floor: float = 0.15
    ceiling: float = 0.65

    def __call__(self, cosine: float | None) -> float:
        if cosine is None or math.isnan(cosine):
            return 0.0
        return min(1.0, max(0.0, (cosine - self.floor) / (self.ceiling - self.floor)))


# Per-model calibration. USE, measured on the LongMemEval dev haystacks: a random
# turn's cosine with a question has median 0.09 and p90 0.23, the best hit of an
# unrelated query 0.16-0.26; evidence turns have p10 0.38, median 0.52, p75 0.65.
CALIBRATIONS: dict[str, Calibration] = {
    "use-multilingual-v3": Calibration(0.25, 0.65),
    "multilingual-e5-small-q4": Calibration(0.75, 0.9),
}
DEFAULT_CALIBRATION = Calibration(0.0, 0.8)  # toy embedders and unknown models


@dataclass(frozen=True, slots=True)
class Ranking:
    """Tunable parameters of the ranking; the defaults are the benchmark's choice.

    ``fusion``: ``"calibrated"`` (default: ``alpha``·BM25/best BM25 + (1-``alpha``)·
    calibrated cosine, see :meth:`SearchEngine._fuse_calibrated`) or a method of
    :func:`memlane.search.fusion.fuse` (``rrf`` with ``rrf_k`` / ``keyword_weight`` /
    ``semantic_weight``; ``convex`` / ``dbsf`` with ``alpha``). Chosen on the
    LongMemEval dev split: README "Retrieval quality" has the grid.
    ``evidence_share``: weight of the absolute text evidence in the geometric
    blend with the rank position.
    ``noise_floor``: hits below it are dropped unless the relaxation cascade
    needs them (only when ``min_relevance_score`` is 0). ``group``: one hit for
    neighbouring pieces of one split record (:mod:`memlane.search.grouping`).
    """

    fusion: str = "calibrated"
    rrf_k: int = 60
    keyword_weight: float = 1.0
    semantic_weight: float = 1.0
    alpha: float = 0.2
    candidates: int = 100
    evidence_share: float = 0.5
    noise_floor: float = 0.15
    group: bool = True
    rerank: RerankWeights = field(default_factory=RerankWeights)
    weights: SearchWeights = field(default_factory=SearchWeights)
    # Full-text matches scored per query, newest first (None: all). BM25 costs
    # ~5 µs per matching row; a common word can match most of the table.
    keyword_scan: int | None = 20_000
    # The same bound in hybrid mode, where the vectors find what older keyword
    # matches would: at 1M rows 5,000 matches cost 15-20 ms, 20,000 60-90 ms.
    hybrid_keyword_scan: int | None = 5_000
    # Fused candidates read and reranked: 8 per requested hit up to this, and at
    # least two per hit (recall asks for 3: 24 candidates).
    rerank_depth: int = 40
    # Text the reranker reads per candidate (its cost grows with length).
    rerank_chars: int = 2000


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, fully resolved (the facade fills defaults from Settings).

    ``projects``: None for every project. ``home_project``: set for tiered scope
    (hits of other projects are penalized and tagged). ``min_score``: the user's
    floor (``min_relevance_score``); 0 allows the relaxation cascade.
    """

    query: str
    projects: tuple[str, ...] | None = None
    limit: int = 10
    mode: str = "keyword"
    as_of: datetime | None = None
    kinds: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    since: datetime | None = None
    half_life_days: float = 30.0
    home_project: str | None = None
    cross_project_penalty: float = 0.5
    min_score: float = 0.0
    keyword_scan: int | None = None  # None: Ranking.keyword_scan
    # Understand the search syntax (operators, phrases, fields: memlane.search.syntax);
    # off for prompts, which are prose.
    syntax: bool = False
    fusion: str | None = None  # one of FUSIONS; None: Ranking.fusion
    alpha: float | None = None  # keyword weight of convex fusions; None: Ranking.alpha
    # One hit for the memories of one tool call (memlane.search.grouping); recall asks
    # for them apart, its selection choosing among them.
    group_calls: bool = True


@dataclass(slots=True)
class Candidate:
    """One memory under consideration, with what each step learned about it."""

    memory: Memory
    fused: float = 0.0
    cosine: float | None = None
    features: TextFeatures = field(default_factory=TextFeatures)
    bm25_share: float = 0.0  # keyword mode's evidence (memlane.search.bm25)
    about_named_file: bool = False  # one of its files is a file the query names
    stale: bool = False
    score: float = 0.0


def model_name(embedder: str) -> str | None:
    """The model name stored with vectors of the configured ``embedder`` (no model load)."""
    key = embedder.strip().lower()
    if key in ("", "none"):
        return None
    from memlane.search.model_names import E5_MODEL, USE_MODEL

    if key in ("use", USE_MODEL):
        return USE_MODEL
    if key == "toy":
        return "toy-64"
    if key.startswith("toy-"):
        return key
    if key in ("e5", E5_MODEL):
        return E5_MODEL
    return key


def rare_words(
    query: FtsQuery, budget: int, counts: Callable[[list[str]], list[int]]
) -> FtsQuery | None:
    """The rarest words of an any-word ``query`` that ``budget`` memories at most hold
    together, as an any-word query; None when ``budget`` memories hold every match of
    ``query`` anyway, or no word is that rare. ``counts(words)``: how many memories
    hold each word."""
    if query.operator != "any" or query.phrases or query.required or query.excluded:
        return None
    words = [t.text for t in query.terms if not t.prefix and t.field is None]
    if len(words) < 2 or query.cjk_grams:
        return None
    held = counts(words)
    if sum(held) <= budget:
        return None
    rare: list[Term] = []
    total = 0
    for count, word in sorted(zip(held, words, strict=True)):
        if count == 0:
            continue
        if total + count > budget:
            break
        rare.append(Term(word))
        total += count
    return FtsQuery(terms=tuple(rare)) if rare else None


def keyword_candidates(
    store: Store,
    query: ParsedQuery | str,
    flt: MemoryFilter,
    limit: int,
    *,
    scan: int | None = None,
    counts: Callable[[list[str]], list[int]] | None = None,
) -> list[tuple[int, float]]:
    """(id, BM25 score, higher better) for ``query``; LIKE for very short plain queries.

    ``query``: understood already, or plain text. ``scan`` bounds how many
    (newest) full-text matches are scored, and how many of the newest memories a
    substring match (LIKE) reads. With ``counts`` (how many memories hold
    each word), the memories that hold the query's rarest words are candidates too,
    up to ``scan`` more of them (:func:`rare_words`): a common word ("test", "time")
    makes the newest ``scan`` matches a window of recent memories only, and an old
    memory that holds the prompt's rare words would never be seen. Such a memory is
    scored by its rare words alone (all of its BM25 but the common words' small
    share); the reranker, which reads every word, orders the candidates after. A
    query of filters only (``type:decision``) lists the matching memories, newest
    first.
    """
    if isinstance(query, str):
        query = plain(query)
    if query.match is None and query.structured:
        return [(m.id, 1.0) for m in store.list_memories(flt, limit=limit)]
    needle = query.text.strip()
    if not query.structured and needs_like_fallback(needle):
        return store.like_candidates(needle, flt, limit, scan=scan) if needle else []
    found: list[tuple[int, float]] = []
    if query.match is not None:
        found = store.fts_candidates(query.match, flt, limit, scan=scan)
        rare = None if scan is None or counts is None else rare_words(query.match, scan, counts)
        if rare is not None:
            found = _merged(found, store.fts_candidates(rare, flt, limit))[:limit]
    if not found and not query.structured and 3 <= len(needle) <= 64:
        # e.g. a lone CJK character inside a short query: substring match, among the
        # newest ``scan`` memories (a scan of every row: ~0.7 s at 1M, on every such prompt).
        found = store.like_candidates(needle, flt, limit, scan=scan)
    return found


def _merged(
    first: list[tuple[int, float]], more: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """``first`` and the ids of ``more`` it lacks, best score first (``first``'s order on ties)."""
    known = {mid for mid, _ in first}
    extra = [pair for pair in more if pair[0] not in known]
    if not extra:
        return first
    return sorted([*first, *extra], key=lambda pair: -pair[1])


class SearchEngine:
    """Holds what makes search fast across calls: the embedder and the vector table.

    Create one per :class:`~memlane.service.Memory`; a warm process (the worker)
    keeps it, so the model loads once and the vector table syncs incrementally.
    ``embedder`` is a provider name for :func:`~memlane.search.embedder.get_embedder`
    (``"none"`` disables vectors) or a ready :class:`Embedder`.
    """

    def __init__(
        self,
        store: Store,
        *,
        embedder: str | Embedder = "use",
        ranking: Ranking | None = None,
        cache_dir: Path | None = None,
        ann_threshold: int | None = None,
        model_cache_dir: Path | None = None,
    ) -> None:
        """``cache_dir``: where to keep the memory-mapped vector table (stores that keep
        no vector index of their own).

        ``model_cache_dir``: where the embedder keeps a derived copy of its model that
        loads faster (:func:`~memlane.search.embedder.get_embedder`; None: none).

        ``ann_threshold``: rows from which the table gets an ANN graph (None: the
        measured default, :data:`memlane.search.vectors.ANN_THRESHOLD`).
        """
        self.store = store
        self.cache_dir = cache_dir
        self.model_cache_dir = model_cache_dir
        self.ann_threshold = ANN_THRESHOLD if ann_threshold is None else ann_threshold
        self.ranking = ranking or Ranking()
        self._embedder: Embedder | None = None
        if isinstance(embedder, str):
            self._embedder_name = embedder
            self.model = model_name(embedder)
        else:
            self._embedder = embedder
            self._embedder_name = embedder.name
            self.model = embedder.name
        self._table: VectorTable | None = None
        self._cache_refused: str | None = None  # why the cache directory is not used (said once)
        # The worker searches from several threads; the table syncs in place.
        self._table_lock = threading.RLock()
        self._embedder_lock = threading.Lock()
        self._unavailable: str | None = None
        self._word_counts = WordCounts(store, unit_query)

    def _counts(self, words: list[str]) -> list[int]:
        """How many memories hold each of ``words`` (remembered between searches)."""
        return self._word_counts.counts(words)[1]

    # -- vectors --------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The query embedder, loaded on first use (~1 s for the default model)."""
        if self._embedder is None:
            from memlane.search.embedder import get_embedder

            with self._embedder_lock:  # one load even when two threads ask at once
                if self._embedder is None:
                    loaded = get_embedder(self._embedder_name, self.model_cache_dir)
                    self.model = loaded.name
                    self._embedder = loaded
        return self._embedder

    def semantic_ready(self) -> bool:
        """Whether a hybrid search runs now without loading the model or the vectors first."""
        if self._embedder is None or self._unavailable is not None:
            return False
        return self.store.keeps_vector_index or self._table is not None

    def _vector_log(self) -> VectorLog | None:
        """The store as a change log for a local vector table (None: it searches its own)."""
        if self.store.keeps_vector_index:
            return None
        from memlane.store.base import VectorLog

        if not isinstance(self.store, VectorLog):
            raise TypeError(
                f"a {self.store.backend} store keeps no vector index and no vector change log"
            )
        return self.store

    def has_vectors(self) -> bool:
        """Whether any memory has a vector of the configured model (one indexed lookup)."""
        if self.model is None or self._unavailable is not None:
            return False
        for batch in self.store.iter_embeddings(self.model, batch=1):
            return bool(batch)
        return False

    def resolve_mode(
        self, requested: str | None, default: str = "hybrid"
    ) -> tuple[str, str | None]:
        """The mode to run (``requested`` or ``default``, keyword when no vectors exist)
        and, when it falls back, a one-line notice saying why (else None).

        The notice is returned, not kept: the worker searches from several threads.
        """
        mode = requested or default
        if mode not in SEARCH_MODES:
            raise ValueError(f"unknown mode {mode!r} ({', '.join(SEARCH_MODES)})")
        if mode == "keyword":
            return mode, None
        if not self.has_vectors():
            return "keyword", self._unavailable or NOTICE_NO_VECTORS
        return mode, None

    def vector_table(self) -> VectorTable:
        """The vectors of the configured model, in step with the store now.

        The first call opens the saved generation (memory-mapped) and replays the
        store's change log since it; without a usable one it reads every vector
        from the store and saves them (without the ANN graph, which
        :meth:`persist_vectors` builds in the background of a warm process).
        """
        assert self.model is not None
        with self._table_lock:
            table = self._table
            if table is None or table.model != self.model:
                table = self._table = self._open_table()
            elif not table.sync(self.store, self._require_log()):
                _warn("vector change log no longer reaches back to this table: reloading")
                table = self._table = self._open_table()
            return table

    def _require_log(self) -> VectorLog:
        log_store = self._vector_log()
        if log_store is None:
            raise TypeError(f"a {self.store.backend} store has no local vector table")
        return log_store

    def _open_table(self) -> VectorTable:
        from memlane.search.vectors import VectorTable, save

        assert self.model is not None
        log_store = self._require_log()
        cache = self._cache_path()
        table = None
        if cache is not None:
            table = VectorTable.open(cache, self.model, ann_threshold=self.ann_threshold)
        if table is not None and not self._current(table, log_store):
            table = None
        if table is not None:
            return table
        table = VectorTable(self.model, ann_threshold=self.ann_threshold)
        table.load_all(self.store, log_store)
        table.sync(self.store, log_store)
        if cache is None or not len(table):
            return table
        try:
            saved = save(cache, table.snapshot(copy=False), build_ann=False)
        except (OSError, UnsafePath) as exc:
            _warn("cannot write the vector cache %s (%s); continuing", cache, exc)
            return table
        # Search the saved generation: mapped pages instead of a private copy.
        mapped = VectorTable.open(cache, self.model, ann_threshold=self.ann_threshold)
        if saved and mapped is not None and mapped.sync(self.store, log_store):
            return mapped
        return table

    def _current(self, table: VectorTable, log_store: VectorLog) -> bool:
        """Bring a saved table up to date; False (one log line) when it cannot be."""
        identity = log_store.identity()
        if table.identity != identity:
            _warn("vector cache belongs to another database (%s): rebuilding it", table.identity)
            return False
        expected = dimensions(table.model)
        if expected is not None and table.dim != expected:
            _warn("vector cache has vectors of dim %d, not %d: rebuilding it", table.dim, expected)
            return False
        if not table.sync(self.store, log_store):
            _warn("vector cache is older than the change log reaches back: rebuilding it")
            return False
        stored = self.store.embedding_counts().get(table.model, 0)
        if len(table) != stored:
            _warn("vector cache has %d vectors, the store %d: rebuilding it", len(table), stored)
            return False
        try:
            differs = table.differs(log_store)
        except OSError as exc:
            differs = str(exc)
        if differs is not None:
            _warn("vector cache does not match the store (%s): rebuilding it", differs)
            return False
        return True

    def persist_vectors(self, *, threads: int = 1, force: bool = False) -> bool:
        """Save the vector table as a new generation when enough changed; True if saved.

        Called by the warm process between batches of background work: it builds
        the ANN graph once the table passes ``ann_threshold`` rows, appends what
        was added since the last generation, and lets the store forget the change
        log entries the new generation holds. The table stays searchable meanwhile
        (only the snapshot and the swap take the lock).
        """
        from memlane.search.vectors import VectorTable, save

        cache = self._cache_path()
        log_store = self._vector_log()
        if cache is None or log_store is None or self.model is None:
            return False
        with self._table_lock:
            table = self._table
            if table is None or not (force or self._save_due(table)):
                return False
            snapshot = table.snapshot()
        try:
            if not save(cache, snapshot, ann_threshold=self.ann_threshold, threads=threads):
                return False
        except UnsafePath as exc:
            _warn("cannot save the vector cache (%s); the next start reads the store", exc)
            return False
        fresh = VectorTable.open(cache, self.model, ann_threshold=self.ann_threshold)
        # The new generation is brought up to date before the swap, without the lock.
        if fresh is not None and self._current(fresh, log_store):
            with self._table_lock:
                if fresh.sync(self.store, log_store):
                    self._table = fresh
        log_store.prune_vector_changes(snapshot.mark)
        return True

    def _save_due(self, table: VectorTable) -> bool:
        size = len(table)
        if size >= self.ann_threshold and not table.has_ann:
            return True
        changed = table.tail_rows + table.dead_rows
        return changed >= max(1000, size // 50) or (changed > 0 and table.generation is None)

    def _cache_path(self) -> Path | None:
        """The cache directory of this database, model and dimension (None: no cache).

        None too, with one log line, when it or ``cache_dir`` is another user's, or it
        is a link (:func:`memlane.search.vectors.own_cache_dir`: what is in it cannot be
        trusted, nor written safely): search then works from the store. One of the
        user's that others could write is made 0700 first (its files are checked one by
        one when read).
        """
        if self.cache_dir is None or self.store.location == ":memory:" or self.model is None:
            return None
        from memlane.digest import sha256_hex
        from memlane.search.vectors import own_cache_dir

        digest = sha256_hex(os.path.abspath(self.store.location).encode())[:16]
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.model)
        path = self.cache_dir / f"{digest}-{safe}"
        try:
            if own_cache_dir(path):
                _warn("vector cache directory %s was open to other users: made it 0700", path)
        except UnsafePath as exc:
            if self._cache_refused != str(exc):
                self._cache_refused = str(exc)
                _warn("%s; searching without a saved vector table", exc)
            return None
        self._cache_refused = None
        return path

    def _query_vector(self, query: str) -> Any | None:
        from memlane.errors import MissingDependency

        try:
            return self.embedder.embed_query(query)
        except MissingDependency as exc:
            self._unavailable = f"keyword mode: {exc}"
            _warn("semantic search unavailable, keyword only: %s", exc)
            return None

    def _semantic(
        self, qvec: Any, flt: MemoryFilter, limit: int
    ) -> tuple[list[tuple[int, float]], Callable[[Sequence[int]], dict[int, float]]]:
        """Vector candidates and a function giving the cosine of any other id."""
        if not self.store.keeps_vector_index:
            with self._table_lock:
                table = self.vector_table()
                found = table.search(qvec, limit, flt)

            def cosines(ids: Sequence[int]) -> dict[int, float]:
                with self._table_lock:
                    return table.cosines(qvec, ids)

            return found, cosines
        assert self.model is not None
        found = self.store.vector_candidates(self.model, qvec.tolist(), flt, limit)
        return found, lambda ids: {}

    # -- search ---------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResult:
        """Run ``request`` (its ``mode`` already resolved, see :meth:`resolve_mode`).

        The result's ``notice`` says why a semantic search fell back to keywords.
        """
        ranking = self.ranking
        if request.mode not in SEARCH_MODES:
            raise ValueError(f"unknown mode {request.mode!r}")
        if request.fusion is not None and request.fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {request.fusion!r} ({', '.join(FUSIONS)})")
        tiered = request.home_project is not None
        query = self._understand(request)
        types = request.types
        if query.types is not None:
            types = tuple(t for t in query.types if types is None or t in types)
        flt = MemoryFilter(
            projects=None if tiered else request.projects,
            kinds=request.kinds,
            types=types,
            created_after=request.since,
            created_before=request.as_of,
        )
        pool = max(ranking.candidates, request.limit * 3)
        keyword: list[tuple[int, float]] = []
        semantic: list[tuple[int, float]] = []
        cosine_of: Callable[[Sequence[int]], dict[int, float]] = lambda ids: {}  # noqa: E731
        notice: str | None = None
        vectors = request.mode in ("semantic", "hybrid") and bool(query.text.strip())
        qvec = self._query_vector(query.text) if vectors else None
        # The tighter bound only while the vectors run too (not without a model).
        hybrid = request.mode == "hybrid" and qvec is not None
        scan = request.keyword_scan or (
            ranking.hybrid_keyword_scan if hybrid else ranking.keyword_scan
        )
        if request.mode in ("keyword", "hybrid"):
            keyword = keyword_candidates(
                self.store, query, flt, pool, scan=scan, counts=self._counts
            )
        if vectors:
            if qvec is not None:
                semantic, cosine_of = self._semantic(qvec, flt, pool)
                semantic = self._satisfying(query, semantic, flt)
            elif request.mode == "semantic":
                notice = self._unavailable
                keyword = keyword_candidates(
                    self.store, query, flt, pool, scan=scan, counts=self._counts
                )
        elif request.mode == "semantic":
            keyword = keyword_candidates(
                self.store, query, flt, pool, scan=scan, counts=self._counts
            )
        if not keyword and not semantic:
            return SearchResult(notice=notice)
        # Only the best fused candidates are read and reranked: the reranker's cost
        # grows with text length, and the per-prompt hook asks for 3 hits.
        depth = max(min(ranking.rerank_depth, 8 * request.limit), 2 * request.limit)
        alpha = ranking.alpha if request.alpha is None else request.alpha
        fused = self._fuse(keyword, semantic, request.fusion or ranking.fusion, alpha)[:depth]
        candidates = self._load(fused)
        cosines = dict(semantic)
        missing = [mid for mid in candidates if mid not in cosines]
        if missing and semantic:
            cosines.update(cosine_of(missing))
        evidence_mode = request.mode if semantic else "keyword"
        self._describe(request, query.text, candidates, cosines, evidence_mode)
        return SearchResult(self._rank(request, list(candidates.values()), evidence_mode), notice)

    @staticmethod
    def _understand(request: SearchRequest) -> ParsedQuery:
        if not request.syntax:
            return plain(request.query)  # prompts: the per-prompt path loads no parser
        from memlane.search.syntax import parse

        return parse(request.query)

    def _satisfying(
        self, query: ParsedQuery, found: list[tuple[int, float]], flt: MemoryFilter
    ) -> list[tuple[int, float]]:
        """``found`` without the candidates that break the query's constraints."""
        if not found or (query.must is None and query.must_not is None):
            return found
        among = replace(flt, ids=tuple(mid for mid, _ in found))

        def matching(constraint: FtsQuery) -> set[int]:
            hits = self.store.fts_candidates(constraint, among, len(found))
            return {mid for mid, _ in hits}

        allowed = matching(query.must) if query.must is not None else None
        banned = matching(query.must_not) if query.must_not is not None else set()
        return [
            (mid, score)
            for mid, score in found
            if (allowed is None or mid in allowed) and mid not in banned
        ]

    def _fuse(
        self,
        keyword: list[tuple[int, float]],
        semantic: list[tuple[int, float]],
        method: str,
        alpha: float,
    ) -> list[tuple[int, float]]:
        """Fused (id, relative rank score in 0..1]) best first, by ``method`` (``alpha``:
        the keyword side's weight in the convex fusions)."""
        r = self.ranking
        if method == "calibrated":
            return self._fuse_calibrated(keyword, semantic, alpha)
        # Loaded here: the default (calibrated) needs none of it, nor does the prompt hook.
        from memlane.search.fusion import fuse

        if method == "rrf":
            fused = fuse(
                "rrf",
                keyword,
                semantic,
                k=r.rrf_k,
                keyword_weight=r.keyword_weight,
                semantic_weight=r.semantic_weight,
            )
            # The best possible RRF score: first in every list that was run.
            best = (r.keyword_weight if keyword else 0.0) + (r.semantic_weight if semantic else 0.0)
            top = best / (r.rrf_k + 1) if best > 0 else 1.0
        else:
            fused = fuse(method, keyword, semantic, alpha=self._alpha(keyword, semantic, alpha))
            top = 1.0
        return [(mid, score / top) for mid, score in fused]

    def _fuse_calibrated(
        self, keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], alpha: float
    ) -> list[tuple[int, float]]:
        """``α·bm25/best_bm25 + (1-α)·calibrated cosine``: both sides anchored at 0.

        BM25 has no absolute scale, so it is taken relative to the best match
        (a near-tie stays a near-tie, unlike min-max); the cosine is calibrated
        against the model's noise level (:data:`CALIBRATIONS`), so a weak
        semantic list does not look strong just because it is the best we have.
        """
        alpha = self._alpha(keyword, semantic, alpha)
        calibrate = CALIBRATIONS.get(self.model or "", DEFAULT_CALIBRATION)
        best = max((score for _, score in keyword), default=0.0)
        kw = {mid: max(0.0, score) / best for mid, score in keyword} if best > 0 else {}
        sem = {mid: calibrate(score) for mid, score in semantic}
        fused = {
            mid: alpha * kw.get(mid, 0.0) + (1 - alpha) * sem.get(mid, 0.0)
            for mid in kw.keys() | sem.keys()
        }
        order = {mid: i for i, (mid, _) in enumerate(keyword)}
        return sorted(fused.items(), key=lambda p: (-p[1], order.get(p[0], len(order)), p[0]))

    @staticmethod
    def _alpha(
        keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], alpha: float
    ) -> float:
        if not semantic:
            return 1.0
        if not keyword:
            return 0.0
        return alpha

    def _load(self, fused: list[tuple[int, float]]) -> dict[int, Candidate]:
        ids = [mid for mid, _ in fused]
        memories = {m.id: m for m in self.store.get_memories(ids)}
        gone = [mid for mid in ids if mid not in memories]
        if gone and self._table is not None:
            with self._table_lock:
                self._table.remove(gone)  # deleted since the vectors were loaded
        return {
            mid: Candidate(memory=memories[mid], fused=score)
            for mid, score in fused
            if mid in memories
        }

    def _describe(
        self,
        request: SearchRequest,
        text: str,
        candidates: dict[int, Candidate],
        cosines: dict[int, float],
        mode: str,
    ) -> None:
        from memlane.search.passages import named_files

        q = prepare_query(text)
        named = named_files(text)
        limit = self.ranking.rerank_chars
        # A search "as of" a past moment ranks memories as they stood then.
        check_files = request.as_of is None
        stat_cache: dict[str, os.stat_result | None] = {}
        for mid, cand in candidates.items():
            memory = cand.memory
            text = f"{memory.title}\n{memory.content}" if memory.title else memory.content
            if memory.files or memory.tags:  # FTS matches them too
                text = text[:limit] + "\n" + " ".join((*memory.files, *memory.tags))
            cand.features = text_features(q, text[: limit + 1000])
            cand.cosine = cosines.get(mid)
            cand.about_named_file = bool(named) and any(
                f"/{path.lower()}".endswith(named) for path in memory.files
            )
            cand.stale = memory.stale or (
                check_files and linked_files_changed(memory, stat=stat_cache) is True
            )
        if mode == "keyword" and candidates:
            self._weigh_words(q, list(candidates.values()))

    def _weigh_words(self, q: QueryTerms, candidates: list[Candidate]) -> None:
        """Each candidate's :func:`~memlane.search.bm25.share` of the query's BM25 weight.

        The words weighed are those the full-text query searched (stop words
        dropped); their idf comes from the store's counts, the reference length
        is the mean length of the candidates. A store whose full-text score is not
        BM25 (``ranks_by_bm25``) gets its rank position from this BM25 too, relative
        to the best candidate as FTS5's is, so both stores rank alike.
        """
        searched = set(content_words(list(q.terms)))
        asked = [term for term in q.terms if term in searched]
        documents, counts = self._word_counts.counts(asked)
        found = dict(zip(asked, counts, strict=True))
        weights = [bm25.idf(documents, found[term]) if term in found else 0.0 for term in q.terms]
        average = sum(c.features.length for c in candidates) / len(candidates)
        for cand in candidates:
            cand.bm25_share = bm25.share(cand.features, weights, average)
        if self.store.ranks_by_bm25:
            return
        scores = [bm25.score(c.features, weights, average) for c in candidates]
        best = max(scores)
        if best > 0:
            for cand, value in zip(candidates, scores, strict=True):
                cand.fused = value / best

    def evidence(self, cand: Candidate, mode: str) -> float:
        """Absolute text evidence in 0..1 (see the module docstring)."""
        if mode == "keyword":
            return cand.bm25_share
        calibrate = CALIBRATIONS.get(self.model or "", DEFAULT_CALIBRATION)
        semantic = calibrate(cand.cosine)
        return semantic if mode == "semantic" else max(cand.features.coverage, semantic)

    def relevance(self, cand: Candidate, mode: str) -> float:
        """Query relevance in 0..1: rank position (reranked) blended with evidence."""
        r = self.ranking
        w = r.rerank
        f = cand.features
        boost = w.coverage * f.coverage + w.phrase * f.phrase
        boost += w.proximity * f.proximity + w.density * f.density
        if cand.about_named_file:
            boost += NAMED_FILE_BOOST
        ceiling = 1.0 + w.coverage + w.phrase + w.proximity + w.density
        # Min-max fusion maps the last candidate to 0: keep it rankable.
        position = min(1.0, max(cand.fused, MIN_EVIDENCE) * (1.0 + boost) / ceiling)
        share = r.evidence_share
        # A candidate with no measurable evidence (e.g. matched only through a
        # prefix) stays rankable at the bottom instead of vanishing.
        evidence = max(self.evidence(cand, mode), MIN_EVIDENCE)
        if position <= 0.0:
            return 0.0
        return float(position ** (1.0 - share) * evidence**share)

    def _score_all(
        self,
        request: SearchRequest,
        candidates: list[Candidate],
        mode: str,
        penalty: float,
        half_life: float,
    ) -> list[tuple[Candidate, float]]:
        now = recency_anchor(
            (to_epoch(c.memory.created_at) for c in candidates),
            to_epoch(request.as_of or utcnow()),
        )
        weights = self.ranking.weights
        scored: list[tuple[Candidate, float]] = []
        for cand in candidates:
            memory = cand.memory
            signals = compute_signals(
                age_seconds=now - to_epoch(memory.created_at),
                access_count=memory.access_count,
                cosine=cand.cosine,
                stale=cand.stale,
                memory_type=memory.type,
                half_life_days=half_life,
            )
            relevance = self.relevance(cand, mode)
            if relevance <= 0.0:
                continue
            score: SearchScore = search_score(relevance, signals, weights)
            value = float(score)
            if request.home_project is not None and memory.project != request.home_project:
                value *= penalty
            scored.append((cand, value))
        scored.sort(key=lambda pair: (-pair[1], pair[0].memory.id))
        return scored

    def _rank(
        self, request: SearchRequest, candidates: list[Candidate], mode: str
    ) -> list[SearchHit]:
        """Score, admit above the floor (relaxing if allowed), group, cut to ``limit``.

        Scores and order always come from the request's own parameters; the
        relaxation cascade only decides which candidates are *admitted*: a step
        admits those whose score under its looser parameters clears its floor.
        """
        r = self.ranking
        strict = request.min_score > 0
        penalty = request.cross_project_penalty
        half_life = request.half_life_days
        floor = request.min_score if strict else r.noise_floor
        scored = self._score_all(request, candidates, mode, penalty, half_life)
        admitted = {c.memory.id for c, s in scored if s >= floor}
        if not strict:
            relaxed = min(1.0, penalty * 3)
            for step_penalty, step_half_life, step_floor in (
                (relaxed, half_life, floor),
                (relaxed, half_life * 3, floor),
                (relaxed, half_life * 3, 0.0),
            ):
                if len(admitted) >= request.limit or len(admitted) == len(scored):
                    break
                if step_floor == 0.0:
                    admitted = {c.memory.id for c, _ in scored}
                    break
                looser = self._score_all(request, candidates, mode, step_penalty, step_half_life)
                admitted |= {c.memory.id for c, s in looser if s >= step_floor}
        kept = [(c, s) for c, s in scored if c.memory.id in admitted]
        return self._finish(request, kept, floor)

    def _finish(
        self, request: SearchRequest, scored: list[tuple[Candidate, float]], floor: float
    ) -> list[SearchHit]:
        """Group, cut to ``limit``; a hit scoring under ``floor`` (admitted by relaxation)
        is marked ``relaxed``."""
        if self.ranking.group:
            groups = group_pieces([(c.memory, s) for c, s in scored], calls=request.group_calls)
            ranked = [(g.best, g.score, g.members) for g in groups]
        else:
            ranked = [(c.memory, s, (c.memory,)) for c, s in scored]
        out: list[SearchHit] = []
        stale = {c.memory.id for c, _ in scored if c.stale}
        for memory, score, members in ranked[: request.limit]:
            hit = to_hit(memory, score, stale=memory.id in stale, members=members)
            if request.home_project is not None and memory.project != request.home_project:
                hit = replace(hit, from_project=memory.project)
            if score < floor:
                hit = replace(hit, relaxed=True)
            out.append(hit)
        return out


def to_hit(
    memory: Memory,
    score: float,
    *,
    stale: bool | None = None,
    members: Sequence[Memory] = (),
) -> SearchHit:
    """A search hit for ``memory`` with its final ``score``.

    ``members``: every memory the hit stands for (``memory`` among them); alone by default.
    """
    covered = tuple(members) or (memory,)
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
        stale=memory.stale if stale is None else stale,
        members=tuple(m.id for m in covered),
        source_ids=tuple(m.source_id for m in covered if m.source_id),
        call=call if isinstance(call := memory.metadata.get(CALL_KEY), str) else None,
        source=memory.source,
    )


def context_order(
    memories: Sequence[Memory],
    *,
    half_life_days: float = 30.0,
    now: datetime | None = None,
    weights: ContextWeights | None = None,
) -> list[Memory]:
    """``memories`` best first by :func:`~memlane.search.scoring.context_score` (no query).

    Recency, use and staleness decide what a new session sees first; ties keep
    the newest first.
    """
    unique = {m.id: m for m in memories}
    moment = recency_anchor(
        (to_epoch(m.created_at) for m in unique.values()), to_epoch(now or utcnow())
    )
    chosen = weights or ContextWeights()

    def key(memory: Memory) -> tuple[float, float]:
        signals = compute_signals(
            age_seconds=moment - to_epoch(memory.created_at),
            access_count=memory.access_count,
            stale=memory.stale,
            half_life_days=half_life_days,
        )
        return (-float(context_score(signals, chosen)), -to_epoch(memory.created_at))

    return sorted(unique.values(), key=key)
