"""Rule-based metadata extraction: file paths, tool names and error messages.

Everything here is a pure function over text. The transcript parser, the
chunker and the tool-event classifier share these helpers so that a file path
or an error is recognised the same way wherever it shows up.

The rules favour precision over recall: a path needs an extension (or a
well-known extension-less name such as ``Makefile``), URLs are removed before
looking for paths, and an error is a line that *starts* like an error
(``ValueError: ...``, ``error: ...``, ``fatal: ...``, a traceback's last line)
or a non-zero exit code. Only ``re`` and ``os.path`` are imported: this module
is on the hook path.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Iterable, Mapping
from typing import Any

# The marker the transcript parser writes in front of a tool call; the chunker
# and ``extract_tool_names`` read it back.
TOOL_MARKER = "[tool {name}]"
# The tools that hand work to a subagent (Claude Code named it Task, then Agent).
SUBAGENT_TOOLS = frozenset(("Agent", "Task"))

MAX_ERROR_CHARS = 200
MAX_ERRORS = 10
MAX_FILES = 50

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
# One pass finds three kinds of path: with a directory part and an extension
# (``src/app.py``), a bare name whose extension is checked against a known list
# (``app.py``, not ``e.g``), or a well-known extension-less name (``Makefile``).
# Characters allowed in a part: word chars, dot, dash, plus, @ (npm scopes).
_PATH = re.compile(
    r"(?<![\w@+.~/-])(?:"
    r"(?P<dir>(?:~|\.{1,2})?/?(?:[\w@+.-]+/)+[\w@+-][\w@+.-]*\.[A-Za-z0-9]{1,10})"
    r"|(?P<bare>[\w@+-][\w@+.-]*\.(?P<ext>[A-Za-z0-9]{1,10}))"
    r"|(?P<special>Makefile|Dockerfile|Containerfile|Justfile|Procfile|Gemfile|Rakefile|"
    r"LICENSE|CHANGELOG|README)"
    r")(?![\w/-])"
)
_KNOWN_EXTENSIONS = frozenset(
    [
        "py",
        "pyi",
        "ipynb",
        "js",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "jsx",
        "json",
        "jsonl",
        "toml",
        "yaml",
        "yml",
        "md",
        "rst",
        "txt",
        "ini",
        "cfg",
        "conf",
        "env",
        "lock",
        "sh",
        "bash",
        "zsh",
        "fish",
        "ps1",
        "bat",
        "sql",
        "html",
        "htm",
        "css",
        "scss",
        "sass",
        "less",
        "vue",
        "svelte",
        "rs",
        "go",
        "java",
        "kt",
        "kts",
        "scala",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cs",
        "fs",
        "rb",
        "php",
        "pl",
        "lua",
        "r",
        "swift",
        "m",
        "mm",
        "dart",
        "ex",
        "exs",
        "erl",
        "hrl",
        "hs",
        "ml",
        "elm",
        "clj",
        "cljs",
        "nim",
        "zig",
        "tf",
        "hcl",
        "proto",
        "graphql",
        "gradle",
        "xml",
        "csv",
        "tsv",
        "log",
        "diff",
        "patch",
        "dockerfile",
    ]
)

_TOOL_MARKER_RE = re.compile(r"\[tool ([A-Za-z0-9_.:-]+)\]")
_MCP_TOOL_RE = re.compile(r"\bmcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+")

_TRACEBACK_START = "Traceback (most recent call last)"
_ERROR_LINE = re.compile(
    r"^[ \t]*(?:E[ \t]+)?(?:"  # pytest prefixes the exception line with "E   "
    r"[A-Za-z_][\w.]*(?:Error|Exception|Failure)(?:\[[^\]]*\])?:\s*\S"  # ValueError: x
    r"|(?:error|ERROR|Error|fatal|FATAL|Fatal|panic|FAILED|FAIL)(?:\[[^\]]*\])?:\s*\S"
    r"|\*\* \([A-Za-z][\w.]*\)"  # Elixir/Erlang: ** (CompileError) ...
    r"|npm ERR!"
    r").*$",
    re.MULTILINE,
)
# Every pattern above and below contains one of these (lowercased): a cheap
# substring test rules out most tool outputs before any regex runs.
_MAX_LINES_PER_WORD = 200
_ERROR_WORDS = ("error", "exception", "fail", "fatal", "panic", "exit", "err!", "** (")
_EXIT_CODE = re.compile(
    r"\b(?:exit code|exit status|exited with code|exit_code|returned non-zero exit status)"
    r"[ \t]*[:=]?[ \t]*(-?\d+)",
    re.IGNORECASE,
)


def _dedup(items: Iterable[str], limit: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
            if len(seen) >= limit:
                break
    return tuple(seen)


def extract_paths(text: str, limit: int = MAX_FILES) -> tuple[str, ...]:
    """File paths mentioned in ``text``, in order of first appearance, deduplicated.

    A path needs a directory part and an extension (``src/app.py``,
    ``/etc/hosts.conf``), or a known extension when bare (``app.py``), or a
    well-known name (``Makefile``). URLs are ignored. Trailing punctuation and
    ``:line`` suffixes are not part of the path.
    """
    if not isinstance(text, str) or not text:
        return ()
    cleaned = _URL.sub(" ", text) if "://" in text else text
    found: list[str] = []
    for match in _PATH.finditer(cleaned):
        if match.group("bare") is not None:
            if match.group("ext").lower() not in _KNOWN_EXTENSIONS:
                continue
            found.append(match.group("bare"))
        else:
            found.append(match.group("dir") or match.group("special"))
    return _dedup((path.rstrip(".") for path in found), limit)


def relativize(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it lies inside it, else ``path`` unchanged.

    Both are compared after ``os.path.normpath``; nothing touches the file
    system (the file may be gone, or on another machine).
    """
    if not cwd or not path or not os.path.isabs(path):
        return path
    norm = os.path.normpath(path)
    base = os.path.normpath(cwd)
    if norm == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    if norm.startswith(prefix):
        return norm[len(prefix) :]
    return path


