"""memlane's MCP server: the Memory facade as MCP tools (official ``mcp`` SDK 2.x).

Every tool is a thin adapter: parse the arguments, resolve the project, call one
facade method (or a short composition of them, e.g. ``resume_session``) in a
worker thread, and return a pydantic wire model of ``schemas.py`` — the shapes
HTTP serves too. Tools are module-level functions, listed with their hints in
:data:`TOOLS`; each finds the server's :class:`ServerState` (the Memory, the
current sessions, the client's roots) through its ``Context``, and
:func:`build_server` only registers them. :data:`ALIASES` registers three of
them a second time under Kiro Memory's names (``store_observation``,
``store_knowledge``, ``store_summary``), so its rule files work unchanged.

Results carry both ``structuredContent`` and a compact JSON text block. Claude
Code shows only ``structuredContent`` when a result has it (DESIGN §7), so every
structured result is complete on its own and small: ``search`` returns an index
(id, title, type, date, score), ``timeline`` one line per memory, and only
``get_observations`` returns full records.

Project resolution, first match wins: the tool's ``project`` argument, the
server's default project (``memlane --project P mcp``), the client's first root
(``roots/list``), the server's working directory.

Errors: bad arguments and domain errors (``memlane.errors``) become an MCP error
result (``isError``) with a one-line message (``MemlaneMCPServer.call_tool``);
the server never crashes on them.

Imports stay light: numpy and the embedder load only when a hybrid or semantic
search actually runs (the facade imports them lazily).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast, get_args
from urllib.parse import unquote, urlparse

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, JSONRPCError, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from starlette.types import Message, Receive, Scope, Send

from memlane import __version__
from memlane.core import given_project
from memlane.errors import ConfigError, InvalidInput, MemlaneError
from memlane.mcp_stdio import check_line, serve_stdio
from memlane.models import (
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_QUERY_TYPES,
    MAX_TYPE_CHARS,
    SearchMode,
    SearchScope,
    Summary,
)
from memlane.project import project_name
from memlane.runtime import WRITE_BUDGET_STATE_KEY
from memlane.schemas import (
    Budget,
    CheckpointOut,
    Content,
    ContextOut,
    DeletedOut,
    FeedbackMark,
    FeedbackOut,
    Files,
    GivenSessionId,
    IndexEntry,
    KnowledgeType,
    MemoriesOut,
    MemoryId,
    MemoryOut,
    Metadata,
    ObservationType,
    ReportOut,
    ResumeOut,
    SaveResultOut,
    SearchResultOut,
    SessionDetailOut,
    SessionId,
    SessionOut,
    SessionsLimit,
    SessionsOut,
    StatsOut,
    SummaryItems,
    SummaryOut,
    SummaryTask,
    Tags,
    TimelineEntry,
    TimelineOut,
    Title,
    TopicKey,
    error_message,
    new_session_id,
)
from memlane.service import Memory
from memlane.timeparse import MAX_WHEN_CHARS, parse_when
from memlane.utf8 import storable_json_text

log = logging.getLogger("memlane.mcp")

T = TypeVar("T")

SERVER_NAME = "memlane"
ROOTS_TIMEOUT_S = 3.0

INSTRUCTIONS = """\
memlane is this project's long-term memory: decisions, lessons, constraints and past \
sessions, kept locally.

