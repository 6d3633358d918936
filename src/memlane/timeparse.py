"""Parse the times people type: ISO-8601 dates and durations like ``90d``.

One range for every interface (CLI, HTTP, MCP): a duration is at most
:data:`MAX_DURATION`, and a moment lies between :data:`EARLIEST` and
:data:`LATEST` — memories are stamped in epoch seconds, and far-off dates only
overflow date arithmetic. Text past :data:`MAX_WHEN_CHARS` is refused before it is
parsed. Anything else is an InvalidInput naming the value, quoted short
(:func:`memlane.privacy.excerpt`: a value may be megabytes long).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

from memlane.errors import InvalidInput
from memlane.privacy import excerpt

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w|mo|y)\s*$", re.IGNORECASE)
_DAY = 86400
_UNITS = {"s": 1, "min": 60, "h": 3600, "d": _DAY, "w": 7 * _DAY, "mo": 30 * _DAY, "y": 365 * _DAY}
# "m" reads as minutes to some and months to others: `prune --older-than 3m` meant as
# three months and read as minutes deletes nearly everything. It is refused, naming both.
_AMBIGUOUS = "m"
MAX_DURATION = timedelta(days=1000 * 365)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
RANGE = f"{EARLIEST.year} to {LATEST.year}"  # as error messages say it
# How far ahead of this machine's clock a time read from a file or a sync peer may lie
# (clocks drift, a zone is misread). Imports and sync keep the newer ``updated_at``: a
# record dated years ahead replaced a memory and then won over every later edit of its
# owner, here and on every machine it was synced to.
MAX_CLOCK_AHEAD = timedelta(days=1)
# A date or an age as typed is short (an ISO date with microseconds and a zone: 32
# characters). The parsers refuse text past this bound, whatever the interface; the MCP
# tools also publish it as their arguments' maxLength.
MAX_WHEN_CHARS = 1000


def _refuse_long(text: str, what: str) -> None:
    if len(text) > MAX_WHEN_CHARS:
        raise InvalidInput(
            f"bad {what} {excerpt(text)}: {len(text):,} characters long"
            f" (at most {MAX_WHEN_CHARS:,})"
        )


def parse_duration(text: str) -> timedelta:
    """``90d``, ``12h``, ``2w``, ``30min``, ``3mo`` (30 days each), ``1y`` (365 days) →
    timedelta (at most 1000 years)."""
    _refuse_long(text, "duration")
    match = _DURATION.match(text)
    if not match:
        raise InvalidInput(f"bad duration {excerpt(text)} (use e.g. 90d, 12h, 2w, 30min, 3mo)")
    number, unit = match.group(1), match.group(2).lower()
    if unit == _AMBIGUOUS:
        raise InvalidInput(
            f"ambiguous duration {excerpt(text)}: write {number}min for minutes"
            f" or {number}mo for months"
        )
    seconds = float(number) * _UNITS[unit]
    if not math.isfinite(seconds) or seconds > MAX_DURATION.total_seconds():
        raise InvalidInput(
            f"duration {excerpt(text)} is too long (at most 1000 years, e.g. 365000d)"
        )
    return timedelta(seconds=seconds)


def parse_when(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO-8601 date/time (UTC if no zone) or a duration ago (``7d`` = 7 days ago)."""
    _refuse_long(text, "date")
    value = text.strip()
    if _DURATION.match(value):
        moment = (now or datetime.now(UTC)) - parse_duration(value)
    else:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(
                f"bad date {excerpt(text)}"
                " (use ISO-8601 like 2026-01-31 or 2026-01-31T12:00, or 7d)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    if not in_range(moment):
        raise InvalidInput(f"date {excerpt(text)} is out of range ({RANGE})")
    return moment


def ahead_of_clock(moment: datetime) -> bool:
    """Whether ``moment`` (aware) lies more than :data:`MAX_CLOCK_AHEAD` after now."""
    return moment > datetime.now(UTC) + MAX_CLOCK_AHEAD


def in_range(moment: datetime) -> bool:
    """Whether ``moment`` (aware) lies between :data:`EARLIEST` and :data:`LATEST`."""
    try:
        return EARLIEST <= moment <= LATEST
    except OverflowError:  # an offset that pushes year 1 or 9999 past the calendar
        return False
