"""The stdio transport of ``memlane mcp``: the SDK's, fed lines that memlane checked first.

The SDK's stdio reader (``mcp.server.stdio.stdio_server``, mcp 2.3) parses each line
with pydantic. A line it cannot parse goes to the session as an exception, which
logs it and answers nothing, so the client waits forever for a reply. memlane
gives ``stdio_server`` its own stdin (:class:`CheckedLines`), which sorts each line
with :func:`check_line` before the SDK sees it:

* a line the SDK accepts passes unchanged;
* JSON that escapes a lone UTF-16 surrogate (``"\\ud83d"``: an emoji cut in half),
  which Python's json reads and pydantic's parser refuses, passes re-encoded with
  each lone surrogate as U+FFFD (:func:`memlane.utf8.storable_json_text`, the rule every
  stored text follows), so a legitimate request gets its answer;
* a line that is not JSON is answered ``-32700 Parse error`` (id null); JSON that is
  no JSON-RPC message, ``-32600 Invalid Request`` (with its id when it has a usable
  one). Serving goes on;
* a blank line is skipped.

Answers go into the SDK's write stream: the SDK's one writer puts every line on
stdout, so two producers never interleave. stdout stays the SDK's (while serving,
fd 1 points at stderr and stray output misses the wire). The SDK diverts fd 0 too,
but only for a stdin it opens itself, so :func:`claimed_stdin` does it here.

Over HTTP the SDK answers a bad body itself (400: -32700, or -32602 for JSON that
is no message); ``memlane.mcp_server.McpHttpApp`` repairs a lone-surrogate body the
same way before the SDK reads it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from io import TextIOWrapper
from typing import IO, Any, Protocol

import anyio
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from memlane.utf8 import storable, storable_json_text

log = logging.getLogger("memlane.mcp")


class _Sink(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` on stdin/stdout until the client closes stdin (see the module doc)."""
    with claimed_stdin() as wire:
        lines = CheckedLines(TextIOWrapper(wire, encoding="utf-8", errors="replace"))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            lines.answer_on(write_stream)
            await _serve_connection(server, read_stream, write_stream)


async def _serve_connection(server: MCPServer, read_stream: Any, write_stream: Any) -> None:
    # MCPServer.run_stdio_async without its own stdio_server(): mcp 2.3 has no public
    # way to serve an MCPServer over streams of our choosing, so this reaches its
    # private low-level server. tests/test_mcp_stdio.py
    # (test_the_sdk_still_serves_stdio_the_way_memlane_copies) fails when that changes.
    lowlevel = server._lowlevel_server
    await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class CheckedLines(anyio.AsyncFile[str]):
    """The client's lines as :func:`check_line` lets them through; the others answered.

    An answer waits for :meth:`answer_on` (the SDK's write stream exists only once
    ``stdio_server`` runs) and is handed to the SDK's writer before the next line is
    read, so an answer to the last line is out before the session ends.
    """

    def __init__(self, fp: IO[str]) -> None:
        super().__init__(fp)
        self._ready = anyio.Event()
        self._sink: _Sink | None = None

    def answer_on(self, sink: _Sink) -> None:
        """Send answers to ``sink`` (the SDK's write stream) from now on."""
        self._sink = sink
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in super().__aiter__():
            checked = check_line(line)
            if isinstance(checked, JSONRPCError):
                await self._ready.wait()
                assert self._sink is not None
                await self._sink.send(SessionMessage(checked))
            elif checked is not None:
                yield checked


def check_line(line: str) -> str | JSONRPCError | None:
    """One line from the client: the line to serve (repaired when it escapes a lone
    surrogate), the error to answer it with, or None to skip it (a blank line)."""
    if not line.strip():
        return None
    if (served := _served(line)) is not None:
        return served
    try:
        value = json.loads(line.strip())  # stripped: an error then points into line 1
    except (ValueError, RecursionError) as exc:
        _tell("answered a line that is not JSON with a parse error (%s)", exc)
        return _error(None, PARSE_ERROR, f"Parse error: {exc}")
    repaired = storable_json_text(line)
    if repaired is not None and (served := _served(repaired)) is not None:
        return served
    _tell("answered JSON that is no JSON-RPC message with an invalid-request error")
    return _error(
        _request_id(value),
        INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
    )


def _served(line: str) -> str | JSONRPCError | None:
    """``line`` when the SDK reads it as the message it is, an error when it would take
    a request for a notification, None when it refuses it."""
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)  # as the SDK
    except ValidationError:
        return None
    if isinstance(message, JSONRPCNotification) and unusable_id(_loaded(line)):
        _tell("answered a request whose id is no string or integer")
        return UNUSABLE_ID
    return line


# Refused lines logged one by one; after that every TELL_EVERY-th (a client sending
# garbage sent 23,674 lines: 70,000 lines of warnings and 25 s).
TELL_FIRST = 10
TELL_EVERY = 1000
_refused = 0


def _tell(message: str, *args: object) -> None:
    global _refused
    _refused += 1
    if _refused <= TELL_FIRST or _refused % TELL_EVERY == 0:
        log.warning(message + " [%d refused so far]", *args, _refused)


def unusable_id(message: object) -> bool:
    """True for a request (a ``method`` and an ``id``) whose id is no string or integer
    (``{}``, ``[1]``, ``1.5``, ``true``, ``null``): the SDK reads it as a notification and
    answers nothing, so the client would wait for ever. It gets :data:`UNUSABLE_ID`."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return False
    found = message["id"]
    return not isinstance(found, str) and (not isinstance(found, int) or isinstance(found, bool))


def _loaded(line: str) -> object:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _request_id(message: object) -> RequestId | None:
    """The message's id if it is one JSON-RPC allows (a string or an integer), else None."""
    found = message.get("id") if isinstance(message, dict) else None
    if isinstance(found, str):
        return storable(found)
    if isinstance(found, int) and not isinstance(found, bool):
        return found
    return None


def _error(request_id: RequestId | None, code: int, message: str) -> JSONRPCError:
    # jsonrpc and id are given explicitly: the SDK's writer drops fields left unset.
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


UNUSABLE_ID = _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")


@contextmanager
def claimed_stdin() -> Iterator[IO[bytes]]:
    """The client's end of stdin on a private descriptor, with fd 0 on the null device.

    While serving, a child process or a stray read of stdin then sees EOF instead of
    taking the client's requests (what the SDK does for a stdin it opens itself). On
    exit the client's end goes back on fd 0. The private descriptor is never closed:
    a worker thread may still be blocked reading it (as in the SDK).
    """
    try:
        wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError as exc:
        log.info("stdin read in place: it cannot be duplicated (%s)", exc)
        yield os.fdopen(0, "rb", closefd=False)
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError as exc:
        log.info("stdin read in place: fd 0 cannot be moved aside (%s)", exc)
        os.close(wire)
        yield os.fdopen(0, "rb", closefd=False)
        return
    try:
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)
