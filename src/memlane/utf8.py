"""Text UTF-8 can hold: what SQLite, PostgreSQL and the hashes take.

A lone UTF-16 surrogate has no UTF-8 form. JSON can escape one (``"\\ud83d"``: an
emoji cut in half) and Python reads an undecodable byte of a command line or a pipe
as one, so every text memlane stores or hashes passes :func:`storable` first (the
privacy filter calls it). Imports nothing: the privacy filter's modules stay lean.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

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


def storable_params(params: Sequence[object] | Mapping[str, object]) -> Any:
    """A statement's ``params`` with :func:`storable` strings, in lists too (a query or a
    filter typed with an undecodable byte), for a database driver that refused them."""
    if isinstance(params, dict):
        return {key: _storable_value(value) for key, value in params.items()}
    return [_storable_value(value) for value in params]


def _storable_value(value: object) -> object:
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list | tuple):
        return [_storable_value(item) for item in value]
    return value
