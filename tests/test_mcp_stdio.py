"""The real `memlane mcp` command over stdio, as an editor starts it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env


def params(home: Path, cwd: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=MEMLANE_CMD[0], args=[*MEMLANE_CMD[1:], *extra, "mcp"], env=run_env(home), cwd=cwd
    )


async def call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_stdio_initializes_lists_tools_and_searches(
    memory: Memory, home: Path, tmp_path: Path
) -> None:
    saved = memory.save("Deploys go out on Tuesdays only", project="ops", type="constraint")

    async def main() -> None:
        async with Client(params(home, tmp_path), read_timeout_seconds=30) as client:
            assert client.server_info is None or client.server_info.name == "memlane"
            assert client.instructions and "search" in client.instructions
            tools = await client.list_tools()
            assert "search" in {tool.name for tool in tools.tools}
            found = await call(client, "search", {"query": "deploys tuesdays", "project": "ops"})
            assert [hit["id"] for hit in found["results"]] == [saved.id]
            bad = await client.call_tool("search", {"query": 42})
            assert bad.is_error

    anyio.run(main)


def test_stdio_workflow_save_search_timeline_fetch_resume(
    memory: Memory, home: Path, tmp_path: Path
) -> None:
    project_dir = tmp_path / "shop"
    project_dir.mkdir()

    async def main() -> None:
        async with Client(params(home, project_dir), read_timeout_seconds=30) as client:
            await call(client, "session_start", {"session_id": "stdio-1"})
            saved = await call(
                client,
                "save_knowledge",
                {
                    "type": "decision",
                    "content": "Cart totals are computed server-side to stop price tampering",
                    "topic_key": "cart/totals",
                },
            )
            found = await call(client, "search", {"query": "cart totals tampering"})
            assert found["project"] == "shop"  # the server's working directory
            assert found["results"][0]["id"] == saved["id"]
            around = await call(client, "timeline", {"around": saved["id"]})
            assert saved["id"] in [item["id"] for item in around["items"]]
            full = await call(client, "get_observations", {"ids": [saved["id"]]})
            assert "server-side" in full["memories"][0]["content"]
            await call(
                client,
                "save_summary",
                {"request": "Harden the cart", "next_steps": ["Audit coupon codes"]},
            )
            resumed = await call(client, "resume_session", {})
            assert resumed["session_id"] == "stdio-1"
            assert resumed["next_steps"] == ["Audit coupon codes"]

    anyio.run(main)
    # The editor's process and the CLI share one database.
    assert [m.title or m.content for m in memory.list_memories(project="shop", types=["decision"])]


def test_stdio_global_project_option_wins_over_cwd(
    memory: Memory, home: Path, tmp_path: Path
) -> None:
    async def main() -> None:
        async with Client(params(home, tmp_path, "--project", "pinned")) as client:
            await call(client, "save_observation", {"content": "pinned project note"})

    anyio.run(main)
    assert [m.content for m in memory.list_memories(project="pinned")] == ["pinned project note"]


def test_importing_the_server_loads_no_numpy(home: Path) -> None:
    code = (
        "import sys, memlane.mcp_server as m\n"
        "from memlane.service import open as o\n"
        "mem = o(); mem.save('x y z', project='p'); mem.search('x', project='p', mode='keyword')\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=run_env(home), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", out.stderr