def relativize_all(
    paths: Iterable[str], cwd: str | None, limit: int = MAX_FILES
) -> tuple[str, ...]:
    """``relativize`` every path, deduplicated, order kept, at most ``limit``."""
    return _dedup((relativize(p, cwd) for p in paths), limit)


def extract_tool_names(text: str) -> tuple[str, ...]:
    """Tool names in ``text``: ``[tool Name]`` markers and ``mcp__server__tool`` names."""
    if not isinstance(text, str) or not text:
        return ()
    names = [m.group(1) for m in _TOOL_MARKER_RE.finditer(text)]
    names.extend(m.group(0) for m in _MCP_TOOL_RE.finditer(text))
    return _dedup(names, MAX_FILES)


def _cap(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def extract_errors(text: str, limit: int = MAX_ERRORS) -> tuple[str, ...]:
    """Error messages in ``text``: traceback conclusions, error lines, non-zero exit codes.

    For a Python traceback only its last line (``KeyError: 'x'``) is kept: the
    frames are noise for recall. Each message is capped at 200 characters.
    """
    if not isinstance(text, str) or not text:
        return ()
    lowered = text.lower()
    if not any(word in lowered for word in _ERROR_WORDS):
        return ()  # the common case, decided without a regex scan
    if _TRACEBACK_START in text or len(lowered) != len(text):
        return _errors_by_line(text, limit)
    # Only a line holding one of the words can match: find those lines with
    # str.find (C speed) and run the patterns on them alone, not on every line
    # of an output that may be thousands of lines long.
    starts: set[int] = set()
    for word in _ERROR_WORDS:
        index = lowered.find(word)
        found = 0
        while index != -1 and found < _MAX_LINES_PER_WORD:
            starts.add(text.rfind("\n", 0, index) + 1)
            found += 1
            line_end = text.find("\n", index)
            index = -1 if line_end == -1 else lowered.find(word, line_end)
    lines = []
    for line_start in sorted(starts):
        line_end = text.find("\n", line_start)
        lines.append(text[line_start : line_end if line_end != -1 else len(text)])
    return _errors_by_line("\n".join(lines), limit)


def _errors_by_line(text: str, limit: int) -> tuple[str, ...]:
    errors: list[str] = []
    in_traceback = False
    for line in text.split("\n"):
        if _TRACEBACK_START in line:
            in_traceback = True
            continue
        if in_traceback:
            # Frames and source lines are indented; the exception line is not.
            if not line.strip() or line[:1].isspace():
                continue
            in_traceback = False
            errors.append(_cap(line))
            continue
        exit_match = _EXIT_CODE.search(line)
        if exit_match:
            if exit_match.group(1).lstrip("-") != "0":
                errors.append(f"exit code {int(exit_match.group(1))}")
            continue
        if _ERROR_LINE.match(line):
            errors.append(_cap(line))
    return _dedup(errors, limit)


def exit_code_in(text: str) -> int | None:
    """The first exit code stated in ``text`` (``Exit code 2`` → 2), if any."""
    if not isinstance(text, str):
        return None
    match = _EXIT_CODE.search(text)
    return int(match.group(1)) if match else None


# Lines that report what a command achieved, across common tools: test-runner totals
# (ExUnit/RSpec, pytest, Jest/Vitest, cargo, go), a git commit or push, and the check
# mark CLIs print on success. Compiled on first use: most hooks never need it.
_OUTCOME_SOURCE = (
    r"^[ \t=]*(?:"
    r"(?:\d+ doctests?, )?\d+ (?:tests?|examples?|specs?|properties), \d+ failures?\b"
    r"|(?:\d+ failed, )?\d+ passed\b"
    r"|Tests?:\s+.*\b\d+ passed\b"
    r"|test result: \w+\. \d+ passed\b"
    r"|ok\s+\S+\s+[\d.]+s\b"
    r"|\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,40}\] \S"
    r"|(?:[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}|\* \[new (?:branch|tag)\])\s+\S+ -> \S"
    r"|[\u2713\u2714]\s*\S"
    r").*$"
)
# A test total that reports failures is no achievement (its errors say what happened).
_FAILING = r"\b[1-9]\d* (?:failures?|failed)\b|\bFAILED\b"
_OUTCOME_HINTS = (
    "test",
    "passed",
    "example",
    "spec",
    "propert",
    "ok",
    "[",
    "->",
    "\u2713",
    "\u2714",
)
MAX_OUTCOMES = 5


def extract_outcomes(text: str, limit: int = MAX_OUTCOMES) -> tuple[str, ...]:
    """Lines of a command's output that say what it achieved: passing test totals (``87
    tests, 0 failures``, ``12 passed``), a commit (``[main 1a2b3c4] msg``) or push
    (``1a2b..3c4d  main -> main``), a check-mark line (``✓ Closed x``). Each is capped
    at 200 characters; the last ``limit`` are kept (a run's final totals come last)."""
    if not isinstance(text, str) or not text:
        return ()
    lowered = text.lower()
    if not any(hint in lowered for hint in _OUTCOME_HINTS):
        return ()
    found = [_cap(m.group(0).strip(" \t=")) for m in re.finditer(_OUTCOME_SOURCE, text, re.M)]
    unique = [line for line in dict.fromkeys(found) if not re.search(_FAILING, line)]
    return tuple(unique[-limit:])


# Longest label plus description of one option, and of the line of all options.
MAX_OPTION_CHARS = 120
MAX_OPTIONS_CHARS = 500


def asked_questions(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The questions of an AskUserQuestion call, each with the options it offered on one
    line (``label (description); …``, '' when none): what the user chose among is part
    of the decision."""
    found: list[tuple[str, str]] = []
    questions = args.get("questions")
    for question in questions if isinstance(questions, list) else []:
        if not isinstance(question, dict) or not isinstance(question.get("question"), str):
            continue
        options = question.get("options")
        offered = []
        for option in options if isinstance(options, list) else []:
            label = option.get("label") if isinstance(option, dict) else None
            if not isinstance(label, str) or not label.strip():
                continue
            about = option.get("description")
            text = f"{label} ({about})" if isinstance(about, str) and about.strip() else label
            offered.append(_cap(" ".join(text.split()), MAX_OPTION_CHARS))
        found.append((question["question"], _cap("; ".join(offered), MAX_OPTIONS_CHARS)))
    return found
