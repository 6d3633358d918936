"""The worker's ASGI app: REST API, SSE live feed, dashboard and (if present) MCP.

:func:`create_app` builds a Starlette app around one shared
:class:`~memlane.service.Memory`. Every route is a thin adapter: validate the
query or body with a pydantic model, call one facade method in the thread pool
(the store serializes access with its own lock), serialize a wire model of
``schemas.py``. Domain errors become their HTTP status with an
:class:`~memlane.schemas.ErrorOut` body; validation errors are 422 and name the
field. Security (DESIGN §8) is one middleware: :mod:`memlane.worker.web.security`.

The routes come from one table, :data:`OPERATIONS`, which also produces the
OpenAPI document at ``/api/openapi.json``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar
from urllib.parse import unquote

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from memlane import __version__
from memlane.errors import InvalidInput, MemlaneError, NotFound
from memlane.models import Summary
from memlane.schemas import (
    CheckpointOut,
    CheckpointResult,
    ContextOut,
    DeletedOut,
    EmbeddingStatsOut,
    FeedbackOut,
    FeedbackRequest,
    HealthOut,
    HitsOut,
    IdsRequest,
    InjectionOut,
    InjectionsOut,
    KnowledgeRequest,
    MemoriesOut,
    MemoryOut,
    ObservationRequest,
    RecallRequest,
    ReportOut,
    SaveResultOut,
    SearchHitOut,
    SessionDetailOut,
    SessionOut,
    SessionsOut,
    SessionStartRequest,
    StatsOut,
    SummaryRequest,
    UpdateRequest,
    Wire,
    error_message,
    new_session_id,
)
from memlane.service import Memory
from memlane.text import SHOWN_ESCAPED
from memlane.utf8 import storable_json_text
from memlane.worker.web.events import ChangeFeed
from memlane.worker.web.mcp_mount import LazyMcp, McpApp
from memlane.worker.web.openapi import Handler, Operation, build_openapi
from memlane.worker.web.params import (
    CheckpointQuery,
    ContextQuery,
    DeleteQuery,
    InjectionsQuery,
    ListQuery,
    NoQuery,
    ProjectQuery,
    ReportQuery,
    SearchQuery,
    SessionQuery,
    SessionsQuery,
    TimelineQuery,
)
from memlane.worker.web.security import (
    SESSION_HEADER,
    SESSION_STATE_KEY,
    SecurityMiddleware,
    SecurityPolicy,
)

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
M = TypeVar("M", bound=BaseModel)


class EmbeddingStatus(Protocol):
    """What the background embedder reports (``memlane.worker.server.EmbeddingLoop``)."""

    @property
    def model(self) -> str | None: ...

    @property
    def state(self) -> str: ...

    @property
    def last_error(self) -> str | None: ...


class LoginLinkOut(Wire):
    """A one-time dashboard sign-in URL (valid for two minutes, single use)."""

    url: str


# Facade calls run in worker threads, at most this many at once: the ranking code holds
# the GIL, and with dozens of threads competing for it the event loop (which answers
# 429s, heartbeats and cheap routes) would starve.
BLOCKING_CALLS = 4
_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass
class AppContext:
    memory: Memory
    policy: SecurityPolicy
    feed: ChangeFeed
    embeddings: EmbeddingStatus | None = None
    search_mode: str = "hybrid"
    started_at: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    limiter: anyio.CapacityLimiter | None = None  # created in the app's event loop
    # A hook waits ~200 ms for recall: a request still queued after this is answered
    # 503 at once instead of computing a result nobody will read.
    recall_queue_limit: float = 0.5

    async def call(self, func: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Run a blocking facade call in a thread, under the concurrency limit."""
        if self.limiter is None:
            self.limiter = anyio.CapacityLimiter(BLOCKING_CALLS)
        return await anyio.to_thread.run_sync(
            functools.partial(func, *args, **kwargs), limiter=self.limiter
        )


class WorkerBusy(Exception):
    """The worker is too loaded to answer in time (503; the hook falls back)."""


