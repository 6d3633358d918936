"""Text UTF-8 can hold: what SQLite, PostgreSQL and the hashes take.

A lone UTF-16 surrogate has no UTF-8 form. JSON can escape one (``"\\ud83d"``: an
emoji cut in half) and Python reads an undecodable byte of a command line or a pipe
as one. Three places apply :func:`storable`: the privacy filter, which every stored or
hashed text passes; the stores, which bind a query or a filter holding one as U+FFFD
(:func:`storable_params`); and the JSON decoding of imports and transcripts
(:func:`storable_json`), which hash or keep text before the filter sees it, and of the
JSON pydantic's parser refuses (:func:`storable_json_text`): MCP stdio lines
(``memlane.mcp_stdio``), HTTP API bodies and MCP-over-HTTP bodies, read as the CLI and
the importers read them. Imports nothing at module level: the privacy filter's modules
stay lean.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, Sequence
    from typing import Any

_SURROGATES_TO_REPLACEMENT: dict[int, int] = {}
# How JSON text escapes a surrogate (the only way it decodes to one); compiled on first need.
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"
_SURROGATE_IN_BYTES: re.Pattern[bytes] | None = None
_SURROGATE_IN_TEXT: re.Pattern[str] | None = None


def storable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (no word character, like it)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        if not _SURROGATES_TO_REPLACEMENT:
            _SURROGATES_TO_REPLACEMENT.update(dict.fromkeys(range(0xD800, 0xE000), 0xFFFD))
        return text.translate(_SURROGATES_TO_REPLACEMENT)
    return text


def storable_params(params: Sequence[object] | Mapping[str, object]) -> Any:
    """A statement's ``params`` with :func:`storable` strings, in lists too (a query or a
    filter typed with an undecodable byte), for a database driver that refused them."""
    return storable_tree(params if isinstance(params, dict) else list(params))


def storable_json(value: Any, source: str | bytes) -> Any:
    """``value``, which json decoded from ``source``, with :func:`storable` strings (keys
    too); ``value`` itself unless ``source`` escapes a surrogate."""
    return storable_tree(value) if _escapes_surrogate(source) else value


def storable_json_text(source: str | bytes) -> str | None:
    """JSON ``source`` written again with each lone surrogate it escapes as U+FFFD, for a
    parser that refuses such an escape (pydantic's); None when it escapes none (a pair
    is a whole character) or is no JSON Python's json reads."""
    if not _escapes_surrogate(source):
        return None
    import json

    try:
        value = json.loads(source)
        repaired = storable_tree(value)
        if repaired == value:
            return None
        return json.dumps(repaired, ensure_ascii=False)
    except (ValueError, RecursionError):  # no JSON, or nested deeper than any parser takes
        return None


def _escapes_surrogate(source: str | bytes) -> bool:
    global _SURROGATE_IN_BYTES, _SURROGATE_IN_TEXT
    if _SURROGATE_IN_BYTES is None or _SURROGATE_IN_TEXT is None:
        import re

        _SURROGATE_IN_TEXT = re.compile(_SURROGATE_ESCAPE)
        _SURROGATE_IN_BYTES = re.compile(_SURROGATE_ESCAPE.encode())
    if isinstance(source, str):
        return _SURROGATE_IN_TEXT.search(source) is not None
    return _SURROGATE_IN_BYTES.search(source) is not None


def storable_tree(value: Any) -> Any:
    """:func:`storable` over strings in lists, tuples (as lists) and dicts (keys too)."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list | tuple):
        return [storable_tree(item) for item in value]
    if isinstance(value, dict):
        return {storable_tree(key): storable_tree(item) for key, item in value.items()}
    return value
