"""HTTP, MCP and the CLI say the same thing: one input model, one notice, one access rule.

Each test asks two or three interfaces the same question over the real thing (a live
worker over HTTP, an in-process MCP client, the CLI's own query function) and compares.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
from mcp import Client

from memlane.mcp_server import build_server
from memlane.service import Memory
from memlane.worker.queries import search as cli_search

T = TypeVar("T")


def mcp(memory: Memory, body: Callable[[Client], Awaitable[T]], cwd: Path | None = None) -> T:
    server = build_server(lambda: memory, cwd=cwd)

    async def main() -> T:
        async with Client(server) as session:
            return await body(session)

    return anyio.run(main)


def tool(memory: Memory, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any] | str]:
    """(is_error, structured result or the error text) of one MCP tool call."""

    async def body(client: Client) -> tuple[bool, dict[str, Any] | str]:
        result = await client.call_tool(name, args)
        if result.is_error:
            return True, result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content is not None
        return False, result.structured_content

    return mcp(memory, body)


# -- M4: the notice of a search reaches every interface -------------------------------


def test_a_search_that_fell_back_to_keywords_says_so_everywhere(
    client: httpx.Client, memory: Memory
) -> None:
    memory.save("Use pgbouncer in transaction mode", project="api", type="decision")
    expected = memory.search("pgbouncer", project="api", mode="hybrid").notice
    assert expected and "keyword" in expected
    answer = client.get("/api/hybrid-search", params={"q": "pgbouncer", "project": "api"})
    assert answer.json()["notice"] == expected
    keyword = client.get("/api/search", params={"q": "pgbouncer", "project": "api"}).json()
    assert keyword["notice"] is None
    failed, found = tool(
        memory, "search", {"query": "pgbouncer", "project": "api", "mode": "hybrid"}
    )
    assert not failed and isinstance(found, dict), found
    assert found["notice"] == expected
    request = {"query": "pgbouncer", "project": "api", "mode": "hybrid"}
    assert cli_search(memory, request)["notice"] == expected


# -- L3: the facade's methods show their own signature --------------------------------


def test_facade_methods_show_the_parameters_a_caller_passes(memory: Memory) -> None:
    search = inspect.signature(memory.search)
    assert next(iter(search.parameters)) == "query"
    assert "engine" not in search.parameters
    listing = inspect.signature(memory.list_memories)
    assert "core" not in listing.parameters


def test_json_of_the_notice_is_null_without_a_fallback(client: httpx.Client) -> None:
    answer = client.get("/api/search", params={"q": "nothing", "project": "api"})
    assert json.loads(answer.text) == {"hits": [], "notice": None}
