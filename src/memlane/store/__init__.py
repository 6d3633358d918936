"""Storage behind a narrow protocol: SQLite by default, PostgreSQL for teams."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.config import Settings
    from memlane.store.base import Store


def open_configured(settings: Settings) -> Store:
    """The store ``settings`` name. Only the default location (no ``--db``, no
    ``MEMLANE_DB``) has its directory created on first use: a typo in an explicit
    path is an error, not a second, empty memory."""
    return open_store(settings.database, create_dir=settings.db_target is None)


def open_store(target: str, *, create_dir: bool = False) -> Store:
    """Open the store at ``target``: a file path, or a ``postgresql://`` URL.

    A file's missing parent directory is created only with ``create_dir`` (the
    default location, or ``--create``); otherwise it is an error.
    """
    if target.startswith(("postgresql://", "postgres://")):
        from memlane.store.postgres import PostgresStore

        return PostgresStore(target)
    from memlane.store.sqlite import SQLiteStore

    return SQLiteStore(target, create_dir=create_dir)
