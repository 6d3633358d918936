"""What the facade asks of search: a search, a recall, a context pack, a backfill.

Each function turns the caller's arguments and the settings into a request
for the :class:`~memlane.search.engine.SearchEngine` (which the facade keeps
warm) and returns the result:

* :func:`search` — validates the query, scope and mode, resolves the mode
  (keyword when there are no vectors) and returns a
  :class:`~memlane.models.SearchResult` whose ``notice`` says why a search ran
  in another mode than asked;
* :func:`recall` — the memories worth injecting for a prompt: at most
  ``recall_limit`` above ``min_relevance_score`` (keyword-only recall needs
  ``KEYWORD_RECALL_MARGIN`` more), scoring the ``RECALL_KEYWORD_SCAN`` newest
  full-text matches and those of the prompt's rarest words, then rescored by the
  user's marks for similar prompts (:mod:`memlane.search.feedback`);
* :func:`context_pack` — the SessionStart pack of a project;
* :func:`embed_backfill` — vectors for every memory that has none.

The engine and the embedder load on first use: the per-prompt hook imports
this module, not numpy.
"""

from __future__ import annotations

from dataclasses import replace

from memlane import arguments
from memlane.config import KEYWORD_RECALL_MARGIN
from memlane.errors import InvalidInput
from memlane.models import FUSIONS, SCOPES, SEARCH_MODES, SearchResult

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from memlane.core import Core
    from memlane.search.engine import SearchEngine
    from memlane.search.indexer import EmbedReport

# Recall runs on every prompt: it scores the newest this many full-text matches, and
# as many again that hold the prompt's rarest words (search.engine.keyword_candidates),
# so a memory of months ago still answers when newer ones share its everyday words.
# Half of the 500 newest matches it scored alone before: the same work.
# `benchmarks/coding_recall.py --later 3000` (3,000 newer chat turns in the project):
# 61-67 of 209 questions answered with the 500 newest, 102-106 with 250 + 250.
RECALL_KEYWORD_SCAN = 250

# KEYWORD_RECALL_MARGIN lives in config, beside the min_relevance_score it raises.

# Weight of the keyword side in recall's hybrid fusion (search uses Ranking.alpha, 0.2).
# The prompt hook injects a memory only when the passage it shows holds the prompt's
# words (search/selection.py), and the sentence encoder says little about command
# output and code, where coding facts sit: ranked mostly by meaning, recall put
# explanations that talk about a topic above the tool results that hold the fact,
# then dropped them for want of visible words. `benchmarks/recall_floor.py
# --recall-alpha 0.35` against this, hybrid at the 0.30 floor: related prompts answered
# 0.68 -> 0.76 (coding), 0.68 -> 0.68 (real transcripts as background), 0.79 -> 0.83
# (LongMemEval); nothing-relevant prompts injected 0.00 -> 0.00, 0.09 -> 0.22 (as
# keyword-only recall's 0.22), 0.01 -> 0.02 (README, "Coding recall").
RECALL_ALPHA = 0.7

# What recall may inject: never prompts or checkpoints (the agent has those).
RECALL_KINDS = ("observation", "turn", "knowledge", "summary", "note")
# The most hits one search returns, whatever the caller asks.
MAX_LIMIT = 500


def new_engine(core: Core, embedder: str | None = None) -> SearchEngine:
    """A search engine over ``core``'s store for ``embedder`` (default: the configured one)."""
    from memlane.search.engine import SearchEngine

    return SearchEngine(
        core.store,
        embedder=embedder or core.settings.embedder,
        cache_dir=core.settings.paths.data_dir / "vectors",
        model_cache_dir=core.settings.paths.data_dir / "models",
    )


def search(
    core: Core,
    engine: SearchEngine,
    query: str,
    *,
    project: str | None = None,
    scope: str | None = None,
    limit: int = 10,
    mode: str | None = None,
    as_of: datetime | None = None,
    kinds: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    since: datetime | None = None,
    min_score: float | None = None,
    keyword_scan: int | None = None,
    fusion: str | None = None,
    syntax: bool = True,
    snippets: bool = True,
    alpha: float | None = None,
    group_calls: bool = True,
) -> SearchResult:
    """Find memories for ``query``; a list of :class:`SearchHit`, best first.

    ``scope``: ``project`` (only ``project``), ``all`` (every project) or
    ``tiered`` (the project first, others scaled by ``cross_project_penalty``
    and tagged with ``from_project``). ``as_of`` ranks as if now were that
    time and ignores memories created after it. ``mode`` defaults to
    ``search_mode`` (hybrid); without vectors for the configured embedder
    it runs in keyword mode and the result's ``notice`` says so.
    ``min_score`` is the floor of the hits returned (default 0: a ranked
    listing, with the relaxation cascade when fewer than ``limit`` hits are
    found); :func:`recall` applies ``min_relevance_score``. ``keyword_scan``
    bounds how many full-text matches are scored (recall keeps it small).
    ``snippets``: each hit's ``snippet`` is its passage that matches the query
    (recall leaves them to the prompt hook, which picks its own passages).
    ``alpha``: the keyword side's weight in calibrated hybrid fusion (default:
    the engine's ranking; recall passes ``RECALL_ALPHA``). ``group_calls``: one hit for
    the memories of one tool call (:mod:`memlane.search.grouping`; recall's selection
    chooses among them instead).
    """
    from memlane.search.engine import SearchRequest

    arguments.required_text("the search query", query)
    limit = arguments.whole("limit", limit, 1, MAX_LIMIT)  # past it refused, as the CLI does
    min_score = arguments.finite("min_score", min_score)
    since = arguments.moment("since", since)
    as_of = arguments.moment("as_of", as_of)
    scope = scope or core.settings.scope
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r} ({', '.join(SCOPES)})")
    if mode is not None and mode not in SEARCH_MODES:
        raise InvalidInput(f"unknown mode {mode!r} ({', '.join(SEARCH_MODES)})")
    fusion = fusion or core.settings.search__fusion
    if fusion not in FUSIONS:
        raise InvalidInput(f"unknown fusion {fusion!r} ({', '.join(FUSIONS)})")
    resolved, notice = engine.resolve_mode(mode, core.settings.search_mode)
    scoped = core.projects_for(project, scope == "all")
    own = scoped[0] if scoped else None
    request = SearchRequest(
        query=query,
        projects=(own,) if scope == "project" and own is not None else None,
        limit=limit,
        mode=resolved,
        as_of=as_of,
        kinds=tuple(kinds) if kinds else None,
        # An empty type matched nothing in silence: refused as save and edit refuse it.
        types=tuple(arguments.given_type(t) for t in types) if types else None,
        since=since,
        half_life_days=core.settings.recency_half_life_days,
        home_project=own if scope == "tiered" else None,
        cross_project_penalty=core.settings.cross_project_penalty,
        min_score=0.0 if min_score is None else min_score,
        keyword_scan=keyword_scan,
        syntax=syntax,
        fusion=fusion,
        alpha=alpha,
        group_calls=group_calls,
    )
    hits = engine.search(request)
    if snippets:
        from memlane.search.passages import snippet

        shown = [replace(hit, snippet=snippet(hit.content, query)) for hit in hits]
        return SearchResult(shown, hits.notice or notice, resolved)
    return SearchResult(hits, hits.notice or notice, resolved)


