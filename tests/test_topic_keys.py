"""A topic key is an opaque string: the same rule through MCP, HTTP, the CLI and Python.

The MCP SDK parsed a string argument that looks like JSON (``{"area":"auth"}``,
``["a"]``) into an object and refused it, and ``null`` into None (the key dropped); the
CLI and the Python API took a key of any length with a line break in it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from memlane.errors import InvalidInput
from memlane.mcp_server import build_server
from memlane.models import MAX_TOPIC_KEY_CHARS
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env

ACCEPTED = ['{"area":"auth"}', "[x]", '["a", "b"]', "null", "true", "42", "auth/tokens", "ключ"]
REFUSED = ["   ", "auth\ntokens", "auth\x1b[31m", "k" * (MAX_TOPIC_KEY_CHARS + 1)]


def mcp_save(memory: Memory, key: str, content: str) -> tuple[bool, str]:
    server = build_server(lambda: memory)

    async def main() -> tuple[bool, str]:
        async with Client(server) as client:
            result = await client.call_tool(
                "save_knowledge",
                {"project": "p", "type": "decision", "content": content, "topic_key": key},
            )
            return result.is_error, result.content[0].text  # type: ignore[union-attr]

    return anyio.run(main)


def stored_keys(memory: Memory) -> list[str | None]:
    return [m.topic_key for m in memory.list_memories(project="p")]


@pytest.mark.parametrize("key", ACCEPTED)
def test_mcp_keeps_any_text_key_as_given(memory: Memory, key: str) -> None:
    failed, text = mcp_save(memory, key, "Tokens live in the keychain")
    assert not failed, text
    again, text = mcp_save(memory, key, "Tokens live in the OS keychain, not in a file")
    assert not again and json.loads(text)["status"] == "updated"
    assert stored_keys(memory) == [key]


def test_mcp_keeps_other_text_arguments_as_given(memory: Memory) -> None:
    """A project or session named ``null`` or ``[x]`` is that name, not None or a list."""
    server = build_server(lambda: memory)

    async def main() -> list[dict[str, Any]]:
        async with Client(server) as client:
            found = []
            for project, session in (("null", "[x]"), ("[x]", "null")):
                result = await client.call_tool(
                    "save_observation",
                    {"project": project, "session_id": session, "content": "a note"},
                )
                assert not result.is_error, result.content
                found.append(result.structured_content or {})
            # A list given as a JSON string is still read as a list (the SDK's reason).
            result = await client.call_tool(
                "save_observation",
                {"project": "p", "content": "tagged", "tags": '["auth", "tokens"]'},
            )
            assert not result.is_error, result.content
            return found

    anyio.run(main)
    projects = {m.project: m.session_id for m in memory.list_memories(project="null")}
    assert projects == {"null": "[x]"}
    assert [m.session_id for m in memory.list_memories(project="[x]")] == ["null"]
    assert [m.tags for m in memory.list_memories(project="p")] == [("auth", "tokens")]


@pytest.mark.parametrize("key", REFUSED)
def test_every_interface_refuses_the_same_keys(
    memory: Memory, client: httpx.Client, home: Path, key: str
) -> None:
    with pytest.raises(InvalidInput, match="topic key"):
        memory.save("Tokens live in the keychain", project="p", topic_key=key)
    failed, text = mcp_save(memory, key, "Tokens live in the keychain")
    assert (failed and "topic_key" in text) or "topic key" in text, text
    body = {
        "content": "Tokens live in the keychain",
        "project": "p",
        "topic_key": key,
        "type": "decision",
    }
    assert client.post("/api/knowledge", json=body).status_code in (400, 422)
    done = subprocess.run(
        [*MEMLANE_CMD, "save", "Tokens", "--project", "p", "--topic-key", key],
        capture_output=True,
        text=True,
        env=run_env(home),
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "topic key" in done.stderr, done.stderr
    assert stored_keys(memory) == []


def test_http_cli_and_python_accept_a_json_looking_key(
    memory: Memory, client: httpx.Client, home: Path
) -> None:
    key = '{"area":"auth"}'
    assert memory.save("one", project="p", topic_key=key).status == "created"
    body = {"content": "two", "project": "p", "topic_key": key, "type": "decision"}
    assert client.post("/api/knowledge", json=body).json()["status"] == "updated"
    done = subprocess.run(
        [*MEMLANE_CMD, "save", "three", "--project", "p", "--topic-key", key, "--json"],
        capture_output=True,
        text=True,
        env=run_env(home),
        timeout=60,
        check=False,
    )
    assert json.loads(done.stdout)["status"] == "updated", done.stderr
    [kept] = memory.list_memories(project="p")
    assert (kept.topic_key, kept.content) == (key, "three")