class InvalidRequest(Exception):
    """A request the pydantic models refused; carries the errors for the 422 body."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("invalid request")
        self.errors = errors


def _ctx(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


def reply(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


def error_body(error: str, message: str, fields: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"error": error, "message": message, "fields": fields or []})


def _field_errors(exc: ValidationError, where: str) -> list[dict[str, Any]]:
    """pydantic errors as ``{"field", "message"}``; ``field`` None for the whole body."""
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = [str(part) for part in err.get("loc", ())]
        message = error_message(err) if loc else f"{where}: {error_message(err)}"
        out.append({"field": ".".join(loc) if loc else None, "message": message})
    return out


def parse_query(request: Request, model: type[M]) -> M:
    try:
        return model.model_validate(dict(request.query_params))
    except ValidationError as exc:
        raise InvalidRequest(_field_errors(exc, "query")) from None


async def parse_body(request: Request, model: type[M]) -> M:
    """The JSON body as ``model``. pydantic's parser refuses a lone surrogate escape
    (``"\\ud83d"``: half an emoji) that Python's json reads; such a body is read as the
    CLI, the importers and MCP read it, each lone surrogate as U+FFFD."""
    raw = await request.body()
    try:
        return model.model_validate_json(raw or b"")
    except ValidationError as exc:
        repaired = storable_json_text(raw)
        if repaired is None:
            raise InvalidRequest(_field_errors(exc, "body")) from None
    try:
        return model.model_validate_json(repaired)
    except ValidationError as exc:
        raise InvalidRequest(_field_errors(exc, "body")) from None


def _project_scope(project: str | None, scope: str | None) -> tuple[str | None, str]:
    """The API has no working directory: without a project, search every project. A
    scope of one project (``project``, ``tiered``) needs it named: the core would take
    the worker's directory (its data folder), as a save, a recall and a checkpoint would
    (their models require a project, :data:`memlane.schemas.GivenProject`)."""
    if scope is None:
        scope = "tiered" if project else "all"
    if scope != "all" and project is None:
        raise InvalidInput(f"give project: a search of scope {scope!r} needs one")
    return project, scope


# -- routes ---------------------------------------------------------------------------


async def health(request: Request) -> Response:
    ctx = _ctx(request)
    out = HealthOut(status="ok", version=__version__)
    policy = ctx.policy
    if policy.bearer_ok(request.headers.get("authorization", "")) or policy.cookie_ok(
        request.headers.get("cookie", ""), request.headers.get(SESSION_HEADER, "")
    ):
        out = HealthOut(
            status="ok",
            version=__version__,
            pid=ctx.pid,
            started_at=ctx.started_at,
            db=ctx.memory.location,
        )
    return reply(out)


async def auth(request: Request) -> Response:
    """Redeem a one-time code: set the HttpOnly dashboard cookie and go to the dashboard,
    with the tab's session key in the fragment (the page keeps it, no server sees it)."""
    policy = _ctx(request).policy
    code = request.query_params.get("code", "")
    if not code or not policy.login_codes.redeem(code):
        # The dashboard's own styled page (403): it says to run `memlane dashboard` again.
        return FileResponse(
            STATIC_DIR / "expired.html", status_code=403, media_type="text/html; charset=utf-8"
        )
    cookie, tab_key = policy.new_session()
    response = RedirectResponse(f"/#session={tab_key}", status_code=303)
    response.headers.append("set-cookie", cookie)
    return response


async def login_link(request: Request) -> Response:
    policy = _ctx(request).policy
    code = policy.login_codes.issue()
    base = f"{request.url.scheme}://{request.url.netloc}"
    return reply(LoginLinkOut(url=f"{base}/auth?code={code}"))


