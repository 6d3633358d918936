"""Checks of the arguments the Python API is given: one helper per kind of argument.

The CLI, HTTP and MCP parse their input into the right types before they call
the facade; a Python caller passes whatever it has. A string where a
``datetime`` belongs, ``"5"`` as a limit or ``None`` as a path failed deep
inside (``'str' object has no attribute 'tzinfo'``), and NaN as a score passed
every comparison. So the facade's entry points check each argument here, at
the boundary, and refuse a bad one with :class:`~memlane.errors.InvalidInput`
naming the argument, what it got (quoted short and filtered:
:func:`memlane.privacy.excerpt`) and what it takes.

Moments are ``datetime`` objects only (a naive one is UTC), between
:data:`memlane.timeparse.EARLIEST` and ``LATEST``: text is not parsed here,
because "7d" or "2026-01-31" means a time only relative to a clock and a zone
the caller should choose (``datetime.fromisoformat``). Numbers are ``int`` (a
``bool`` is not one) or finite floats. A list of texts (tags, linked files) is
a list or tuple of strings: a bare string is refused, not split into its
characters nor taken as one item.

This module is on the hook path: standard library and memlane's base only.
"""

from __future__ import annotations

import math
import os
import re
from datetime import UTC, datetime

from memlane.errors import InvalidInput
from memlane.privacy import excerpt
from memlane.text import CONTROL_CHARACTERS
from memlane.timeparse import RANGE, in_range

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


EMPTY_TYPE = "the type is empty: give one such as note, decision or bugfix"


def given_type(type: str) -> str:
    """A type a person or a client names (save, search): refused when empty, as an edit
    refuses it (``memories.clean_type``); only a draft that names none is a note."""
    if isinstance(type, str) and not type.strip():
        raise InvalidInput(EMPTY_TYPE)
    return type


def blank(text: str) -> bool:
    """Whether ``text`` holds only blanks and control characters
    (:data:`memlane.text.CONTROL_CHARACTERS`: a NUL, an escape): it reads as nothing."""
    if text.isprintable():  # no control character: checked at C speed
        return not text.strip()
    return not re.sub(CONTROL_CHARACTERS, "", text).strip()


def required_text(what: str, value: str, hint: str = "") -> str:
    """``value``, a text that must say something (a session's request, an agent's name):
    refused when it is not a string or is :func:`blank`, with one message wherever it is
    given."""
    if not isinstance(value, str) or blank(value):
        raise InvalidInput(f"{what} is empty" + (f": {hint}" if hint else ""))
    return value


def optional_text(
    what: str, value: str | None, hint: str = "give one or leave it out"
) -> str | None:
    """``value`` as :func:`required_text` takes it, where it may be left out: None and
    ``""`` are "not given" (None; an agent's tool call fills an optional field with
    ``""``), a blank one is refused."""
    return None if value is None or value == "" else required_text(what, value, hint)


def narrowing_text(what: str, value: str | None, hint: str) -> str | None:
    """``value``, a criterion that narrows what a deletion removes (a session): None is
    not given, but ``""`` is refused as a blank one is. Read as "not given", it would widen
    the deletion (``delete --session "$SID" --yes`` with ``SID`` unset: the whole project)."""
    return None if value is None else required_text(what, value, hint)


def _given(value: object) -> str:
    """What a caller passed, for a message: its type and a short, filtered quote."""
    return f"{type(value).__name__} {excerpt(value)}"


def moment(what: str, value: datetime | None) -> datetime | None:
    """``value`` as an aware datetime (naive: UTC); None stays None."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInput(
            f"{what} must be a datetime, not {_given(value)}"
            " (for text: datetime.fromisoformat('2026-01-31'))"
        )
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if not in_range(value):
        raise InvalidInput(f"{what} {value.isoformat()} is out of range ({RANGE})")
    return value


def whole(what: str, value: int, low: int, high: int) -> int:
    """``value``, a whole number from ``low`` to ``high``."""
    if type(value) is not int:  # a bool is an int to isinstance
        raise InvalidInput(f"{what} must be a whole number, not {_given(value)}")
    if not low <= value <= high:
        shown = f"{value:,}" if abs(value) < 10**20 else f"{str(value)[:20]}… (a huge number)"
        raise InvalidInput(f"{what} must be from {low:,} to {high:,}, got {shown}")
    return value


def finite(what: str, value: float | None) -> float | None:
    """``value``, a finite number (NaN passes every bound check); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{what} must be a number, not {_given(value)}")
    if not math.isfinite(value):
        raise InvalidInput(f"{what} must be a finite number, not {value}")
    return float(value)


def memory_id(value: int) -> int:
    """``value``, a memory id as a caller gives one: an int (NotFound is the caller's
    to raise when no memory has it)."""
    if type(value) is not int:
        raise InvalidInput(f"a memory id is a whole number, not {_given(value)}")
    return value


def memory_ids(values: Iterable[int]) -> tuple[int, ...]:
    """``values``, a list of memory ids (:func:`memory_id`)."""
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise InvalidInput(f"ids must be a list of memory ids, not {_given(values)}")
    found = tuple(values)  # once: a generator is read here, not again by the caller
    for value in found:
        memory_id(value)
    return found


def texts(what: str, items: Sequence[str]) -> Sequence[str]:
    """``items`` (a memory's tags or linked files), a list or tuple of strings."""
    if not isinstance(items, list | tuple):
        hint = f" ({what}=[{excerpt(items)}] for one)" if isinstance(items, str) else ""
        raise InvalidInput(f"{what} must be a list of strings, not {_given(items)}{hint}")
    for item in items:
        if not isinstance(item, str):
            raise InvalidInput(f"{what} must be strings; one is {_given(item)}")
    return items


def path(what: str, value: str | os.PathLike[str]) -> str:
    """``value`` (a ``str`` or a ``pathlib.Path``) as a string naming a file or folder.

    Refused: another type (bytes: a name that is not text cannot be shown or stored), a
    name that is empty or only blanks (``open(" ")`` made a database named " "), and
    one holding NUL, which no file name can.
    """
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a path (str or pathlib.Path), not {_given(value)}")
    if not text.strip():
        raise InvalidInput(f"{what} is {'empty' if not text else 'blank'}: name a file")
    if "\0" in text:
        raise InvalidInput(f"{what} {excerpt(text)} holds a NUL character, which no path can")
    return text