Workflow:
1. Start of a task: call resume_session (where the last session stopped: checkpoint, \
summary, next steps) or get_context (a short digest of the project's memory).
2. Looking something up: search (compact index: id, title, type, date, score) -> \
timeline(around=id) to see what happened around a hit -> get_observations(ids) for the \
full records of the few ids that matter. Do not fetch everything. Earlier sessions: \
list_sessions -> get_session(session_id) for one session's summary and checkpoint.
3. During the work, save as soon as it happens: save_knowledge for a decision, lesson, \
constraint, heuristic or rejected-approach (say why); pass a stable topic_key \
(e.g. "auth/token-storage") to update that fact later instead of duplicating it. \
save_observation for a notable finding, bugfix or change.
4. End of the task: save_summary (request, completed, learned, next_steps).

Project: the `project` argument if given, else the workspace root of the client, \
else the server's directory. Never store secrets; text inside <private>...</private> \
is dropped before saving.
"""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

# Argument types shared by several tools (JSON schema constraints come from Field).
ProjectArg = Annotated[
    str | None,
    Field(
        default=None,
        max_length=MAX_NAME_CHARS,
        description="Project name (default: the workspace).",
    ),
]
AllProjectsArg = Annotated[
    bool, Field(default=False, description="Of every project (project is then ignored).")
]
SessionArg = Annotated[
    SessionId, Field(default=None, description="Session id (default: the current one).")
]
TypeList = Annotated[
    list[Annotated[str, Field(max_length=MAX_TYPE_CHARS)]], Field(max_length=MAX_QUERY_TYPES)
]


class MemlaneMCPServer(MCPServer):
    """MCPServer whose argument-validation errors read as one line, and whose stdio
    transport answers every line (:mod:`memlane.mcp_stdio`)."""

    memlane_state: ServerState

    async def run_stdio_async(self) -> None:
        await serve_stdio(self)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # The SDK wraps what a tool raised; unwrap ours into one readable line
            # (UnexpectedToolError is a ToolError whose text the SDK withholds).
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"invalid arguments for {name}: {_one_line(cause)}") from cause
            if isinstance(cause, MemlaneError):
                message = " ".join(str(cause).split())
                raise ToolError(f"{name} failed: {message}") from cause
            raise


class _TextKept(FuncMetadata):
    """A tool's argument model that takes a text argument as the client sent it.

    The SDK parses every string argument whose type is not exactly ``str`` as JSON
    (for clients that send a list as ``'["a"]'``): an optional text argument holding
    ``{"area":"auth"}`` became an object and was refused, and ``null`` became None and
    was dropped (a topic key, a project, a session id). Lists are still parsed.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        text = {
            key
            for name, info in self.arg_model.model_fields.items()
            if str in get_args(info.annotation)
            for key in (name, info.alias)
            if key is not None
        }
        parsed = super().pre_parse_json({k: v for k, v in data.items() if k not in text})
        return {key: data[key] if key in text else parsed[key] for key in data}


def _keep_text_arguments(server: MCPServer) -> None:
    """Every tool of ``server`` takes its text arguments as sent (:class:`_TextKept`)."""
    for tool in server._tool_manager.list_tools():  # the SDK has no public setter
        metadata = tool.fn_metadata
        tool.fn_metadata = _TextKept(
            arg_model=metadata.arg_model,
            output_schema=metadata.output_schema,
            output_model=metadata.output_model,
            wrap_output=metadata.wrap_output,
        )


def _one_line(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {error_message(item)}")
    return "; ".join(parts)


def _result(model: BaseModel) -> CallToolResult:
    """A tool result whose text block is compact JSON and whose structure is the model."""
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json())],
        structured_content=model.model_dump(mode="json"),
    )


