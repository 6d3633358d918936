"""Tool output as a person would read it: what a unit indexes and a passage shows.

:func:`clean_output` removes what carries no fact, by rules that hold for any
tool and language:

* **display noise**: Read's line-number arrows (``   12→``), ANSI escape codes,
  carriage-return redraws (only what the line finally showed is kept) and other
  control characters;
* **progress**: lines made only of dots, marks or bar characters (``.....F..``,
  ``[=====>    ] 45%``) and the status lines build tools and package managers
  print on their way (``==> dep``, rebar3's ``===> Compiling yamerl``,
  ``Compiling 12 files (.ex)``, ``Compiling lib/ash.ex (it's taking more than
  10s)``, ``Downloading …``, ``Requirement already satisfied``);
* **repeats**: a line seen before in the same output (the same stack frame under
  every failing test, the same warning per file) is kept once; a run of one
  line says how often it repeated.

Blank lines go too: units are small and a passage is made of lines.
:func:`trivial_line` names the lines of code that say nothing alone (a closing
``end`` or brace), which units drop from file contents; :func:`without_subagent_trailer`
takes off the resume id and usage Claude Code appends to a subagent's answer, and
:func:`without_output_file` the temporary file a background command writes to.
"""

from __future__ import annotations

import json
import re

from memlane.privacy import repeated
from memlane.text import display_text, one_line

# Only dots, test-progress letters, bar and spinner characters, brackets, percentages.
_PROGRESS = re.compile(
    r"^[\s.·•*#=>\-|/\\_~+^\[\]()█▉▊▋▌▍▎▏░▒▓▕⠁-⣿]*(?:\d{1,3}(?:\.\d+)?%)?[\s\]|)]*$"
)
_TEST_DOTS = re.compile(r"^[.FEsSxX*]{8,}(?:\s*\[\s*\d+%\])?$")
_STATUS = re.compile(
    r"^\s*(?:==> \S+$|===> |Compiling \d+ files? \(|Generated \S+ app$|Compiled \S+$"
    r"|Compiling \S+ \(it's taking more than \d+s\)$"
    r"|Downloading\b|Downloaded\b|Fetching\b|Resolving\b|Resolved \d|Installing\b|Collecting\b"
    r"|Requirement already satisfied|Using cached\b|Unpacking\b|Preparing\b|Updating crates"
    r"|Running setup for\b|Getting extensions in\b|Running ExUnit with seed"
    r"|remote: (?:Enumerating|Counting|Compressing|Total)\b"
    r"|(?:Receiving|Resolving) (?:objects|deltas):)"
)
# The three above in one pattern: one match call per line instead of three.
_NOISE = re.compile("|".join(f"(?:{p.pattern})" for p in (_PROGRESS, _TEST_DOTS, _STATUS)))
# First characters no line of _NOISE starts with: ASCII letters that open none of its
# words, quotes and other marks outside its classes. Such a line skips the regex (most
# lines of code and prose); any other goes through it.
_NOT_NOISE = frozenset("abcdefghijklmnopqtuvwyzABHJKLMNOQTVWYZ\"'`@{}<!$&;:,?%")
_TRIVIAL_FIRST = frozenset("{}()[];,efd")
_TRIVIAL = re.compile(r"^[\s{}()\[\];,]*(?:end|fi|done|esac|\}\)?;?|\)\s*;?)?[\s{}()\[\];,]*$")


def is_progress(line: str) -> bool:
    """True for a line that only shows progress or a build tool's status."""
    stripped = line.strip()
    if not stripped:
        return True
    return _NOISE.match(stripped) is not None


def clean_output(text: str) -> str:
    """Tool output without display noise, progress, status lines, blanks and repeats."""
    return "\n".join(clean_lines(text))