async def index(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")


# The characters the dashboard shows as escapes, as a module its scripts import
# (static/js/dom.js): the CLI's class, so a person sees the same text in both.
ESCAPES_JS = f"export const SHOWN_ESCAPED = /{SHOWN_ESCAPED}/g;\n"


async def escapes_js(request: Request) -> Response:
    return Response(ESCAPES_JS, media_type="text/javascript; charset=utf-8")


async def openapi(request: Request) -> Response:
    return JSONResponse(request.app.state.openapi)


async def context(request: Request) -> Response:
    ctx = _ctx(request)
    project = request.path_params["project"]
    query = parse_query(request, ContextQuery)
    text = await ctx.call(ctx.memory.context, project=project, budget=query.budget)
    return reply(ContextOut(project=project, text=text))


async def _search(request: Request, mode: str) -> Response:
    ctx = _ctx(request)
    query = parse_query(request, SearchQuery)
    project, scope = _project_scope(query.project, query.scope)
    hits = await ctx.call(
        ctx.memory.search,
        query.q,
        project=project,
        scope=scope,
        limit=query.limit,
        mode=query.mode or mode,
        as_of=query.as_of,
        kinds=[query.kind] if query.kind else None,
        types=[query.type] if query.type else None,
        since=query.since,
        min_score=query.min_score,
        fusion=query.fusion,
    )
    return reply(HitsOut(hits=[SearchHitOut.model_validate(h) for h in hits], notice=hits.notice))


async def search(request: Request) -> Response:
    return await _search(request, "keyword")


async def hybrid_search(request: Request) -> Response:
    return await _search(request, _ctx(request).search_mode)


async def recall(request: Request) -> Response:
    ctx = _ctx(request)
    body = await parse_body(request, RecallRequest)
    project = body.project
    arrived = time.monotonic()

    def run() -> HitsOut:
        if time.monotonic() - arrived > ctx.recall_queue_limit:
            raise WorkerBusy
        candidates, chosen = ctx.memory.prompt_recall(
            body.prompt,
            project=project,
            session_id=body.session_id,
            mode=ctx.search_mode,
            limit=body.limit,
        )
        return HitsOut(
            hits=[SearchHitOut.model_validate(h) for h in chosen], notice=candidates.notice
        )

    # Waiting for a thread counts too: give up on the queue, not only inside the thread.
    with anyio.move_on_after(ctx.recall_queue_limit) as waited:
        answer = await ctx.call(run)
    if waited.cancelled_caught:
        raise WorkerBusy
    return reply(answer)


async def timeline(request: Request) -> Response:
    ctx = _ctx(request)
    q = parse_query(request, TimelineQuery)
    rows = await ctx.call(
        ctx.memory.timeline,
        around=q.around,
        before=q.before,
        after=q.after,
        start=q.start,
        end=q.end,
        project=q.project,
        all_projects=q.project is None,
        session_id=q.session_id,
        limit=q.limit,
    )
    return reply(MemoriesOut(memories=[MemoryOut.model_validate(m) for m in rows]))


async def list_observations(request: Request) -> Response:
    ctx = _ctx(request)
    q = parse_query(request, ListQuery)
    rows = await ctx.call(
        ctx.memory.list_memories,
        project=q.project,
        all_projects=q.project is None,
        kinds=[q.kind] if q.kind else None,
        types=[q.type] if q.type else None,
        session_id=q.session_id,
        limit=q.limit,
        offset=q.offset,
    )
    return reply(MemoriesOut(memories=[MemoryOut.model_validate(m) for m in rows]))


async def _save(
    request: Request, model: type[ObservationRequest | KnowledgeRequest], kind: str | None
) -> Response:
    ctx = _ctx(request)
    body = await parse_body(request, model)
    project = body.project
    result = await ctx.call(
        lambda: ctx.memory.save(
            body.content,
            project=project,
            type=body.type,
            kind=kind,
            title=body.title,
            session_id=body.session_id,
            topic_key=body.topic_key,
            source="api",
            files=body.files,
            tags=body.tags,
            metadata=body.metadata,
        )
    )
    return reply(SaveResultOut.model_validate(result), 201 if result.status == "created" else 200)


async def save_observation(request: Request) -> Response:
    return await _save(request, ObservationRequest, None)


async def save_knowledge(request: Request) -> Response:
    return await _save(request, KnowledgeRequest, "knowledge")


async def batch_observations(request: Request) -> Response:
    ctx = _ctx(request)
    body = await parse_body(request, IdsRequest)
    rows = await ctx.call(lambda: ctx.memory.get_many(body.ids, record_access=True))
    return reply(MemoriesOut(memories=[MemoryOut.model_validate(m) for m in rows]))


async def get_observation(request: Request) -> Response:
    ctx = _ctx(request)
    memory_id = request.path_params["id"]
    row = await ctx.call(lambda: ctx.memory.get(memory_id, record_access=True))
    return reply(MemoryOut.model_validate(row))


async def update_observation(request: Request) -> Response:
    ctx = _ctx(request)
    body = await parse_body(request, UpdateRequest)
    row = await ctx.call(
        lambda: ctx.memory.update(
            request.path_params["id"],
            content=body.content,
            title=body.title,
            type=body.type,
            tags=body.tags,
            files=body.files,
        )
    )
    return reply(MemoryOut.model_validate(row))


async def delete_observation(request: Request) -> Response:
    ctx = _ctx(request)
    dry_run = parse_query(request, DeleteQuery).dry_run
    memory_id = request.path_params["id"]
    selected = await ctx.call(lambda: ctx.memory.delete(id=memory_id, dry_run=dry_run))
    return reply(DeletedOut.of(selected, dry_run=dry_run))


async def save_summary(request: Request) -> Response:
    ctx = _ctx(request)
    body = await parse_body(request, SummaryRequest)

    def run() -> Any:
        session = ctx.memory.find_session(body.session_id)
        project = body.project or (session.project if session else None)
        if project is None:
            raise NotFound(
                f"no session {body.session_id!r}: give 'project' to file the summary under"
            )
        return ctx.memory.save_summary(
            Summary(
                session_id=body.session_id,
                project=project,
                is_auto_generated=body.is_auto_generated,
                request=body.request,
                completed=tuple(body.completed),
                learned=tuple(body.learned),
                next_steps=tuple(body.next_steps),
                files=tuple(body.files),
            )
        )

    result = await ctx.call(run)
    return reply(SaveResultOut.model_validate(result), 201 if result.status == "created" else 200)


async def checkpoint(request: Request) -> Response:
    ctx = _ctx(request)
    project = parse_query(request, CheckpointQuery).project
    found = await ctx.call(lambda: ctx.memory.latest_checkpoint(project=project))
    return reply(
        CheckpointResult(checkpoint=CheckpointOut.model_validate(found) if found else None)
    )


async def sessions(request: Request) -> Response:
    ctx = _ctx(request)
    q = parse_query(request, SessionsQuery)
    listed = await ctx.call(
        lambda: SessionsOut.listed(
            ctx.memory, project=q.project, all_projects=q.project is None, limit=q.limit
        )
    )
    return reply(listed)


async def session_start(request: Request) -> Response:
    """Start (or resume) a session: the MCP ``session_start`` over HTTP."""
    ctx = _ctx(request)
    body = await parse_body(request, SessionStartRequest)
    session_id = body.session_id or new_session_id("api")

    def run() -> SessionOut:
        session = ctx.memory.session_start(session_id, project=body.project, agent=body.agent)
        return SessionOut.titled(ctx.memory, [session])[0]

    return reply(await ctx.call(run))


async def session_end(request: Request) -> Response:
    """Mark a session ended: the MCP ``session_end`` over HTTP."""
    ctx = _ctx(request)
    session_id = request.path_params["session_id"]

    def run() -> SessionOut:
        session = ctx.memory.session_end(session_id)
        return SessionOut.titled(ctx.memory, [session])[0]

    return reply(await ctx.call(run))


async def session_detail(request: Request) -> Response:
    return await _session_detail(_ctx(request), request.path_params["session_id"])


async def session_by_id(request: Request) -> Response:
    """The session detail for an id in the query string. A path segment cannot carry
    every id: URL normalisation removes ``.`` and ``..`` (browsers also ``%2E%2E``),
    so the dashboard asks here."""
    query = parse_query(request, SessionQuery)
    return await _session_detail(_ctx(request), query.session_id)


async def _session_detail(ctx: AppContext, session_id: str) -> Response:
    return reply(await ctx.call(SessionDetailOut.of, ctx.memory, session_id))


async def session_checkpoint(request: Request) -> Response:
    ctx = _ctx(request)
    session_id = request.path_params["session_id"]
    found = await ctx.call(lambda: ctx.memory.latest_checkpoint(session_id=session_id))
    return reply(
        CheckpointResult(checkpoint=CheckpointOut.model_validate(found) if found else None)
    )


async def report(request: Request) -> Response:
    ctx = _ctx(request)
    q = parse_query(request, ReportQuery)
    data = await ctx.call(
        lambda: ctx.memory.report(
            start=q.start, end=q.end, project=q.project, all_projects=q.project is None
        )
    )
    return reply(ReportOut.model_validate(data))


async def stats(request: Request) -> Response:
    ctx = _ctx(request)
    q = parse_query(request, ProjectQuery)
    found = await ctx.call(lambda: ctx.memory.stats(project=q.project))
    return reply(StatsOut.model_validate(found))


async def injections(request: Request) -> Response:
    ctx = _ctx(request)
    q = parse_query(request, InjectionsQuery)
    entries = await ctx.call(
        lambda: ctx.memory.injection_log(
            session_id=q.session_id,
            project=q.project,
            all_projects=q.project is None,
            limit=q.limit,
        )
    )
    return reply(InjectionsOut(injections=[InjectionOut.model_validate(e) for e in entries]))


async def feedback(request: Request) -> Response:
    ctx = _ctx(request)
    body = await parse_body(request, FeedbackRequest)
    result = await ctx.call(
        lambda: ctx.memory.feedback(body.memory_id, body.mark, injection_id=body.injection_id)
    )
    return reply(FeedbackOut.model_validate(result))


async def embedding_stats(request: Request) -> Response:
    ctx = _ctx(request)
    per_model = await ctx.call(ctx.memory.embedding_counts)
    source = ctx.embeddings
    model = source.model if source else None
    if model:
        # Two counts: the full statistics take ~1 s at 1M memories.
        memories = await ctx.call(ctx.memory.memory_count)
        embedded = per_model.get(model, 0)
    else:
        found = await ctx.call(ctx.memory.stats)
        memories, embedded = found.memories, found.embedded
    return reply(
        EmbeddingStatsOut(
            model=model,
            state=source.state if source else "off",
            memories=memories,
            per_model=per_model,
            embedded=embedded,
            pending=max(memories - embedded, 0),
            last_error=source.last_error if source else None,
        )
    )


async def events(request: Request) -> Response:
    from starlette.responses import StreamingResponse

    feed = _ctx(request).feed
    until = (request.scope.get("state") or {}).get(SESSION_STATE_KEY)  # a dashboard's sign-in
    stream = await feed.stream(request.headers.get("last-event-id"), until=until)
    if stream is None:
        return Response(
            error_body("too_many_clients", "the live feed has too many clients; retry later"),
            status_code=503,
            media_type="application/json",
            headers={"Retry-After": "5"},
        )
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/health", health, "Liveness (details with a token)", response=HealthOut,
              tag="worker", public=True),
    Operation("POST", "/api/dashboard/login", login_link, "A one-time dashboard sign-in URL",
              response=LoginLinkOut, tag="worker"),
    Operation("GET", "/api/context/{project}", context, "SessionStart context pack of a project",
              query=ContextQuery, response=ContextOut),
    Operation("GET", "/api/search", search, "Keyword search", query=SearchQuery,
              response=HitsOut),
    Operation("GET", "/api/hybrid-search", hybrid_search, "Hybrid (keyword + vector) search",
              query=SearchQuery, response=HitsOut),
    Operation("POST", "/api/recall", recall, "What the prompt hook injects for a prompt",
              body=RecallRequest, response=HitsOut, errors=(503,)),
    Operation("GET", "/api/timeline", timeline, "Memories around an id or in a time range",
              query=TimelineQuery, response=MemoriesOut),
    Operation("GET", "/api/observations", list_observations, "Recent memories, filtered",
              query=ListQuery, response=MemoriesOut),
    Operation("POST", "/api/observations", save_observation, "Save a memory",
              body=ObservationRequest, response=SaveResultOut, statuses=(200, 201)),
    Operation("POST", "/api/observations/batch", batch_observations, "Fetch memories by id",
              body=IdsRequest, response=MemoriesOut),
    Operation("GET", "/api/observations/{id:int}", get_observation, "One memory",
              response=MemoryOut),
    Operation("PATCH", "/api/observations/{id:int}", update_observation, "Edit a memory",
              body=UpdateRequest, response=MemoryOut),
    Operation("DELETE", "/api/observations/{id:int}", delete_observation, "Delete a memory",
              query=DeleteQuery, response=DeletedOut),
    Operation("POST", "/api/summaries", save_summary, "Save a session summary",
              body=SummaryRequest, response=SaveResultOut, statuses=(200, 201)),
    Operation("POST", "/api/knowledge", save_knowledge, "Save knowledge (decision, lesson…)",
              body=KnowledgeRequest, response=SaveResultOut, statuses=(200, 201)),
    Operation("GET", "/api/checkpoint", checkpoint, "Latest checkpoint of a project",
              query=CheckpointQuery, response=CheckpointResult),
    Operation("GET", "/api/sessions", sessions, "Sessions, latest activity first",
              query=SessionsQuery, response=SessionsOut),
    Operation("POST", "/api/sessions", session_start,
              "Start (or resume) a session; later saves name it in session_id",
              body=SessionStartRequest, response=SessionOut),
    Operation("POST", "/api/sessions/{session_id}/end", session_end,
              "End a session (the id percent-encoded: %2F for /)", response=SessionOut),
    Operation("GET", "/api/sessions/{session_id}", session_detail,
              "A session with its summary and checkpoint (the id percent-encoded: %2F for /)",
              response=SessionDetailOut),
    Operation("GET", "/api/session", session_by_id,
              "A session with its summary and checkpoint, any id (. and .. too)",
              query=SessionQuery, response=SessionDetailOut),
    Operation("GET", "/api/sessions/{session_id}/checkpoint", session_checkpoint,
              "Latest checkpoint of a session", response=CheckpointResult),
    Operation("GET", "/api/report", report, "Activity over a period", query=ReportQuery,
              response=ReportOut),
    Operation("GET", "/api/stats", stats, "Database statistics (of one project with ?project=)",
              query=ProjectQuery, response=StatsOut),
    Operation("GET", "/api/embeddings/stats", embedding_stats, "Background embedding progress",
              response=EmbeddingStatsOut),
    Operation("GET", "/api/injections", injections,
              "What the hooks injected, in time order (a session's, a project's or all)",
              query=InjectionsQuery, response=InjectionsOut),
    Operation("POST", "/api/feedback", feedback,
              "Mark an injected memory useful or noise for the prompt it was injected for",
              body=FeedbackRequest, response=FeedbackOut, errors=(409,)),
    Operation("GET", "/api/events", events, "Live feed (Server-Sent Events)",
              media_type="text/event-stream", tag="worker"),
)  # fmt: skip