def recall(
    core: Core,
    engine: SearchEngine,
    prompt: str,
    *,
    project: str | None = None,
    limit: int | None = None,
    min_score: float | None = None,
    mode: str | None = None,
) -> SearchResult:
    """Memories worth injecting for ``prompt``: at most ``recall_limit`` above the floor.

    Returns nothing when nothing is relevant. Keyword-only recall needs
    ``KEYWORD_RECALL_MARGIN`` more than the floor. Neither a recall nor a search counts
    a use of its hits: only a read by id does (:func:`memlane.memories.get`, the one
    access rule of every interface).
    """
    settings = core.settings
    floor = settings.min_relevance_score if min_score is None else min_score
    resolved, _notice = engine.resolve_mode(mode, settings.search_mode)
    if resolved == "keyword" and floor > 0:
        floor = min(1.0, floor + KEYWORD_RECALL_MARGIN)
    from memlane.search.feedback import apply_feedback

    found = search(
        core,
        engine,
        prompt,
        project=project,
        limit=limit or max(settings.recall_limit, 1),
        mode=resolved,
        kinds=RECALL_KINDS,
        min_score=floor,
        keyword_scan=RECALL_KEYWORD_SCAN,
        snippets=False,
        syntax=False,  # a prompt is prose: "-x" or a quote in it is no operator
        alpha=RECALL_ALPHA,
        group_calls=False,  # select_recall picks, of one call's memories, the one to show
    )
    return apply_feedback(core.store, prompt, found, floor)  # the user's marks


def context_pack(
    core: Core,
    *,
    project: str | None = None,
    budget: int | None = None,
    branch: str | None = None,
) -> str:
    """The SessionStart context pack of a project, within a token budget (see
    :func:`memlane.search.context.session_pack`); ``branch``: the new session's git
    branch, what the pack is about when no checkpoint names a task."""
    from memlane.search.context import session_pack

    name = core.resolve_project(project)

    def matching(query: str, limit: int) -> dict[int, float]:
        """Keyword similarity of the project's memories to ``query``: BM25 relative to
        the best match (the pack's query is a task line or a branch name: no vectors)."""
        from memlane.models import MemoryFilter
        from memlane.search.engine import keyword_candidates

        flt = MemoryFilter(projects=(name,))
        found = keyword_candidates(core.store, query, flt, max(limit, 20), scan=2000)
        best = max((score for _, score in found), default=0.0)
        return {mid: score / best for mid, score in found} if best > 0 else {}

    return session_pack(
        core.store,
        name,
        budget_tokens=budget or core.settings.context_token_budget,
        half_life_days=core.settings.recency_half_life_days,
        branch=branch,
        now=core.now(),
        similarity=matching,
    )


def embed_backfill(
    core: Core,
    engine: SearchEngine,
    *,
    model: str | None = None,
    batch: int = 64,
    limit: int | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[EmbedReport, SearchEngine]:
    """Embed every memory without a vector for the embedder (resumable).

    Returns the report and the engine to keep: a new one when ``model``
    names another embedder than ``engine``'s.
    """
    from memlane.search.engine import model_name
    from memlane.search.indexer import EmbedReport, embed_missing, missing_count

    name = model or core.settings.embedder
    target = model_name(name)
    if target is None:
        raise InvalidInput("embedding is disabled (embedder = none): choose a model, e.g. use")
    if dry_run:
        todo = missing_count(core.store, target)
        if limit is not None:
            todo = min(todo, limit)
        return EmbedReport(model=target, dim=0, embedded=0, remaining=todo, seconds=0.0), engine
    if model is not None and engine.model != target:
        engine = new_engine(core, name)
    report = embed_missing(core.store, engine.embedder, batch=batch, limit=limit, progress=progress)
    return report, engine
