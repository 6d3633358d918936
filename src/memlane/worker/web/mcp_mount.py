"""``/mcp`` of the worker: the MCP server imported and started on its first request.

Importing the MCP SDK costs about 0.4 s of CPU, a third of the worker's start,
and most workers never serve an MCP request. :class:`LazyMcp` is mounted in
its place: the first ``/mcp`` request wakes a task of the host app's lifespan,
which builds the real app (the import runs in a thread, so the event loop keeps
serving) and enters the real app's lifespan in that same task, where it is also
left at shutdown (anyio cancel scopes must be exited by the task that entered
them). Requests wait for that first start; later ones go straight through.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol

import anyio
import anyio.to_thread
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)


class McpApp(Protocol):
    """The real MCP app (:class:`memlane.mcp_server.McpHttpApp`): ASGI, with a lifespan."""

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


class LazyMcp:
    """ASGI app that builds the real MCP app with ``factory`` on the first request.

    ``factory`` returns the app, or None when MCP over HTTP is unavailable (then
    ``/mcp`` answers 404). The host enters :meth:`lifespan` in its own lifespan;
    before that, or after it, a request is answered 503.
    """

    def __init__(self, factory: Callable[[], McpApp | None]) -> None:
        self._factory = factory
        self._app: McpApp | None = None
        self._wanted: anyio.Event | None = None
        self._ready: anyio.Event | None = None
        self._stop: anyio.Event | None = None
        self._closing = False

    @property
    def started(self) -> bool:
        """True once the real app was built (by a first request)."""
        return self._ready is not None and self._ready.is_set() and self._app is not None

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Serve for as long as the host app runs; stop the real app (if started) after."""
        self._wanted, self._ready, self._stop = anyio.Event(), anyio.Event(), anyio.Event()
        self._closing = False
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._run)
            try:
                yield
            finally:
                self._closing = True
                self._wanted.set()
                self._stop.set()
        self._ready = None

    async def _run(self) -> None:
        assert self._wanted is not None
        assert self._ready is not None
        assert self._stop is not None
        await self._wanted.wait()
        if self._closing:
            self._ready.set()
            return
        try:
            self._app = await anyio.to_thread.run_sync(self._factory)
        except Exception:  # a broken MCP server must not take the worker down
            log.exception("MCP over HTTP is off: building the MCP app failed")
            self._app = None
        async with contextlib.AsyncExitStack() as stack:
            if self._app is not None:
                try:
                    await stack.enter_async_context(self._app.lifespan())
                except Exception:
                    log.exception("MCP over HTTP is off: starting the MCP app failed")
                    self._app = None
            self._ready.set()
            await self._stop.wait()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self._wanted is None or self._ready is None or self._closing:
            await PlainTextResponse("memlane MCP endpoint is not started", 503)(
                scope, receive, send
            )
            return
        self._wanted.set()
        await self._ready.wait()
        if self._app is None:
            off = PlainTextResponse("MCP over HTTP is off on this worker (see its log)", 404)
            await off(scope, receive, send)
            return
        await self._app(scope, receive, send)
