"""Numbered, named migrations; one ordered list per backend, each recorded when applied."""

from __future__ import annotations

from collections.abc import Iterable

from memlane.errors import InvalidInput


def refuse_newer(recorded: Iterable[int], known: Iterable[int], where: str) -> None:
    """Refuse a database that records a migration newer than any this memlane knows:
    an older install must neither write into it nor read it as its own."""
    newest_recorded = max(recorded, default=0)
    newest_known = max(known)
    if newest_recorded > newest_known:
        raise InvalidInput(
            f"{where} comes from a newer memlane (schema {newest_recorded} > {newest_known});"
            " upgrade memlane first"
        )
