"""Text UTF-8 can hold: what SQLite, PostgreSQL and the hashes take.

A lone UTF-16 surrogate has no UTF-8 form. JSON can escape one (``"\\ud83d"``: an
emoji cut in half) and Python reads an undecodable byte of a command line or a pipe
as one, so every text memlane stores or hashes passes :func:`storable` first (the
privacy filter calls it). Imports nothing: the privacy filter's modules stay lean.
"""

from __future__ import annotations

_SURROGATES_TO_REPLACEMENT: dict[int, int] = {}


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
