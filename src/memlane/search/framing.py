"""Memory text shown to an agent can never forge the structure around it.

Injected context frames memories as quoted reference data: memlane's own
markers open and close the block, and each item has a header memlane writes.
A memory is untrusted text (a tool output, a web page, a pasted prompt), so
before it is shown :func:`neutralise` takes away every way it could pass for
that frame:

* **lookalikes**: NFKC folds full-width and other compatibility forms
  (``＜/memlane-context＞`` → ``</memlane-context>``) and HTML entities are
  decoded (``&lt;`` → ``<``), so what a marker looks like is what is checked;
* **markers**: anything shaped like a memlane tag (``<memlane…>``,
  ``</memlane…>``, any case or spacing) becomes ``[memlane tag removed]``; and
  so does a tag of the agent's own harness that frames what it says with
  authority (``<system-reminder>``, which wraps a hook's context in Claude Code:
  a stored web page's ``</system-reminder>`` would close that wrapper and
  speak as the harness), as ``[harness tag removed]``;
* **structure**: a line that starts like a heading, a numbered item, a quote,
  a rule or a fence is escaped with a leading backslash, so it reads as text,
  never as a new entry of the pack or a new recalled item (memlane's own
  headers are exactly those forms).

A stored *name* is untrusted too: a project, type or session id comes from an
import or a sync as easily as a memory does. Whatever memlane writes into a
header or an index for an agent (a title, a type, a project, a session, a file)
goes through :func:`one_line_safe` (a session id through :func:`session_label`).

:func:`quoted` then indents every line under the item that shows it, so even a
bullet stays inside its item. Standard
library only, and nothing imported at module load: this runs on every prompt.
"""

from __future__ import annotations

import re

from memlane.text import shorten

TAG_REPLACEMENT = "[memlane tag removed]"
HARNESS_TAG_REPLACEMENT = "[harness tag removed]"
# The tags a coding agent's harness frames its own messages with (Claude Code's system
# reminders and prompt-hook output, the model API's function-call markup), any case.
HARNESS_TAGS = (
    "system-reminder",
    "user-prompt-submit-hook",
    "function_calls",
    "function_results",
    "system",
)
# A marker in any case, with optional spaces and slash: memlane's own (<memlane-context>,
# < /MEMLANE >, any name it starts) or the harness's (a name of HARNESS_TAGS, whole).
_MARKER = re.compile(
    r"<\s*/?\s*(?:(?P<memlane>memlane)|(?:" + "|".join(HARNESS_TAGS) + r"|antml:[\w-]+)"
    r"(?=[\s/>]))[^<>\n]{0,40}>",
    re.IGNORECASE,
)


def _replacement(found: re.Match[str]) -> str:
    return TAG_REPLACEMENT if found.group("memlane") else HARNESS_TAG_REPLACEMENT


# Line starts that make structure: headings, numbered items, quotes, fences, rules.
_STRUCTURE = re.compile(r"^(\s*)(#{1,6}(?=\s|#|$)|\d{1,9}[.)](?=\s|$)|>|```|~~~|---|===)")
QUOTE_PREFIX = "   "


def neutralise(text: str) -> str:
    """``text`` with lookalikes folded and memlane and harness markers removed (line
    structure kept).

    Never makes text longer than NFKC and entity decoding do; call it before
    measuring what is shown.
    """
    if not text.isascii():
        import unicodedata

        text = unicodedata.normalize("NFKC", text)
    if "&" in text:
        import html

        text = html.unescape(text)
        if not text.isascii():  # an entity can decode to a lookalike (&#65308; is ＜)
            import unicodedata

            text = unicodedata.normalize("NFKC", text)
    if "<" in text:
        text = _MARKER.sub(_replacement, text)
    return text


def escape_structure(line: str) -> str:
    """``line`` with a leading heading, numbered-item, quote, fence or rule marker escaped."""
    return _STRUCTURE.sub(r"\1\\\2", line)


def quoted(text: str, prefix: str = QUOTE_PREFIX) -> str:
    """Every line of ``text`` (already neutralised) escaped and indented by
    ``prefix`` (blank lines dropped): at most ``len(prefix) + 1`` characters per line more."""
    lines = (line.strip() for line in text.split("\n"))
    return "\n".join(prefix + escape_structure(line) for line in lines if line)


def safe_lines(text: str, prefix: str = QUOTE_PREFIX) -> str:
    """``text`` neutralised, escaped and indented: memory text ready to sit under an item."""
    return quoted(neutralise(text), prefix)


def one_line_safe(text: str) -> str:
    """``text`` neutralised, flattened to one line and escaped: a title or a stored name
    (project, type, file) inside a frame."""
    return escape_structure(" ".join(neutralise(text).split()))


_HEX = frozenset("0123456789abcdefABCDEF")
SESSION_LABEL_CHARS = 60


def session_label(session_id: str | None) -> str:
    """A session as agent-facing text names it: an agent's UUID by its first 8 digits
    (and what follows it: a subagent's ``:agent-…``), any other id whole (``sess-th-1``
    and ``sess-th-2`` cut to 8 were one name), made safe, at most 60 characters."""
    label = session_id or ""
    groups = label[:36].split("-")
    if [len(g) for g in groups] == [8, 4, 4, 4, 12] and set("".join(groups)) <= _HEX:
        label = label[:8] + label[36:]
    label = one_line_safe(label)
    return shorten(label, SESSION_LABEL_CHARS)
