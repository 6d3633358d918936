"""JSON read from files memlane did not write: one decoder for every importer.

``json`` raises ``RecursionError``, not ``ValueError``, on a value nested deeper
than the interpreter's recursion limit (``[[[[…``), so a crafted line escaped the
importers' "not valid JSON" handling and ended the command with a traceback.
:func:`loads` and :func:`load` turn it into the :class:`json.JSONDecodeError` every
caller already reports in one line.
"""

from __future__ import annotations

import json
from typing import IO, Any


def loads(text: str | bytes) -> Any:
    """:func:`json.loads`; too deep a nesting is a :class:`json.JSONDecodeError` too."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


def load(handle: IO[str]) -> Any:
    """:func:`json.load` with :func:`loads`'s handling of too deep a nesting."""
    return loads(handle.read())