# -- errors ---------------------------------------------------------------------------


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, InvalidRequest)
    first = exc.errors[0] if exc.errors else {"field": None, "message": "invalid request"}
    field_name, text = first["field"], str(first["message"])
    message = text if field_name is None else f"{field_name}: {text}"
    return Response(
        error_body("invalid_input", message, exc.errors), 422, media_type="application/json"
    )


async def _busy(request: Request, exc: Exception) -> Response:
    return Response(
        error_body("busy", "the worker is busy; fall back to local recall"),
        503,
        media_type="application/json",
        headers={"Retry-After": "1"},
    )


async def _domain(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemlaneError)
    status = exc.http_status
    name = {404: "not_found", 409: "conflict", 422: "invalid_input", 503: "store_unavailable"}
    if status >= 500:
        log.error("request %s %s failed: %s", request.method, request.url.path, exc)
    return Response(
        error_body(name.get(status, "error"), str(exc)), status, media_type="application/json"
    )


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    name = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return Response(
        error_body(name, str(exc.detail)),
        exc.status_code,
        media_type="application/json",
        headers=exc.headers,
    )


async def _crash(request: Request, exc: Exception) -> Response:
    log.exception("request %s %s crashed", request.method, request.url.path)
    return Response(
        error_body("internal_error", "the worker hit an unexpected error; see its log"),
        500,
        media_type="application/json",
    )


