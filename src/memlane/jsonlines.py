"""Reading JSON-lines files a line at a time, never more than ``MAX_LINE_BYTES`` of one.

A transcript, an import or a JSONL store is one JSON record per line. A crafted file
of one endless line would otherwise be held in memory whole, then decoded (a 300 MB
line cost an import 3.8 GB, CHANGELOG). A longer line is passed over a MB at a time;
callers count it as a bad line. The bound is far above real records: the longest line
of the fixture transcripts is 82 KB.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

MAX_LINE_BYTES = 32 * 1024 * 1024
_CHUNK = 1 << 20
# The buffer to open a JSON-lines file with for :func:`read_lines`: a transcript's lines run
# to tens of KB, which the default 8 KB buffer reads in many system calls.
READ_BUFFER = 1 << 16
# What an import reports for a line it passed over.
TOO_LONG = f"longer than {MAX_LINE_BYTES:,} bytes; passed over"


class Line(NamedTuple):
    """One line as read: ``head`` is the whole line, or its first ``MAX_LINE_BYTES``
    when it is longer (``whole`` False); ``size`` counts every byte it took, its
    ``\\n`` included; ``ended`` is False when the file ended before a ``\\n`` (a line
    still being written); ``cut`` is True when the reader stopped inside a longer line at
    its ``scan`` bound (``size`` then counts the bytes read, ``ended`` is False)."""

    head: bytes
    size: int
    whole: bool
    ended: bool
    cut: bool = False


def read_lines(handle: BinaryIO, scan: int | None = None) -> Iterator[Line]:
    """The lines of ``handle`` from where it stands, each read to its end but held to
    ``MAX_LINE_BYTES``. ``scan``: a longer line is read at most that far (at least its
    head), then yielded ``cut``; the caller resumes inside it, or not at all. (A 2 GB
    line, or a sparse file without a newline, was otherwise read whole for each call.)"""
    while head := handle.readline(MAX_LINE_BYTES):
        if len(head) < MAX_LINE_BYTES or head.endswith(b"\n"):
            yield Line(head, len(head), True, head.endswith(b"\n"))
            continue
        size, ended = len(head), False
        while not ended and (scan is None or size < scan):
            chunk = handle.readline(_CHUNK if scan is None else min(_CHUNK, scan - size))
            if not chunk:
                break
            size += len(chunk)
            ended = chunk.endswith(b"\n")
        yield Line(head, size, False, ended, not ended and scan is not None and size >= scan)


class BadLine(NamedTuple):
    """A line an import reports instead of reading: ``message`` says why."""

    message: str


BOM = "\ufeff"


def numbered_lines(handle: BinaryIO) -> Iterator[tuple[int, str | BadLine]]:
    """(line number from 1, text) of each line of ``handle``, decoded as UTF-8; a
    :class:`BadLine` for a line longer than ``MAX_LINE_BYTES`` or not valid UTF-8 (bad
    bytes replaced, the text changed without a word). A byte-order mark opening the file
    (Windows editors, PowerShell's ``Out-File -Encoding utf8``) is not part of line 1."""
    for number, line in enumerate(read_lines(handle), start=1):
        if not line.whole:
            yield number, BadLine(TOO_LONG)
            continue
        try:
            text = line.head.decode("utf-8")
        except UnicodeDecodeError as exc:
            byte, at = line.head[exc.start], exc.start + 1
            why = f"not valid UTF-8 (byte {byte:#04x} at byte {at} of the line); passed over"
            yield number, BadLine(why + ": save the file as UTF-8")
            continue
        yield number, text.removeprefix(BOM) if number == 1 else text
