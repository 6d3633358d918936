"""Parse the times people type: ISO-8601 dates and durations like ``90d``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memlane.errors import InvalidInput

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w|y)\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31_536_000}


def parse_duration(text: str) -> timedelta:
    """``90d``, ``12h``, ``2w``, ``30min`` → timedelta."""
    match = _DURATION.match(text)
    if not match:
        raise InvalidInput(f"bad duration {text!r} (use e.g. 90d, 12h, 2w, 30min)")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_when(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO-8601 date/time (UTC if no zone) or a duration ago (``7d`` = 7 days ago)."""
    value = text.strip()
    if _DURATION.match(value):
        return (now or datetime.now(UTC)) - parse_duration(value)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"bad date {text!r} (use ISO-8601 like 2026-01-31 or 2026-01-31T12:00, or 7d)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
