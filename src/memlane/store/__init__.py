"""Storage behind a narrow protocol: SQLite by default, PostgreSQL for teams."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.store.base import Store


def open_store(target: str) -> Store:
    """Open the store at ``target``: a file path, or a ``postgresql://`` URL."""
    if target.startswith(("postgresql://", "postgres://")):
        from memlane.store.postgres import PostgresStore

        return PostgresStore(target)
    from memlane.store.sqlite import SQLiteStore

    return SQLiteStore(target)
