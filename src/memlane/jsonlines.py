"""Reading JSON-lines files a line at a time, never more than ``MAX_LINE_BYTES`` of one.

A transcript, an import or a JSONL store is one JSON record per line. A crafted file
of one endless line would otherwise be held in memory whole, then decoded (a 300 MB
line cost an import 3.8 GB). A longer line is passed over a MB at a time; callers
count it as a bad line. Claude Code cuts what a tool returns long before this (a
record with a pasted image is a few MB).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

MAX_LINE_BYTES = 32 * 1024 * 1024
_CHUNK = 1 << 20


def rest_of_line(handle: BinaryIO) -> int | None:
    """Bytes read to the end of the current line (its ``\\n`` included), a chunk at a
    time; None when the file ends first."""
    read = 0
    while chunk := handle.readline(_CHUNK):
        read += len(chunk)
        if chunk.endswith(b"\n"):
            return read
    return None


def numbered_lines(handle: BinaryIO) -> Iterator[tuple[int, str | None]]:
    """(line number from 1, text) of each line of ``handle``, decoded as UTF-8 with
    bad bytes replaced; text None for a line longer than ``MAX_LINE_BYTES``."""
    number = 0
    while line := handle.readline(MAX_LINE_BYTES):
        number += 1
        if len(line) == MAX_LINE_BYTES and not line.endswith(b"\n"):
            rest_of_line(handle)
            yield number, None
            continue
        yield number, line.decode("utf-8", errors="replace")
