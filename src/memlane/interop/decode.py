"""JSON read from files memlane did not write: one decoder for every importer.

``json`` raises ``RecursionError``, not ``ValueError``, on a value nested deeper
than the interpreter's recursion limit (``[[[[…``), so a crafted line escaped the
importers' "not valid JSON" handling and ended the command with a traceback.
:func:`loads` and :func:`load` turn it into the :class:`json.JSONDecodeError` every
caller already reports in one line. :func:`input_file` checks the path an importer
is given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from memlane.errors import InvalidInput
from memlane.utf8 import storable_json


def input_file(path: str | Path) -> Path:
    """``path`` as a file to import, or a one-line error: missing, or not a regular file
    (a directory; ``/dev/null``, which reads as empty; a FIFO, which would block)."""
    file = Path(path)
    if not file.exists():
        raise InvalidInput(f"no such file: {path}")
    if not file.is_file():
        raise InvalidInput(f"not a regular file: {path}")
    return file


def loads(text: str | bytes) -> Any:
    """:func:`json.loads`; too deep a nesting is a :class:`json.JSONDecodeError` too, and a
    lone surrogate (``"\\ud83d"``: a cut emoji) becomes U+FFFD (:func:`storable_json`)."""
    try:
        return storable_json(json.loads(text), text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


def load(handle: IO[str]) -> Any:
    """:func:`json.load` with :func:`loads`'s handling of too deep a nesting."""
    return loads(handle.read())
