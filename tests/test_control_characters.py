"""Characters that act instead of showing are listed once (:mod:`memlane.text`), in one set
per use, each named for what it means: names refuse every control character
(``CONTROL_CHARACTERS``), shown text escapes the controls and the bidi controls but keeps
its layout (``SHOWN_ESCAPED``), and a text shown as one line escapes its line breaks too
(``SHOWN_ESCAPED_IN_A_LINE``). The CLI, the dashboard, the recover command's error lines
and ``Core.plain_name`` use these sets and no copy of them."""

from __future__ import annotations

import re
import unicodedata

import pytest

from memlane.cli.terminal import printable
from memlane.errors import InvalidInput
from memlane.service import Memory
from memlane.text import CONTROL_CHARACTERS, SHOWN_ESCAPED, SHOWN_ESCAPED_IN_A_LINE, display_text

# Every character whose class could matter: Latin-1, the bidi controls, and their
# neighbours (the sets hold nothing above U+2069).
SAMPLE = [chr(code) for code in range(0x3000)]
# Unicode's Bidi_Control property.
BIDI_CONTROLS = {"\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F))}
BIDI_CONTROLS |= set(map(chr, range(0x2066, 0x206A)))
CC = {c for c in SAMPLE if unicodedata.category(c) == "Cc"}


def _members(char_class: str) -> set[str]:
    return {c for c in SAMPLE if re.fullmatch(char_class, c)}


def test_each_set_is_what_its_name_says() -> None:
    assert _members(CONTROL_CHARACTERS) == CC
    assert _members(SHOWN_ESCAPED) == (CC - set("\t\n\r")) | BIDI_CONTROLS
    assert _members(SHOWN_ESCAPED_IN_A_LINE) == _members(SHOWN_ESCAPED) | set("\n\r")


def test_a_name_is_refused_for_exactly_the_control_characters(memory: Memory) -> None:
    refused = set()
    for char in sorted(CC | BIDI_CONTROLS | {"\u00a0", "\u00ad", "é"}):
        try:
            memory.core.plain_name("session id", f"s{char}1")
        except InvalidInput as exc:
            assert "holds a control character" in str(exc)
            refused.add(char)
    assert refused == CC  # a bidi mark or a no-break space is no control character


@pytest.mark.parametrize("one_line", [False, True])
def test_the_terminal_escapes_its_set_and_keeps_everything_else(one_line: bool) -> None:
    char_class = SHOWN_ESCAPED_IN_A_LINE if one_line else SHOWN_ESCAPED
    escaped = _members(char_class)
    for char in SAMPLE:
        shown = printable(f"a{char}b", one_line=one_line)
        assert (shown != f"a{char}b") == (char in escaped), repr(char)
        assert re.search(char_class, shown) is None, repr(char)


def test_a_line_break_in_one_line_is_named() -> None:
    assert printable("evil\nname\r\x1b[2J\u202e", one_line=True) == (
        "evil\\nname\\r\\x1b[2J\\u202e"
    )
    assert printable("two\nlines\r\n") == "two\nlines\r\n"


def test_captured_output_loses_the_terminal_controls_but_not_c1_or_bidi() -> None:
    kept = {c for c in SAMPLE if display_text(f"a{c}b") == f"a{c}b"}
    removed = {c for c in SAMPLE if display_text(f"a{c}b") == "ab"}
    assert removed == CC - set("\t\n\r") - set(map(chr, range(0x80, 0xA0)))
    assert BIDI_CONTROLS | set(map(chr, range(0x80, 0xA0))) | set("\t\n") <= kept
