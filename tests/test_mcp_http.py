"""The MCP tools over streamable HTTP (the app the worker mounts at /mcp), on a real socket."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import httpx
import uvicorn
from mcp import Client

from memlane.mcp_server import McpHttpApp, asgi_app
from memlane.service import Memory
from tests.test_mcp_server import ALIASES, TOOLS


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def serve(app: Any, port: int, body: Any) -> None:
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.02)
        try:
            await body()
        finally:
            server.should_exit = True


def test_streamable_http_serves_the_same_tools(memory: Memory) -> None:
    memory.save("The staging database is rebuilt nightly", project="infra", type="lesson")
    app = asgi_app(memory)
    port = free_port()

    async def body() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            tools = await client.list_tools()
            names = {tool.name for tool in tools.tools}
            assert names == TOOLS | set(ALIASES)  # the same as over stdio
            result = await client.call_tool(
                "search", {"query": "staging database", "project": "infra"}
            )
            assert not result.is_error
            assert result.structured_content is not None
            assert result.structured_content["results"][0]["type"] == "lesson"
            bad = await client.call_tool("get_observations", {"ids": "x"})
            assert bad.is_error

    anyio.run(serve, app, port, body)
    memory.stats()  # the worker's memory stays open: the app does not own it


def test_requests_before_the_lifespan_get_503(memory: Memory) -> None:
    app = asgi_app(memory)
    assert isinstance(app, McpHttpApp)

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    response = anyio.run(main)
    assert response.status_code == 503


def test_host_allow_list_rejects_foreign_hosts(memory: Memory) -> None:
    app = asgi_app(memory, allowed_hosts=["127.0.0.1:*"])
    port = free_port()

    async def body() -> None:
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"http://127.0.0.1:{port}/mcp",
                headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
        assert response.status_code in (400, 403, 421)

    anyio.run(serve, app, port, body)


def test_mounted_in_a_host_app_that_runs_its_lifespan(memory: Memory) -> None:
    import contextlib
    from collections.abc import AsyncIterator

    from starlette.applications import Starlette
    from starlette.routing import Route

    mcp = asgi_app(memory)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp.router.lifespan_context(mcp):
            yield

    # Route (not Mount): POST /mcp must not be redirected to /mcp/.
    host = Starlette(
        routes=[Route("/mcp", endpoint=mcp, methods=["GET", "POST", "DELETE"])], lifespan=lifespan
    )
    port = free_port()

    async def body() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            stats = await client.call_tool("stats", {})
            assert not stats.is_error
            assert stats.structured_content is not None
            assert stats.structured_content["memories"] == 0

    anyio.run(serve, host, port, body)
