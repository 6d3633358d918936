"""The MCP tools over streamable HTTP (the app the worker mounts at /mcp), on a real socket."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp import Client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

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


def test_a_bad_body_gets_a_json_rpc_error_and_the_session_goes_on(memory: Memory) -> None:
    # What the SDK does over HTTP for the lines memlane.mcp_stdio checks over stdio: each
    # gets an answer. A request escaping a lone surrogate ("\\ud83d"), which the SDK's
    # parser refused (-32700), is served as over stdio: each one is U+FFFD.
    app = asgi_app(memory)
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
    hello["clientInfo"] = {"name": "raw-test", "version": "1"}

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with (
            app.lifespan(),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
        ):
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
            opened = await http.post("/mcp", json=init, headers=headers)
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = LATEST_HANDSHAKE_VERSION
            bodies = ['{"jsonrpc":"2.0","id":1,', '{"id": 7, "hello": 1}', "[1, 2]"]
            # A batch (MCP has none since 2025-06-18): the SDK answered pydantic's report.
            batch = {"jsonrpc": "2.0", "id": 4, "method": "ping"}
            bodies.append(json.dumps([batch, batch]))
            # An id the SDK cannot use: it took the request for a notification (202).
            bodies.append('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}')
            bodies.append('{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
            bodies.append(
                '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name":'
                ' "save_observation", "arguments": {"content": "half \\ud83d", "project": "p"}}}'
            )
            return [await http.post("/mcp", content=body, headers=headers) for body in bodies]

    *bad, ping, saved = anyio.run(main)
    assert [r.status_code for r in bad] == [400, 400, 400, 400, 400]
    assert [r.json()["error"]["code"] for r in bad[1:]] == [-32600] * 4
    assert bad[0].json()["error"]["code"] == -32700
    assert [r.json()["id"] for r in bad] == [None, 7, None, None, None]
    for refused in bad[1:]:  # one line of memlane's, not the SDK's validation report
        message = refused.json()["error"]["message"]
        assert "\n" not in message and "pydantic" not in message, message
    assert ping.status_code == 200 and '"id":2,"result":{}' in ping.text
    assert saved.status_code == 200 and '"isError":false' in saved.text, saved.text
    [stored] = memory.list_memories(project="p")
    assert stored.content == "half \ufffd"


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


def test_the_worker_starts_mcp_on_the_first_request_and_serves_a_client_session(
    memory: Memory,
) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from tests.test_web_support import LiveServer

    memory.save("The staging database is rebuilt nightly", project="infra", type="lesson")
    live = LiveServer(memory, mount_mcp=True).start()
    lazy = next(
        route.app  # type: ignore[attr-defined]
        for route in live.server.config.app.routes  # type: ignore[attr-defined]
        if getattr(route, "path", "") == "/mcp"
    )
    try:
        assert not lazy.started  # nothing built before an MCP request

        async def session() -> None:
            async with (
                httpx2.AsyncClient(headers=live.auth()) as http,
                Client(streamable_http_client(f"{live.base_url}/mcp", http_client=http)) as client,
            ):
                found = await client.call_tool(
                    "search", {"query": "staging database", "project": "infra"}
                )
                assert not found.is_error
                assert found.structured_content is not None
                assert found.structured_content["results"][0]["type"] == "lesson"

        anyio.run(session)
        assert lazy.started
        anyio.run(session)  # a second session reuses the started app
    finally:
        live.stop()


def test_the_worker_app_does_not_import_the_mcp_server_until_asked(tmp_path: Path) -> None:
    code = (
        "import sys, memlane\n"
        "from memlane.worker.web.app import create_app\n"
        "from memlane.worker.web.security import SecurityPolicy\n"
        "memory = memlane.open(sys.argv[1])\n"
        "create_app(memory, SecurityPolicy(token='t' * 32, port=1), mount_mcp=True)\n"
        "assert 'memlane.mcp_server' not in sys.modules, 'memlane.mcp_server imported'\n"
        "assert 'mcp' not in sys.modules, 'the MCP SDK imported'\n"
        "memory.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m.db")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_each_http_client_has_its_own_current_session(memory: Memory) -> None:
    """Two clients of the worker's /mcp: one's session_start was the other's default
    (its saves, session_end and summary went into the first client's session)."""
    app = asgi_app(memory)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def body() -> None:
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
            started = await a.call_tool("session_start", {"project": "shared", "session_id": "A"})
            assert not started.is_error
            by_b = await b.call_tool("save_observation", {"content": "B's", "project": "shared"})
            by_a = await a.call_tool("save_observation", {"content": "A's", "project": "shared"})
            assert by_b.structured_content and by_a.structured_content
            ended = await b.call_tool("session_end", {"project": "shared"})
            assert ended.is_error  # B started nothing
            assert "no session to end" in str(ended.content[0])
            summary = await b.call_tool("save_summary", {"request": "B's", "project": "shared"})
            assert not summary.is_error
            ended = await a.call_tool("session_end", {"project": "shared"})
            assert not ended.is_error and ended.structured_content
            assert ended.structured_content["id"] == "A"

    anyio.run(serve, app, port, body)
    notes = {
        m.content: m.session_id for m in memory.list_memories(project="shared", kinds=["note"])
    }
    assert notes == {"A's": "A", "B's": None}
    summaries = {
        m.session_id: m.metadata["summary"]
        for m in memory.list_memories(project="shared", kinds=["summary"])
    }
    assert summaries.pop("A")["learned"] == ["A's"]  # the rule-based one session_end writes
    assert [s["request"] for s in summaries.values()] == ["B's"]  # B's summary is not A's


def test_over_http_a_call_without_project_or_roots_is_refused_not_filed_under_the_worker(
    memory: Memory,
) -> None:
    """The worker runs in its data folder: calls without a project went to a project
    named after it ("memlane"), whatever the client's workspace."""
    app = asgi_app(memory)
    port = free_port()

    async def body() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            saved = await client.call_tool("save_knowledge", {"content": "x", "type": "decision"})
            assert saved.is_error
            assert "give project" in str(saved.content[0])

    anyio.run(serve, app, port, body)
    assert memory.stats().memories == 0


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_over_http_roots_are_asked_once_per_client(memory: Memory, tmp_path: Path) -> None:
    from mcp import types

    asked: list[int] = []
    workspace = tmp_path / "repo-one"

    async def list_roots(_context: Any) -> types.ListRootsResult:
        asked.append(1)
        return types.ListRootsResult(roots=[types.Root(uri=workspace.as_uri(), name="repo")])  # type: ignore[arg-type]

    app = asgi_app(memory)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def body() -> None:
        async with Client(url, mode="legacy", list_roots_callback=list_roots) as client:
            for n in range(3):
                done = await client.call_tool("save_observation", {"content": f"note {n}"})
                assert not done.is_error, done.content
        assert len(asked) == 1
        async with Client(url, mode="legacy", list_roots_callback=list_roots) as other:
            assert not (await other.call_tool("stats", {})).is_error
            assert not (await other.call_tool("timeline", {})).is_error
        assert len(asked) == 2  # another client is asked for its own

    anyio.run(serve, app, port, body)
    assert len(memory.list_memories(project="repo-one")) == 3


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_over_the_worker_only_tool_calls_that_write_take_the_write_budget(
    memory: Memory, mode: str
) -> None:
    """Every /mcp message is a POST, and each took a write: an agent doing only searches
    was cut off after a few calls, and the SDK client's connection died on the 429."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from tests.test_web_support import LiveServer

    memory.save("The staging database is rebuilt nightly", project="infra", type="lesson")
    live = LiveServer(memory, mount_mcp=True, write_rate_per_minute=3).start()
    try:

        async def session() -> None:
            async with (
                httpx2.AsyncClient(headers=live.auth()) as http,
                Client(
                    streamable_http_client(f"{live.base_url}/mcp", http_client=http), mode=mode
                ) as client,
            ):
                for _ in range(12):
                    found = await client.call_tool(
                        "search", {"query": "staging database", "project": "infra"}
                    )
                    assert not found.is_error, found.content
                saves = [
                    await client.call_tool("save_observation", {"content": f"n{i}", "project": "p"})
                    for i in range(4)
                ]
                assert [s.is_error for s in saves] == [False, False, False, True]
                assert "rate limited: too many writes; retry in" in str(saves[3].content[0])
                after = await client.call_tool("stats", {})  # the session goes on
                assert not after.is_error

        anyio.run(session)
    finally:
        live.stop()
    assert len(memory.list_memories(project="p")) == 3


def test_the_worker_keeps_a_bounded_number_of_mcp_sessions(memory: Memory) -> None:
    """The SDK kept up to 10,000 idle sessions: a client could open thousands, which then
    held the worker's shutdown past `memlane stop`'s 10 s."""
    from memlane.mcp_server import MAX_HTTP_SESSIONS

    app = asgi_app(memory)
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
    hello["clientInfo"] = {"name": "raw-test", "version": "1"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}

    async def main() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with (
            app.lifespan(),
            httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
        ):
            return [
                (await http.post("/mcp", json=init, headers=headers)).status_code
                for _ in range(MAX_HTTP_SESSIONS + 1)
            ]

    codes = anyio.run(main)
    assert codes[:MAX_HTTP_SESSIONS] == [200] * MAX_HTTP_SESSIONS
    assert codes[-1] == 503


def test_the_dashboard_cookie_does_not_open_mcp(memory: Memory) -> None:
    """MCP clients are programs with the token; a stream opened with the dashboard's
    cookie outlived the sign-in (the live feed ends with it)."""
    from tests.test_web_support import LiveServer

    live = LiveServer(memory, mount_mcp=True).start()
    try:
        jar = live.sign_in()
        hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
        hello["clientInfo"] = {"name": "cookie", "version": "1"}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        headers = {
            "accept": "application/json, text/event-stream",
            "origin": live.origin,
        }
        by_cookie = httpx.post(f"{live.base_url}/mcp", json=init, headers={**headers, **jar})
        assert by_cookie.status_code == 401
        assert httpx.get(f"{live.base_url}/api/stats", headers=jar).status_code == 200
        by_token = httpx.post(f"{live.base_url}/mcp", json=init, headers={**headers, **live.auth()})
        assert by_token.status_code == 200
    finally:
        live.stop()
