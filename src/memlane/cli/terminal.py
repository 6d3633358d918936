"""What the CLI writes to a terminal: text and colours, never a command to the terminal.

Stored text comes from transcripts, tool output, imports and sync folders, and may carry
escape sequences: OSC ones set the window title, write the clipboard (OSC 52) or make
links (OSC 8); CSI ones move the cursor, clear the screen or ask the terminal a question
it answers on the input, as if typed. So when stdout is a terminal, :func:`guard_stdout`
puts it behind :func:`printable`: each control character (C0 but newline, tab and
carriage return; DEL; C1) and each bidirectional control that reorders a line is written
as its escape (``\\x1b``, ``\\u202e``), except SGR sequences (``ESC[…m``: colours and
bold, which click and rich write for memlane's own tables and headings). A pipe or a
file gets the text as stored. Progress bars draw on stderr with cursor moves, so stderr
is not guarded; error lines go through :func:`printable` where they are printed.
"""

from __future__ import annotations

import io
import re
import sys

from memlane.text import SHOWN_ESCAPED, SHOWN_ESCAPED_IN_A_LINE

# Strings, compiled (and cached by re) on the first text shown: a CLI whose stdout is
# a pipe never needs them. The characters are the dashboard's too (SHOWN_ESCAPED).
_SGR = r"(\x1b\[[0-9;:]*m)|"
_UNSAFE = _SGR + SHOWN_ESCAPED
_UNSAFE_IN_A_LINE = _SGR + SHOWN_ESCAPED_IN_A_LINE
_LINE_BREAK_ESCAPES = {"\n": "\\n", "\r": "\\r"}


def _escaped(found: re.Match[str]) -> str:
    if found.group(1):
        return found.group(1)
    char = found.group(0)
    if char in _LINE_BREAK_ESCAPES:
        return _LINE_BREAK_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every character a terminal would act on written as its escape
    (colour and bold sequences kept); with ``one_line``, line breaks too (``\\n``)."""
    return re.sub(_UNSAFE_IN_A_LINE if one_line else _UNSAFE, _escaped, text)


class _Guarded(io.TextIOWrapper):
    """A text stream over a terminal's buffer that writes only :func:`printable` text."""

    def write(self, text: str) -> int:
        super().write(printable(text))
        return len(text)


def guard_stdout() -> None:
    """Put stdout behind :func:`printable` when it is a terminal (idempotent)."""
    stream = sys.stdout
    if isinstance(stream, _Guarded) or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        if not stream.isatty():
            return
    except ValueError:  # closed
        return
    stream.flush()
    # Over the same buffer; the first wrapper stays as sys.__stdout__, unused.
    sys.stdout = _Guarded(
        stream.buffer, encoding=stream.encoding, errors=stream.errors, line_buffering=True
    )
