"""JSON read from files memlane did not write: one decoder for every importer.

One rule: every way decoding fails is a :class:`json.JSONDecodeError`, which every
caller reports in one line (a bad line by its number, a bad file by its name). ``json``
raises other errors on text it cannot decode: ``RecursionError`` on a value nested
deeper than the interpreter's recursion limit (``[[[[…``), and a plain ``ValueError``
on an integer of more than 4,300 digits (Python's limit on converting text to int).
Both escaped the importers' "not valid JSON" handling and ended the whole command with
a traceback; :func:`loads` turns them into the decode error, and so does the streamed
reader (:mod:`memlane.interop.json_stream`). :func:`input_file` checks the path an
importer is given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

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


def decode_error(exc: ValueError | RecursionError) -> json.JSONDecodeError:
    """The :class:`json.JSONDecodeError` for any failure of ``json``'s decoder."""
    if isinstance(exc, json.JSONDecodeError):
        return exc
    if isinstance(exc, RecursionError):
        return json.JSONDecodeError("nested too deeply", "", 0)
    message = str(exc)
    if message.startswith("Exceeds the limit"):  # (4300 digits) for integer string conversion
        message = f"a number of more than {sys.get_int_max_str_digits():,} digits"
    return json.JSONDecodeError(message, "", 0)


def loads(text: str | bytes) -> Any:
    """:func:`json.loads`; any failure to decode is a :class:`json.JSONDecodeError`
    (:func:`decode_error`), and a lone surrogate (``"\\ud83d"``: a cut emoji) becomes
    U+FFFD (:func:`storable_json`)."""
    try:
        return storable_json(json.loads(text), text)
    except (ValueError, RecursionError) as exc:
        raise decode_error(exc) from None
