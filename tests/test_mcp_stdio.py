"""The real `memlane mcp` command over stdio, as an editor starts it."""

from __future__ import annotations

import inspect
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import MCPServer
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types import JSONRPCError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memlane.mcp_server import build_server
from memlane.mcp_stdio import check_line
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env

# How long a test waits for one reply before it fails (instead of hanging): the
# first call may load the store and the tokenizer.
READ_TIMEOUT_S = 60


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


# -- raw lines: what a client may write, and the answers it must get -----------------


class RawStdio:
    """`memlane mcp` as an editor starts it, spoken to one raw line at a time."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        self.replies: queue.Queue[bytes] = queue.Queue()
        assert process.stdin is not None and process.stdout is not None
        self.stdin: IO[bytes] = process.stdin
        self.stdout: IO[bytes] = process.stdout
        self.reader = threading.Thread(target=self._read, args=(self.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.replies.put(line)

    def send(self, *lines: str) -> None:
        self.stdin.write(b"".join(line.encode("utf-8") + b"\n" for line in lines))
        self.stdin.flush()

    def reply(self) -> dict[str, Any]:
        """The next line the server wrote, parsed; fails after READ_TIMEOUT_S without one."""
        try:
            line = self.replies.get(timeout=READ_TIMEOUT_S)
        except queue.Empty:
            stderr = self.stderr.read_text(errors="replace")[-2000:]
            raise AssertionError(f"no reply from memlane mcp; its stderr:\n{stderr}") from None
        found = json.loads(line)
        assert isinstance(found, dict)
        return found

    def request(self, line: str) -> dict[str, Any]:
        self.send(line)
        return self.reply()

    def ping(self, request_id: int) -> None:
        pong = self.request(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}))
        assert pong == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@contextmanager
def raw_stdio(home: Path, cwd: Path) -> Iterator[RawStdio]:
    """A started and initialized `memlane mcp`; stdin is closed and the exit awaited after."""
    stderr_path = cwd / "mcp-stderr.log"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [*MEMLANE_CMD, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=run_env(home),
            cwd=cwd,
        )
    raw = RawStdio(process, stderr_path)
    try:
        hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
        hello["clientInfo"] = {"name": "raw-test", "version": "1"}
        init = raw.request(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        )
        assert init["id"] == 0 and "result" in init, init
        raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield raw
        raw.stdin.close()
        assert process.wait(timeout=READ_TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        raw.stdin.close()
        raw.reader.join(timeout=READ_TIMEOUT_S)  # it stops at the end of stdout
        raw.stdout.close()


def error_of(reply: dict[str, Any]) -> tuple[Any, int]:
    assert set(reply) == {"jsonrpc", "id", "error"}, reply
    return reply["id"], reply["error"]["code"]


def test_stdio_answers_a_line_that_is_not_json_and_goes_on(home: Path, tmp_path: Path) -> None:
    with raw_stdio(home, tmp_path) as raw:
        assert error_of(raw.request('{"jsonrpc":"2.0","id":1,')) == (None, -32700)
        raw.send("", "   ")  # blank lines: skipped, not answered
        raw.ping(2)
        assert error_of(raw.request("\x00 not json")) == (None, -32700)
        raw.ping(3)


@pytest.mark.parametrize(
    ("line", "request_id"),
    [
        ('{"id": 7, "hello": 1}', 7),
        ('{"jsonrpc": "2.0", "id": "a-1", "method": 5}', "a-1"),
        ('{"jsonrpc": "2.0", "id": true}', None),  # no usable id
        ('{"jsonrpc": "2.0", "id": 1.5, "result": {}}', None),
        ("[1, 2]", None),
        ('"just a string"', None),
    ],
)
def test_check_line_answers_json_that_is_no_message(line: str, request_id: Any) -> None:
    checked = check_line(line + "\n")
    assert isinstance(checked, JSONRPCError)
    assert (checked.id, checked.error.code) == (request_id, -32600)


@pytest.mark.parametrize("request_id", ['{"a": 1}', "[1]", "1.5", "true", "null"])
def test_check_line_answers_a_request_whose_id_is_no_string_or_integer(request_id: str) -> None:
    # The SDK reads such a line as a notification (no id) and would answer nothing.
    checked = check_line(f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/list"}}\n')
    assert isinstance(checked, JSONRPCError)
    assert (checked.id, checked.error.code) == (None, -32600)
    assert "id must be a string or an integer" in checked.error.message


def test_check_line_passes_notifications() -> None:
    line = '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
    assert check_line(line) is line
    tricky = '{"jsonrpc": "2.0", "method": "notifications/x", "params": {"id": 1}}\n'
    assert check_line(tricky) is tricky


def test_stdio_answers_json_that_is_no_message_with_its_id(home: Path, tmp_path: Path) -> None:
    with raw_stdio(home, tmp_path) as raw:
        assert error_of(raw.request('{"id": 7, "hello": 1}')) == (7, -32600)
        assert error_of(raw.request("[1, 2]")) == (None, -32600)
        object_id = '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}'
        assert error_of(raw.request(object_id)) == (None, -32600)
        raw.ping(8)


def test_stdio_serves_a_request_that_escapes_a_lone_surrogate(
    memory: Memory, home: Path, tmp_path: Path
) -> None:
    # Python's json reads "\ud83d" (half an emoji); pydantic's parser refuses it.
    save = (
        '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": '
        '"save_observation", "arguments": {"content": "half \\ud83d emoji", "project": "p"}}}'
    )
    search = save.replace('"id": 5', '"id": 6').replace('"save_observation"', '"search"')
    search = search.replace('"content"', '"query"')
    with raw_stdio(home, tmp_path) as raw:
        saved = raw.request(save)
        assert saved["id"] == 5 and saved["result"]["isError"] is False, saved
        found = raw.request(search)
        assert found["id"] == 6 and found["result"]["isError"] is False, found
        assert found["result"]["structuredContent"]["query"] == "half \ufffd emoji"
    assert [m.content for m in memory.list_memories(project="p")] == ["half \ufffd emoji"]


def test_stdio_answers_stay_whole_lines_when_bad_and_good_lines_mix(
    home: Path, tmp_path: Path
) -> None:
    pings = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}) for n in range(1, 31)]
    with raw_stdio(home, tmp_path) as raw:
        raw.send(*(line for ping in pings for line in (ping, "{broken")))
        replies = [raw.reply() for _ in range(2 * len(pings))]  # each one parses whole
    answered = sorted(r["id"] for r in replies if "result" in r)
    assert answered == list(range(1, 31))
    assert [error_of(r) for r in replies if "error" in r] == [(None, -32700)] * len(pings)


def test_check_line_passes_good_lines_and_repairs_surrogates() -> None:
    ping = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
    assert check_line(ping) is ping
    assert check_line(" \n") is None
    # A pair is a whole emoji: the SDK reads it, so the line passes unchanged.
    pair = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\\ud83d\\ude00"}}'
    assert check_line(pair) is pair
    lone = '{"jsonrpc": "2.0", "id": "\\udc00", "method": "ping", "params": {"\\ud83d": 1}}'
    assert json.loads(str(check_line(lone))) == {
        "jsonrpc": "2.0",
        "id": "\ufffd",
        "method": "ping",
        "params": {"\ufffd": 1},
    }


def test_check_line_survives_json_nested_too_deep() -> None:
    # Python parses it, pydantic refuses it (too deep), repairing would recurse too deep:
    # an answer, not an exception that would end the server.
    deep = '{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": '
    deep += "[" * 900 + '"\\ud83d"' + "]" * 900 + "}}"
    checked = check_line(deep)
    assert isinstance(checked, JSONRPCError)
    assert (checked.id, checked.error.code) == (4, -32600)
    checked = check_line("[" * 100_000)
    assert isinstance(checked, JSONRPCError)
    assert (checked.id, checked.error.code) == (None, -32700)


def test_serving_moves_the_client_off_fd_0() -> None:
    # While serving, a child process or a stray read of stdin gets EOF, not the
    # client's requests; afterwards the pipe is back on fd 0.
    code = (
        "import os, sys\n"
        "from memlane.mcp_stdio import claimed_stdin\n"
        "with claimed_stdin() as wire:\n"
        "    print(repr(os.read(0, 100)), repr(wire.readline()))\n"
        "print(repr(os.read(0, 100)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=b"first\nsecond\n", capture_output=True, check=True
    )
    # The wire is buffered: what it read ahead of "first" is not on fd 0 any more.
    assert out.stdout.decode().splitlines() == ["b'' b'first\\n'", "b''"], out.stderr


def test_the_sdk_still_serves_stdio_the_way_memlane_copies(tmp_path: Path) -> None:
    # memlane.mcp_stdio._serve_connection is MCPServer.run_stdio_async without its
    # stdio_server() and reaches the private low-level server: this fails when the
    # SDK changes either, so the copy is looked at again.
    body = "".join(inspect.getsource(MCPServer.run_stdio_async).split())
    assert (
        "asyncwithstdio_server()as(read_stream,write_stream):"
        "awaitself._lowlevel_server.run(read_stream,write_stream,"
        "self._lowlevel_server.create_initialization_options(),)"
    ) in body
    assert "stdin" in inspect.signature(stdio_server).parameters
    server = build_server(lambda: pytest.fail("the store is not opened"), cwd=tmp_path)
    assert isinstance(server._lowlevel_server, Server)


def test_a_flood_of_bad_lines_is_answered_line_by_line_and_logged_in_few(home: Path) -> None:
    """Each refused line logged a three-line warning: 3 MB of garbage became 70,000 lines
    of stderr and took 25 s. Every line is still answered."""
    done = subprocess.run(
        [*MEMLANE_CMD, "mcp"],
        input="not json\n" * 2500,
        env=run_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == 2500 and all(a["error"]["code"] == -32700 for a in answers)
    assert len(done.stderr.splitlines()) < 100, done.stderr[-2000:]
