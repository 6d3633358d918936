"""Characters that act instead of showing are listed once (:mod:`memlane.text`), in one set
per use, each named for what it means: names refuse every control character
(``CONTROL_CHARACTERS``), shown text escapes the controls and the bidi controls but keeps
its layout (``SHOWN_ESCAPED``), and a text shown as one line escapes its line breaks too
(``SHOWN_ESCAPED_IN_A_LINE``). The CLI, the dashboard, the recover command's error lines
and ``Core.plain_name`` use these sets and no copy of them."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from memlane.cli.terminal import printable
from memlane.errors import InvalidInput
from memlane.integrations.settings_merge import is_memlane_command
from memlane.service import Memory
from memlane.text import (
    CONTROL_CHARACTERS,
    SHOWN_ESCAPED,
    SHOWN_ESCAPED_IN_A_LINE,
    display_text,
    without_controls,
)
from tests.conftest import run_memlane
from tests.test_agent_payloads import fire
from tests.test_hooks import rows

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


def test_blank_text_is_blanks_and_exactly_the_control_characters() -> None:
    """arguments.blank reads CONTROL_CHARACTERS (it had its own copy of the ranges)."""
    from memlane.arguments import blank

    assert {c for c in SAMPLE if blank(c)} == CC | {c for c in SAMPLE if c.isspace()}
    assert blank("") and blank(" \t\u0000\u001b\u0085\u009f ")
    assert not blank("\u0000a") and not blank("\u200e") and not blank("\u00a0x")


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


# A C0 control no stored text keeps (all but tab, line feed and carriage return).
NOT_STORED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def test_stored_text_keeps_exactly_the_layout_controls() -> None:
    stored = {c for c in SAMPLE if without_controls(f"a{c}b") == "ab"}
    assert stored == {chr(c) for c in range(0x20)} - set("\t\n\r")
    assert without_controls("\x1b[1mbold\x1b[0m \x1b]0;title\x07done") == "bold done"
    text = "plain é\ttext\n"
    assert without_controls(text) is text  # nothing to remove: the same object


def test_no_control_character_reaches_the_store_or_the_index(
    home: Path, user_home: Path, project: Path, tmp_path: Path
) -> None:
    """NUL and the other C0 controls in a prompt, a tool's output and a transcript, through
    the hook commands `memlane setup` writes: none is stored or indexed, and a secret a
    NUL split is masked (the filter reads the text as stored)."""
    done = run_memlane(home, "setup", env={"HOME": str(user_home)}, cwd=user_home)
    assert done.returncode == 0, done.stderr
    settings = json.loads((user_home / ".claude" / "settings.json").read_text())

    def command(native: str) -> str:
        hooks = [h for g in settings["hooks"][native] for h in g["hooks"]]
        return next(str(h["command"]) for h in hooks if is_memlane_command(h["command"]))

    transcript = tmp_path / "t.jsonl"
    lines = [
        {
            "type": "user",
            "message": {"role": "user", "content": "why\x00 does\x08 it\x1b[31m fail"},
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Because\x00 the\x0c retry\x07 loop never ends."}
                ],
            },
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    base = {"session_id": "nul-1", "cwd": str(project), "transcript_path": str(transcript)}
    split_token = "ghp_Z9y8X7w6V5u4T3s2\x00R1q0P9o8N7m6L5k4J3i2"
    fire(home, project, command("UserPromptSubmit"), {**base, "prompt": "fix\x00 the\x01 loop"})
    tool = {
        "tool_name": "Bash",
        "tool_input": {"command": "cat\x00 out.log", "description": "read\x02 the log"},
        "tool_response": {"stdout": f"line\x00one\ntoken {split_token}\n\x1b[32mok\x1b[0m"},
    }
    fire(home, project, command("PostToolUse"), {**base, **tool})
    fire(home, project, command("Stop"), {**base, "last_assistant_message": "done\x00"})

    stored = rows(home, "SELECT content, title, metadata, tags, files FROM memories")
    assert {"prompt", "observation", "turn"} <= {
        r[0] for r in rows(home, "SELECT kind FROM memories")
    }
    indexed = rows(home, "SELECT * FROM memories_fts")
    texts = [str(value) for row in stored + indexed for value in row if value is not None]
    assert texts and not [t for t in texts if NOT_STORED.search(t)]
    assert not [t for t in texts if "\\u0000" in t or "R1q0P9o8N7m6L5k4J3i2" in t]
    assert any("fix the loop" in t for t in texts)
    assert any("Because the retry loop never ends." in t for t in texts)


def test_the_bytes_removed_are_the_characters_removed() -> None:
    from memlane.text import _NOT_STORED, _NOT_STORED_BYTES

    assert bytes(c for c in range(128) if re.fullmatch(_NOT_STORED, chr(c))) == _NOT_STORED_BYTES