def clean_lines(text: str) -> list[str]:
    """The lines of :func:`clean_output` (right-stripped), before they are joined."""
    lines: list[str] = []
    seen: set[str] = set()
    run = 0
    noise, not_noise = _NOISE.match, _NOT_NOISE
    for raw in display_text(text).split("\n"):
        line = raw.rstrip()
        stripped = line.lstrip()
        # is_progress(line), without the call, and without the regex when it cannot match
        if not stripped or (stripped[0] not in not_noise and noise(stripped)):
            continue
        # The line's words single-spaced. An ASCII line (isascii reads a flag) holds no
        # blank but spaces and tabs, display_text having removed the other controls: with
        # no tab or double space it is its own key, without a list of its words.
        if stripped.isascii() and "  " not in stripped and "\t" not in stripped:
            key = stripped
        else:
            key = " ".join(stripped.split())
        if key in seen:
            if lines and " ".join(lines[-1].split()).startswith(key):
                run += 1
                lines[-1] = repeated(line, run + 1)
            continue
        seen.add(key)
        run = 0
        lines.append(line)
    return lines


# What Claude Code appends to a subagent's answer for itself: the id to resume the agent
# with, then the tokens, tool uses and time it took. It says nothing about the work.
_SUBAGENT_TRAILER = re.compile(
    r"agentId: \w+ \(for resuming[^)\n]*\)\s*(?:<usage>[^<]*</usage>\s*)?\Z"
)


def without_subagent_trailer(text: str) -> str:
    """A subagent's answer without the resume id and usage lines Claude Code appends."""
    start = text.rfind("agentId: ")
    if start < 0 or text[start - 1 : start] not in ("", "\n"):
        return text
    return text[:start].rstrip() if _SUBAGENT_TRAILER.match(text, start) else text


# How a web search's result lists the pages it found: Claude Code's text result has one
# line ``Links: [{"title": …, "url": …}, …]`` before the answer; its PostToolUse
# response, a list of entries with the same fields.
_LINKS = "Links: ["
LINK_TITLE_CHARS = 100


def link_line(title: str, url: str) -> str:
    """``- Dialyxir v1.4.7 — Documentation https://hexdocs.pm/dialyxir/``: one page found."""
    return f"- {one_line(title, LINK_TITLE_CHARS)} {url}".rstrip()


def with_links_listed(text: str) -> str:
    """A web search's result with each ``Links: [...]`` line written as one
    :func:`link_line` per page: a page's title is often the fact searched for (a
    release, a project's name), and as JSON it is cut mid-field into lines of
    quotes and braces. A line that is not such a list stays as it was."""
    if _LINKS not in text:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith(_LINKS):
            lines[index] = _listed(line) or line
    return "\n".join(lines)


def _listed(line: str) -> str:
    try:
        entries = json.loads(line[len(_LINKS) - 1 :])
    except ValueError:
        return ""
    if not isinstance(entries, list):
        return ""
    found = []
    for entry in entries:
        if not isinstance(entry, dict):
            return ""
        title, url = entry.get("title"), entry.get("url")
        if not isinstance(title, str) or not isinstance(url, str):
            return ""
        found.append(link_line(title, url))
    return "\n".join(found)


# Where Claude Code writes a background command's output, after the launch it reports
# ("Command running in background with ID: b0be39e. Output is being written to: …"): a
# temporary file of that session, gone once it ends.
_OUTPUT_FILE = re.compile(r"[ \t]*Output is being written to: [^\n]*")


def without_output_file(result: str) -> str:
    """A command's result without the temporary file its background run writes to."""
    if not result.startswith("Command") or "background" not in result[:160]:
        return result
    return _OUTPUT_FILE.sub("", result, count=1)


def trivial_line(line: str) -> bool:
    """True for a line of code that says nothing by itself (blank, ``end``, a brace)."""
    # _TRIVIAL takes blanks at both ends, so it says the same of the stripped line, which
    # can only start with a mark of its classes or a word's first letter. Matched whole,
    # a line's indentation cost it a backtrack per blank.
    stripped = line.strip()
    return not stripped or (stripped[0] in _TRIVIAL_FIRST and _TRIVIAL.match(stripped) is not None)