# -- factory --------------------------------------------------------------------------


class SegmentRoute(Route):
    """A route whose ``{name}`` parameters are whole segments of the path as it was sent,
    each percent-decoded after matching.

    Starlette matches the decoded path, where an id holding "/" (sent as ``%2F``) is two
    segments: ``/api/sessions/team%2Falice`` matched nothing, and
    ``/api/sessions/x%2Fcheckpoint`` was the checkpoint of session ``x``.
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        raw = scope.get("raw_path")
        if scope["type"] != "http" or not isinstance(raw, bytes):
            return super().matches(scope)
        match, child = super().matches({**scope, "path": raw.decode("latin-1")})
        if match is not Match.NONE:
            params = child["path_params"]
            for name in self.param_convertors:
                if isinstance(params.get(name), str):
                    params[name] = unquote(params[name])
        return match, child


def _endpoint(op: Operation) -> Handler:
    """``op``'s handler; for a route without a query model, one that refuses any query
    parameter (422, as a query model refuses one it does not know): ignored, ``?dry_run=1``
    or a misspelt parameter looked like it had been applied."""
    if op.query is not None:
        return op.endpoint

    @functools.wraps(op.endpoint)
    async def endpoint(request: Request) -> Response:
        parse_query(request, NoQuery)
        return await op.endpoint(request)

    return endpoint


def _api_routes(operations: tuple[Operation, ...]) -> list[BaseRoute]:
    """One route per path, so a 405 lists every method the path supports in ``Allow``.

    A path with a text parameter (a project, a session id) is a :class:`SegmentRoute`.
    """
    by_path: dict[str, dict[str, Operation]] = {}
    for op in operations:
        by_path.setdefault(op.path, {})[op.method] = op
    routes: list[BaseRoute] = []
    for path, ops in by_path.items():
        route = SegmentRoute if re.search(r"{\w+}", path) else Route
        if len(ops) == 1:
            (op,) = ops.values()
            routes.append(route(path, _endpoint(op), methods=[op.method]))
            continue
        handlers = {method: _endpoint(op) for method, op in ops.items()}

        async def dispatch(request: Request, handlers: dict[str, Handler] = handlers) -> Response:
            handler = handlers.get(request.method) or handlers["GET"]  # HEAD is served as GET
            return await handler(request)

        routes.append(route(path, dispatch, methods=list(ops)))
    return routes


def _mcp_app(ctx: AppContext) -> McpApp | None:
    try:
        from memlane import mcp_server
    except ImportError as exc:
        log.info("MCP over HTTP is off: memlane.mcp_server is not available (%s)", exc)
        return None
    # MCP's facade calls share the API's limit of concurrent calls.
    return mcp_server.asgi_app(ctx.memory, blocking=ctx.call)


def create_app(
    memory: Memory,
    policy: SecurityPolicy,
    *,
    embeddings: EmbeddingStatus | None = None,
    search_mode: str | None = None,
    feed: ChangeFeed | None = None,
    mount_mcp: bool = True,
    recall_queue_limit: float = 0.5,
) -> Starlette:
    """The worker app over ``memory``, guarded by ``policy``.

    ``embeddings`` reports background embedding progress (``/api/embeddings/stats``);
    ``feed`` defaults to a :class:`ChangeFeed` polling twice a second. The app starts
    and stops the feed in its lifespan.
    """
    feed = feed or ChangeFeed(memory)
    ctx = AppContext(
        memory=memory,
        policy=policy,
        feed=feed,
        embeddings=embeddings,
        search_mode=search_mode or memory.settings.search_mode,
        recall_queue_limit=recall_queue_limit,
    )
    routes: list[BaseRoute] = _api_routes(OPERATIONS)
    routes += [
        Route("/", index, methods=["GET"]),
        Route("/auth", auth, methods=["GET"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
        Route("/static/js/escapes.js", escapes_js, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    mcp = LazyMcp(functools.partial(_mcp_app, ctx)) if mount_mcp else None
    if mcp is not None:
        # Both /mcp and /mcp/… reach the MCP app (no redirect: POSTs must not bounce).
        routes += [Route("/mcp", mcp), Mount("/mcp", app=mcp)]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await feed.start()
        async with contextlib.AsyncExitStack() as stack:
            if mcp is not None:
                # Starlette does not run a mounted app's lifespan: enter it here.
                await stack.enter_async_context(mcp.lifespan())
            try:
                yield
            finally:
                await feed.stop()

    app = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityMiddleware, policy=policy)],
        exception_handlers={
            InvalidRequest: _invalid,
            WorkerBusy: _busy,
            MemlaneError: _domain,
            HTTPException: _http,
            Exception: _crash,
        },
        lifespan=lifespan,
    )
    app.state.ctx = ctx
    app.state.openapi = build_openapi(OPERATIONS)
    return app