def _when(value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{what}: {exc}") from None


def root_path(uri: str) -> Path | None:
    """Local path of a ``file://`` root URI, or None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


class ServerState:
    """Per-server state: the lazily opened Memory, each client's current sessions and
    roots.

    Over stdio the server has one client (the process that started it). The worker's
    ``/mcp`` (``many_clients``) serves every client from one server: what one client
    set (its current session, its roots) is kept under its MCP session id, so it is
    never another client's default, and the worker's own directory is no client's
    project. A request without a session id (the stateless protocol) has no defaults.
    """

    def __init__(
        self,
        memory_factory: Callable[[], Memory],
        *,
        default_project: str | None = None,
        cwd: Path | None = None,
        many_clients: bool = False,
        blocking: Blocking | None = None,
    ) -> None:
        self._factory = memory_factory
        self._blocking: Blocking = blocking or in_thread
        self._memory: Memory | None = None
        self._lock = threading.Lock()
        self.default_project = default_project
        self.many_clients = many_clients
        self.cwd = None if many_clients else cwd if cwd is not None else Path.cwd()
        # (client, project) -> the session session_start began there: later saves' default.
        self._current: OrderedDict[tuple[str, str], str] = OrderedDict()
        # client -> its first file:// root (None: it has none), asked once per client.
        self._roots: OrderedDict[str, Path | None] = OrderedDict()

    @property
    def memory(self) -> Memory:
        """The Memory, opened on first use (not at start: editors launch us eagerly)."""
        with self._lock:
            if self._memory is None:
                self._memory = self._factory()
            return self._memory

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn`` (a facade call, which blocks) in a thread; in the worker under its
        limit of concurrent calls, shared with the HTTP API."""
        return cast(T, await self._blocking(fn))

    def client(self, ctx: Context[Any, Any]) -> str | None:
        """Who calls: "" over stdio (one client), the MCP session id over HTTP, None for
        a request that belongs to no session."""
        if not self.many_clients:
            return ""
        try:
            headers = ctx.headers
        except (ValueError, AttributeError):  # outside a request
            return None
        found = headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None
        return found or None

    async def client_root(self, ctx: Context[Any, Any]) -> Path | None:
        """The client's first ``file://`` root, asked once per client; None if it has none."""
        client = self.client(ctx)
        if client is not None and client in self._roots:
            self._roots.move_to_end(client)
            return self._roots[client]
        root = await self._ask_roots(ctx)
        if client is not None:
            _remember(self._roots, client, root)
        return root

    async def _ask_roots(self, ctx: Context[Any, Any]) -> Path | None:
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.roots is None:
            return None
        try:
            with anyio.fail_after(ROOTS_TIMEOUT_S), warnings.catch_warnings():
                # roots is deprecated in the 2026-07-28 protocol, yet it is what
                # editors on the handshake protocols send us; keep using it quietly.
                warnings.simplefilter("ignore")
                listed = await ctx.session.list_roots()
        except Exception as exc:  # the client may not answer; cwd is the fallback
            log.info("roots/list failed (%s); using the server's directory", exc)
            return None
        for root in listed.roots:
            path = root_path(str(root.uri))
            if path is not None:
                return path
        return None

    async def resolve(self, ctx: Context[Any, Any], project: str | None) -> tuple[str, Path | None]:
        """(project name, local project directory if known) for a tool call."""
        name = given_project(project)
        if name is not None:
            return name, None
        if self.default_project:
            return self.default_project, None
        root = await self.client_root(ctx)
        if root is not None:
            return project_name(root), root
        if self.cwd is None:
            raise InvalidInput(
                "give project: this server (the worker's /mcp) serves many workspaces, and"
                " this client shared no workspace root"
            )
        return project_name(self.cwd), self.cwd

    def session_for(
        self, ctx: Context[Any, Any], project: str, session_id: str | None
    ) -> str | None:
        """``session_id``, else the session this client started in ``project``."""
        if session_id is not None:  # "" is None already (schemas.SessionId)
            return session_id
        client = self.client(ctx)
        return None if client is None else self._current.get((client, project))

    def started(self, ctx: Context[Any, Any], project: str, session_id: str) -> None:
        """Make ``session_id`` this client's default in ``project``."""
        client = self.client(ctx)
        if client is not None:
            _remember(self._current, (client, project), session_id)

    def ended(self, ctx: Context[Any, Any], project: str, session_id: str) -> None:
        """``session_id`` ended: no longer this client's default in ``project``."""
        client = self.client(ctx)
        if client is not None and self._current.get((client, project)) == session_id:
            del self._current[(client, project)]


# Clients remembered per server (their current sessions, their roots); the oldest go.
MAX_CLIENTS_REMEMBERED = 4096

K = TypeVar("K")
V = TypeVar("V")
# Runs a blocking facade call off the event loop (the worker passes its limited runner).
Blocking = Callable[[Callable[[], Any]], Awaitable[Any]]


def _remember(table: OrderedDict[K, V], key: K, value: V) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > MAX_CLIENTS_REMEMBERED:
        table.popitem(last=False)


async def in_thread(fn: Callable[[], T]) -> T:
    """Run a facade call in a worker thread (SQLite, and maybe the embedder, block)."""
    return await anyio.to_thread.run_sync(fn)


def _refresh_cursor(memory: Memory, project_dir: Path | None, project: str) -> None:
    """Refresh Cursor's context rules file when this project was set up for Cursor."""
    if project_dir is None:
        return
    from memlane.integrations.editors import cursor_is_installed, refresh_cursor_context

    if cursor_is_installed(project_dir):
        try:
            refresh_cursor_context(memory, project_dir, project=project)
        except (OSError, ConfigError) as exc:
            # A read-only checkout, or one whose rules file is a link (memlane.paths
            # refuses it): the tool call goes on without the refresh.
            log.warning("could not refresh Cursor context in %s: %s", project_dir, exc)


# -- tools: one module-level function per tool, over the facade ---------------------


def server_state(ctx: Context[Any, Any]) -> ServerState:
    """The state of the server handling this call (set by :func:`build_server`)."""
    server = ctx.mcp_server
    assert isinstance(server, MemlaneMCPServer)
    return server.memlane_state


async def search(
    ctx: Context[Any, Any],
    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to find.")
    ],
    project: ProjectArg = None,
    scope: Annotated[
        SearchScope | None,
        Field(description="project only, all projects, or tiered (project first)."),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    mode: SearchMode | None = None,
    types: TypeList | None = None,
    since: Annotated[
        str | None, Field(max_length=MAX_WHEN_CHARS, description="ISO date or age like 7d.")
    ] = None,
    kinds: Annotated[
        TypeList | None, Field(description="Only these kinds (observation, knowledge, …).")
    ] = None,
    as_of: Annotated[
        str | None,
        Field(max_length=MAX_WHEN_CHARS, description="Rank as if now were this time."),
    ] = None,
) -> Annotated[CallToolResult, SearchResultOut]:
    """Search memory; returns a compact index (id, title, type, date, score).

    Then use timeline(around=id) or get_observations(ids) for details."""
    state = server_state(ctx)
    name, _ = await state.resolve(ctx, project)
    after, moment = _when(since, "since"), _when(as_of, "as_of")
    hits = await state.run(
        lambda: state.memory.search(
            query,
            project=name,
            scope=scope,
            limit=limit,
            mode=mode,
            types=types,
            kinds=kinds,
            since=after,
            as_of=moment,
        )
    )
    results = [IndexEntry.model_validate(hit) for hit in hits]
    return _result(SearchResultOut(query=query, project=name, results=results, notice=hits.notice))


async def timeline(
    ctx: Context[Any, Any],
    around: Annotated[MemoryId | None, Field(description="Memory id to center on.")] = None,
    before: Annotated[int, Field(ge=0, le=50)] = 5,
    after: Annotated[int, Field(ge=0, le=50)] = 5,
    start: Annotated[
        str | None, Field(max_length=MAX_WHEN_CHARS, description="ISO date or age like 2d.")
    ] = None,
    end: Annotated[
        str | None, Field(max_length=MAX_WHEN_CHARS, description="ISO date or age.")
    ] = None,
    project: ProjectArg = None,
    session_id: SessionArg = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
) -> Annotated[CallToolResult, TimelineOut]:
    """Memories around one id, or in a time range / session, oldest first (one line each)."""
    state = server_state(ctx)
    lo, hi = _when(start, "start"), _when(end, "end")
    if around is not None:  # with a range or a session too: the core refuses both
        records = await state.run(
            lambda: state.memory.timeline(
                around=around, before=before, after=after, start=lo, end=hi, session_id=session_id
            )
        )
        anchor_project = next((m.project for m in records if m.id == around), None)
        items = [TimelineEntry.model_validate(m) for m in records]
        return _result(TimelineOut(project=anchor_project, anchor=around, items=items))
    name, _ = await state.resolve(ctx, project)
    records = await state.run(
        lambda: state.memory.timeline(
            start=lo, end=hi, project=name, session_id=session_id, limit=limit
        )
    )
    items = [TimelineEntry.model_validate(m) for m in records]
    return _result(TimelineOut(project=name, anchor=None, items=items))


async def get_observations(
    ctx: Context[Any, Any],
    ids: Annotated[list[MemoryId], Field(min_length=1, max_length=50)],
) -> Annotated[CallToolResult, MemoriesOut]:
    """Full records (content, files, tags, metadata) of the given memory ids.

    Ids that do not exist are left out of the result."""
    state = server_state(ctx)

    def fetch() -> MemoriesOut:
        found = {m.id: m for m in state.memory.get_many(ids, record_access=True)}
        return MemoriesOut(
            memories=[MemoryOut.model_validate(found[i]) for i in dict.fromkeys(ids) if i in found]
        )

    return _result(await state.run(fetch))


async def get_context(
    ctx: Context[Any, Any],
    project: ProjectArg = None,
    budget: Budget | None = None,
) -> Annotated[CallToolResult, ContextOut]:
    """The project's context pack: last checkpoint, summaries, key knowledge, in a budget."""
    state = server_state(ctx)
    name, _ = await state.resolve(ctx, project)
    text = await state.run(lambda: state.memory.context(project=name, budget=budget))
    return _result(ContextOut(project=name, text=text))


async def resume_session(
    ctx: Context[Any, Any],
    project: ProjectArg = None,
    session_id: Annotated[
        SessionId, Field(description="Session to resume (default: latest).")
    ] = None,
) -> Annotated[CallToolResult, ResumeOut]:
    """Where work stopped: the last checkpoint, the last summary and the next steps."""
    state = server_state(ctx)
    name, _ = await state.resolve(ctx, project)
    return _result(await state.run(lambda: resume(state.memory, name, session_id)))


async def _save(
    ctx: Context[Any, Any],
    content: str,
    kind: str | None,
    type: str,
    title: str,
    topic_key: str | None,
    files: list[str] | None,
    tags: list[str] | None,
    project: str | None,
    session_id: str | None,
    metadata: dict[str, Any] | None,
) -> CallToolResult:
    """What save_observation and save_knowledge do; ``kind`` None lets the type decide."""
    state = server_state(ctx)
    name, _ = await state.resolve(ctx, project)
    sid = state.session_for(ctx, name, session_id)
    result = await state.run(
        lambda: state.memory.save(
            content,
            project=name,
            type=type,
            kind=kind,
            title=title or None,
            topic_key=topic_key,
            session_id=sid,
            files=files or (),
            tags=tags or (),
            metadata=metadata,
            source="mcp",
        )
    )
    return _result(SaveResultOut.model_validate(result))


async def save_observation(
    ctx: Context[Any, Any],
    content: Content,
    type: ObservationType = "note",
    title: Title = "",
    topic_key: TopicKey = None,
    files: Files | None = None,
    tags: Tags | None = None,
    project: ProjectArg = None,
    session_id: SessionArg = None,
    metadata: Metadata = None,
) -> Annotated[CallToolResult, SaveResultOut]:
    """Save a notable finding, bugfix or change made during the work."""
    return await _save(
        ctx, content, None, type, title, topic_key, files, tags, project, session_id, metadata
    )


async def save_knowledge(
    ctx: Context[Any, Any],
    content: Annotated[Content, Field(description="The fact and why.")],
    type: KnowledgeType,
    title: Title = "",
    topic_key: TopicKey = None,
    files: Files | None = None,
    tags: Tags | None = None,
    project: ProjectArg = None,
    session_id: SessionArg = None,
    metadata: Metadata = None,
) -> Annotated[CallToolResult, SaveResultOut]:
    """Save a decision, lesson, constraint, heuristic or rejected approach (with why)."""
    return await _save(
        ctx,
        content,
        "knowledge",
        type,
        title,
        topic_key,
        files,
        tags,
        project,
        session_id,
        metadata,
    )


async def save_summary(
    ctx: Context[Any, Any],
    request: Annotated[SummaryTask, Field(description="The task.")],
    completed: SummaryItems | None = None,
    learned: SummaryItems | None = None,
    next_steps: SummaryItems | None = None,
    files: Files | None = None,
    project: ProjectArg = None,
    session_id: SessionArg = None,
) -> Annotated[CallToolResult, SaveResultOut]:
    """Save the end-of-session summary (one per session; a new call replaces it)."""
    state = server_state(ctx)
    name, directory = await state.resolve(ctx, project)
    sid = state.session_for(ctx, name, session_id) or new_session_id("mcp")
    summary = Summary(
        session_id=sid,
        project=name,
        is_auto_generated=False,
        request=request,
        completed=tuple(completed or ()),
        learned=tuple(learned or ()),
        next_steps=tuple(next_steps or ()),
        files=tuple(files or ()),
    )

    def save() -> SaveResultOut:
        result = state.memory.save_summary(summary)
        _refresh_cursor(state.memory, directory, name)
        return SaveResultOut.model_validate(result)

    return _result(await state.run(save))


async def session_start(
    ctx: Context[Any, Any],
    session_id: Annotated[SessionId, Field(description="Id to use (default: a new one).")] = None,
    project: ProjectArg = None,
    agent: Annotated[
        str | None, Field(max_length=100, description="The agent's name (default: unknown).")
    ] = None,
) -> Annotated[CallToolResult, SessionOut]:
    """Start (or resume) a session; later saves attach to it by default."""
    state = server_state(ctx)
    name, directory = await state.resolve(ctx, project)
    sid = session_id or new_session_id("mcp")

    def start() -> SessionOut:
        session = state.memory.session_start(sid, project=name, agent=agent)
        _refresh_cursor(state.memory, directory, name)
        return SessionOut.titled(state.memory, [session])[0]

    out = await state.run(start)
    state.started(ctx, name, out.id)
    return _result(out)


async def session_end(
    ctx: Context[Any, Any],
    session_id: SessionArg = None,
    project: ProjectArg = None,
) -> Annotated[CallToolResult, SessionOut]:
    """Mark the session ended."""
    state = server_state(ctx)
    name, directory = await state.resolve(ctx, project)
    sid = state.session_for(ctx, name, session_id)
    if sid is None:
        raise InvalidInput("no session to end: give session_id or call session_start first")

    def end() -> SessionOut:
        session = state.memory.session_end(sid)
        _refresh_cursor(state.memory, directory, name)
        return SessionOut.titled(state.memory, [session])[0]

    out = await state.run(end)
    state.ended(ctx, name, out.id)  # the whole id: ``sid`` may be a prefix of it
    return _result(out)


async def list_sessions(
    ctx: Context[Any, Any],
    project: ProjectArg = None,
    all_projects: AllProjectsArg = False,
    limit: SessionsLimit = 50,
) -> Annotated[CallToolResult, SessionsOut]:
    """Sessions, most recently active first, each with its title (what it was about).

    Then get_session(session_id) for one with its summary and checkpoint."""
    state = server_state(ctx)
    name = None if all_projects else (await state.resolve(ctx, project))[0]
    return _result(
        await state.run(
            lambda: SessionsOut.listed(
                state.memory, project=name, all_projects=all_projects, limit=limit
            )
        )
    )


async def get_session(
    ctx: Context[Any, Any],
    session_id: Annotated[GivenSessionId, Field(description="The session's id.")],
) -> Annotated[CallToolResult, SessionDetailOut]:
    """One session with its summary and latest checkpoint."""
    state = server_state(ctx)
    return _result(await state.run(lambda: SessionDetailOut.of(state.memory, session_id)))


async def stats(
    ctx: Context[Any, Any],
    project: Annotated[
        str | None, Field(max_length=MAX_NAME_CHARS, description="only this project's counts")
    ] = None,
) -> Annotated[CallToolResult, StatsOut]:
    """Counts of memories, sessions, projects, kinds and types; database size; what the
    hooks injected (tokens per session, share of prompts that got anything)."""
    state = server_state(ctx)
    found = await state.run(lambda: state.memory.stats(project=project))
    return _result(StatsOut.model_validate(found))


async def report(
    ctx: Context[Any, Any],
    start: Annotated[
        str | None, Field(max_length=MAX_WHEN_CHARS, description="ISO date or age like 7d.")
    ] = None,
    end: Annotated[
        str | None,
        Field(max_length=MAX_WHEN_CHARS, description="ISO date or age (default: now)."),
    ] = None,
    project: ProjectArg = None,
    all_projects: AllProjectsArg = False,
) -> Annotated[CallToolResult, ReportOut]:
    """Activity over a period (default: last 7 days): counts per day and type, highlights."""
    state = server_state(ctx)
    name, _ = await state.resolve(ctx, project)
    lo, hi = _when(start, "start"), _when(end, "end")
    data = await state.run(
        lambda: state.memory.report(start=lo, end=hi, project=name, all_projects=all_projects)
    )
    return _result(ReportOut(**data))


async def delete_memory(
    ctx: Context[Any, Any],
    ids: Annotated[list[MemoryId], Field(min_length=1, max_length=500)],
    dry_run: bool = False,
) -> Annotated[CallToolResult, DeletedOut]:
    """Delete memories by id; dry_run=true only lists them (in would_delete, deleting
    nothing). Unknown ids are skipped.

    Cannot be undone."""
    state = server_state(ctx)
    unique = list(dict.fromkeys(ids))
    selected = await state.run(lambda: state.memory.delete(ids=unique, dry_run=dry_run))
    return _result(DeletedOut.of(selected, dry_run=dry_run))


async def feedback(
    ctx: Context[Any, Any],
    memory_id: Annotated[MemoryId, Field(description="The id of a memory memlane injected.")],
    mark: Annotated[FeedbackMark, Field(description="Did it help the prompt?")],
    injection_id: Annotated[
        MemoryId | None, Field(description="The injection (default: the memory's latest).")
    ] = None,
) -> Annotated[CallToolResult, FeedbackOut]:
    """Mark a memory memlane injected into a prompt as useful or noise.

    Recall then weighs it for similar prompts: noise demotes it (not injected
    again for the same words), useful lifts it a little."""
    state = server_state(ctx)
    result = await state.run(
        lambda: state.memory.feedback(memory_id, mark, injection_id=injection_id)
    )
    return _result(FeedbackOut.model_validate(result))


# Every tool with its hints, in the order clients list them.
TOOLS: tuple[tuple[Callable[..., Awaitable[CallToolResult]], ToolAnnotations], ...] = (
    (search, READ_ONLY),
    (timeline, READ_ONLY),
    (get_observations, READ_ONLY),
    (get_context, READ_ONLY),
    (resume_session, READ_ONLY),
    (save_observation, WRITE),
    (save_knowledge, WRITE_IDEMPOTENT),
    (save_summary, WRITE_IDEMPOTENT),
    (session_start, WRITE_IDEMPOTENT),
    (session_end, WRITE_IDEMPOTENT),
    (list_sessions, READ_ONLY),
    (get_session, READ_ONLY),
    (stats, READ_ONLY),
    (report, READ_ONLY),
    (feedback, WRITE_IDEMPOTENT),
    (delete_memory, DESTRUCTIVE),
)
# Other names for tools of TOOLS, so rule files written for Kiro Memory's tools work
# unchanged: same function, schema, hints and result.
ALIASES: tuple[tuple[str, Callable[..., Awaitable[CallToolResult]]], ...] = (
    ("store_observation", save_observation),
    ("store_knowledge", save_knowledge),
    ("store_summary", save_summary),
)
# The tools (and aliases) that change memory: over HTTP each call takes a write.
WRITING_TOOLS: frozenset[str] = frozenset(
    [tool.__name__ for tool, hints in TOOLS if not hints.read_only_hint]
    + [alias for alias, tool in ALIASES if not dict(TOOLS)[tool].read_only_hint]
)


def build_server(
    memory_factory: Callable[[], Memory],
    *,
    default_project: str | None = None,
    cwd: Path | None = None,
    many_clients: bool = False,
    blocking: Blocking | None = None,
) -> MemlaneMCPServer:
    """The memlane MCP server with every tool of :data:`TOOLS` registered.

    ``memory_factory`` is called once, on the first tool call that needs the
    store. ``default_project`` (``memlane --project P mcp``) wins over the
    client's roots; ``cwd`` (default: the process's) is the last fallback, but for
    a server of ``many_clients`` (over HTTP: see :class:`ServerState`).
    """
    server = MemlaneMCPServer(
        SERVER_NAME,
        title="memlane memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    server.memlane_state = ServerState(
        memory_factory,
        default_project=default_project,
        cwd=cwd,
        many_clients=many_clients,
        blocking=blocking,
    )
    hints_of = dict(TOOLS)
    for tool, hints in TOOLS:
        server.add_tool(tool, description=_description(tool), annotations=hints)
    for alias, tool in ALIASES:
        description = f"Alias of {tool.__name__} (Kiro Memory's name). {_description(tool)}"
        server.add_tool(tool, name=alias, description=description, annotations=hints_of[tool])
    _keep_text_arguments(server)
    return server


def _description(tool: Callable[..., Any]) -> str:
    return inspect.cleandoc(tool.__doc__ or "")  # not indented like the source


def resume(memory: Memory, project: str, session_id: str | None) -> ResumeOut:
    """Compose the facade: last checkpoint + last summary + their next steps."""
    if session_id is not None:
        session = memory.get_session(session_id)  # its id, or a prefix of it
        session_id = session.id
        checkpoint = memory.latest_checkpoint(session_id=session_id)
        summary = memory.get_summary(session_id)
        project = session.project
    else:
        checkpoint = memory.latest_checkpoint(project=project)
        summary = memory.latest_summary(project=project)
        newest = [
            c
            for c in (checkpoint, summary)
            if c is not None and c.created_at is not None and c.session_id
        ]
        newest.sort(key=lambda c: c.created_at or datetime.min, reverse=True)
        session_id = newest[0].session_id if newest else None
    steps: list[str] = []
    for source in (checkpoint, summary):
        if source is not None:
            steps.extend(step for step in source.next_steps if step not in steps)
    return ResumeOut(
        project=project,
        session_id=session_id,
        checkpoint=CheckpointOut.model_validate(checkpoint) if checkpoint else None,
        summary=SummaryOut.model_validate(summary) if summary else None,
        next_steps=steps,
    )


def run_stdio(
    memory_factory: Callable[[], Memory] | None = None,
    *,
    default_project: str | None = None,
) -> None:
    """Serve MCP over stdin/stdout until the client closes the pipe."""
    if memory_factory is None:
        from memlane.service import open as open_memory

        memory_factory = open_memory
    server = build_server(memory_factory, default_project=default_project)
    try:
        anyio.run(server.run_stdio_async)
    finally:
        server.memlane_state.close()


# MCP sessions the worker keeps open at once (each ~42 KB; idle ones end after the
# SDK's 30 minutes). A local machine runs a few agents; the SDK's 10,000 let one client
# open thousands, which then held up the worker's shutdown past `memlane stop`'s 10 s.
MAX_HTTP_SESSIONS = 256


class McpHttpApp:
    """ASGI app serving the MCP tools over streamable HTTP, whatever path it is mounted at.

    The SDK's session manager needs a running task group: the app starts it on
    an ASGI ``lifespan`` event, or the host enters :meth:`lifespan` in its own
    lifespan (Starlette does not forward lifespan to mounted apps). Until then
    a request is answered 503.
    """

    def __init__(self, server: MCPServer, *, allowed_hosts: list[str] | None = None) -> None:
        self.server = server
        security = (
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=allowed_hosts,
                allowed_origins=[f"http://{h}" for h in allowed_hosts],
            )
            if allowed_hosts
            # The worker checks Host, Origin and the bearer token before us (DESIGN §8).
            else TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        server.streamable_http_app(transport_security=security, max_sessions=MAX_HTTP_SESSIONS)
        self.session_manager = server.session_manager
        self.running = False
        # Hosts that enter a mounted Starlette app's lifespan through
        # ``app.router.lifespan_context(app)`` find the same hook here.
        self.router = _LifespanRouter(self)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the MCP session manager for as long as the host app runs."""
        async with self.session_manager.run():
            self.running = True
            try:
                yield
            finally:
                self.running = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if not self.running:
            await _plain_response(send, 503, b"memlane MCP endpoint is not started")
            return
        if scope.get("method") == "POST":
            receive, body = await _storable_body(receive)
            try:
                message = json.loads(body)
            except (ValueError, RecursionError):
                message = None  # the SDK answers what is not JSON
            # JSON that is no JSON-RPC message (a batch, which MCP no longer has; a request
            # whose id is no string or integer) is answered as over stdio, in one line:
            # the SDK answered a batch with pydantic's whole report.
            checked = check_line(body.decode("utf-8", "replace")) if message is not None else None
            if isinstance(checked, JSONRPCError):
                await _json_response(send, checked.model_dump(by_alias=True), status=400)
                return
            refusal = _over_write_budget(scope, message)
            if refusal is not None:
                await _json_response(send, refusal)
                return
        await self.session_manager.handle_request(scope, receive, send)

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with self.lifespan():
            await send({"type": "lifespan.startup.complete"})
            while (await receive())["type"] != "lifespan.shutdown":
                continue
        await send({"type": "lifespan.shutdown.complete"})


class _LifespanRouter:
    def __init__(self, app: McpHttpApp) -> None:
        self._app = app

    def lifespan_context(self, _host: object) -> AbstractAsyncContextManager[None]:
        return self._app.lifespan()


async def _storable_body(receive: Receive) -> tuple[Receive, bytes]:
    """``receive`` of a request whose body is read ahead, and that body: a JSON body
    escaping a lone surrogate (``"\\ud83d"``), which the SDK's parser refuses, is
    handed on with each as U+FFFD (:func:`memlane.utf8.storable_json_text`), as over
    stdio. The SDK reads the whole body anyway; the worker caps it (413)."""
    ahead: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        ahead.append(message)
        if message["type"] != "http.request":  # the client went away: hand that on
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            repaired = storable_json_text(b"".join(chunks))
            if repaired is not None:
                ahead = [{"type": "http.request", "body": repaired.encode(), "more_body": False}]
                chunks = [ahead[0]["body"]]
            break

    async def replay() -> Message:
        return ahead.pop(0) if ahead else await receive()

    return replay, b"".join(chunks)


def _over_write_budget(scope: Scope, message: object) -> dict[str, Any] | None:
    """The answer to a call of a tool that writes when the client's write budget is
    spent (a tool error the agent can read and retry after), else None. Reads, the
    handshake and notifications take no write (the worker counts them as requests)."""
    budget = scope.get("state", {}).get(WRITE_BUDGET_STATE_KEY)
    if budget is None:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if name not in WRITING_TOOLS:
        return None
    wait = budget()
    if not wait:
        return None
    text = f"rate limited: too many writes; retry in {max(1, math.ceil(wait))} s"
    result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return {
        "jsonrpc": "2.0",
        "id": message.get("id"),
        "result": result.model_dump(by_alias=True, exclude_none=True, mode="json"),
    }


async def _json_response(
    send: Callable[[Any], Awaitable[None]], answer: dict[str, Any], *, status: int = 200
) -> None:
    await _plain_response(send, status, json.dumps(answer).encode(), b"application/json")


async def _plain_response(
    send: Callable[[Any], Awaitable[None]],
    status: int,
    body: bytes,
    content_type: bytes = b"text/plain; charset=utf-8",
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type)],
        }
    )
    await send({"type": "http.response.body", "body": body})


def asgi_app(
    memory: Memory,
    *,
    allowed_hosts: list[str] | None = None,
    blocking: Blocking | None = None,
) -> McpHttpApp:
    """The MCP tools over streamable HTTP for the worker to mount at ``/mcp``.

    Mount it behind the worker's auth (it does no auth of its own) and enter
    ``app.lifespan()`` in the worker's lifespan. The worker owns ``memory``: it
    is not closed here. ``allowed_hosts`` turns on the SDK's own Host/Origin
    check as a second line of defence. ``blocking`` runs each facade call (the
    worker's, under its limit of concurrent calls; default: a thread each).
    """
    server = build_server(lambda: memory, many_clients=True, blocking=blocking)
    return McpHttpApp(server, allowed_hosts=allowed_hosts)
