"""One JSON document read a value at a time: a long list never held whole.

``json.load`` of a memlane JSON export builds every record at once: Python objects
take some 40 times the file's bytes (a 60 MB list of small records, 2.3 GB), so the
export of a large store could not be imported on the machine that wrote it. A
:class:`JsonCursor` reads the document's outer structure itself and hands each
value inside it to ``json``'s decoder (``raw_decode``) once its text is in the
buffer: memory holds one value, whatever the list's length.

A value cut by the buffer's end makes the decoder fail; the cursor then reads more
and decodes it again, with a buffer at least twice as long, so a large value costs
about twice its decoding. Only at the end of the file is a failure the document's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from memlane.interop.decode import decode_error
from memlane.utf8 import storable_json

READ_CHARS = 1 << 16
_WHITESPACE = " \t\n\r"


class JsonCursor:
    """A position in one JSON document read from ``handle`` (text), with what follows it
    buffered. Errors are :class:`json.JSONDecodeError` (nesting too deep and an integer
    past Python's digit limit included: :func:`memlane.interop.decode.decode_error`)."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle
        self._buffer = ""
        self._pos = 0
        self._offset = 0  # characters of the document before the buffer
        self._lines = 0  # line breaks before the buffer
        self._column = 0  # characters of the buffer's first line before the buffer
        self._eof = False

    def _read_more(self, at_least: int = READ_CHARS) -> bool:
        """Append at least ``at_least`` characters (fewer at the end); False at the end."""
        if self._eof:
            return False
        if self._pos:
            dropped = self._buffer[: self._pos]
            breaks = dropped.count("\n")
            self._lines += breaks
            self._column = (
                len(dropped) - dropped.rfind("\n") - 1 if breaks else self._column + len(dropped)
            )
            self._offset += self._pos
            self._buffer = self._buffer[self._pos :]
            self._pos = 0
        chunk = self._handle.read(max(at_least, READ_CHARS))
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def error(self, message: str, at: int | None = None) -> json.JSONDecodeError:
        """An error at ``at`` in the buffer (default: the current position), placed by its
        line, column and character in the document as ``json`` places its errors."""
        at = self._pos if at is None else at
        breaks = self._buffer.count("\n", 0, at)
        column = at - self._buffer.rfind("\n", 0, at) if breaks else self._column + at + 1
        line, char = self._lines + breaks + 1, self._offset + at
        exc = json.JSONDecodeError(message, "", 0)
        exc.args = (f"{message}: line {line} column {column} (char {char})",)
        exc.pos, exc.lineno, exc.colno = char, line, column
        return exc

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end), not consumed."""
        while True:
            buffer, pos = self._buffer, self._pos
            while pos < len(buffer) and buffer[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buffer):
                return buffer[pos]
            if not self._read_more():
                return ""

    def take(self, expected: str) -> None:
        """Consume ``expected``, the next character that is not whitespace."""
        if self.peek() != expected:
            raise self.error(f"Expecting '{expected}' delimiter")
        self._pos += 1

    def take_if(self, expected: str) -> bool:
        """Consume the next non-whitespace character when it is ``expected``."""
        if self.peek() == expected:
            self._pos += 1
            return True
        return False

    def value(self) -> Any:
        """The next value, decoded (lone surrogates repaired: :func:`storable_json`)."""
        if self.peek() == "":
            raise self.error("Expecting value")
        decoder = _DECODER
        while True:
            start = self._pos
            try:
                value, end = decoder.raw_decode(self._buffer, start)
            except json.JSONDecodeError as exc:
                into = exc.pos - start  # reading more moves the value to the buffer's start
                if _maybe_cut(exc, len(self._buffer)) and self._read_more(len(self._buffer)):
                    continue
                raise self.error(exc.msg, self._pos + into) from None
            except (RecursionError, ValueError) as exc:  # an int past Python's digit limit
                raise self.error(decode_error(exc).msg) from None
            if end == len(self._buffer) and self._read_more(len(self._buffer)):
                continue  # a number may go on past the buffer ("12" of "123")
            start, self._pos = self._pos, self._pos + end - start  # moved if read more
            return storable_json(value, self._buffer[start : self._pos])

    def items(self) -> Iterator[Any]:
        """The values of the array that starts here, one at a time, up to its ``]``."""
        self.take("[")
        if self.take_if("]"):
            return
        while True:
            yield self.value()
            if self.take_if("]"):
                return
            self.take(",")

    def members(self) -> Iterator[str]:
        """The keys of the object that starts here, each left for the caller to read its
        value (:meth:`value`, :meth:`items` or :meth:`skip`), up to its ``}``."""
        self.take("{")
        if self.take_if("}"):
            return
        while True:
            if self.peek() != '"':
                raise self.error("Expecting property name enclosed in double quotes")
            key = self.value()
            self.take(":")
            yield key
            if self.take_if("}"):
                return
            self.take(",")

    def skip(self) -> None:
        """Read past the next value, an array one item at a time."""
        if self.peek() == "[":
            for _ in self.items():
                pass
        else:
            self.value()

    def end(self) -> None:
        """Check that nothing but whitespace follows."""
        if self.peek() != "":
            raise self.error("Extra data")


_DECODER = json.JSONDecoder()
# How near the buffer's end a decoding error must be to be the buffer's cut, not the
# document's: a cut token (``tru``, ``-Infinit``, ``\\u00``) is shorter.
_CUT_MARGIN = 32


def _maybe_cut(exc: json.JSONDecodeError, buffered: int) -> bool:
    """Whether reading more could mend ``exc``: it is at the buffer's end, or it is a
    string the buffer does not close (the decoder reports where the string starts)."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= buffered - _CUT_MARGIN
