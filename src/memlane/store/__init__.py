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


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str) -> bool:
    """Whether the database ``target`` is a PostgreSQL URL (else a SQLite file's path)."""
    return target.startswith(POSTGRES_SCHEMES)


def open_store(target: str, *, create_dir: bool = False) -> Store:
    """Open the store at ``target``: a file path, or a ``postgresql://`` URL.

    A file's missing parent directory is created only with ``create_dir`` (the
    default location, or ``--create``); otherwise it is an error. A libpq keyword
    string is refused (:func:`check_target`).
    """
    check_target(target)
    if is_postgres_url(target):
        from memlane.store.postgres import PostgresStore

        return PostgresStore(target)
    from memlane.store.sqlite import SQLiteStore

    return SQLiteStore(target, create_dir=create_dir)


def check_target(target: str) -> None:
    """Refuse a libpq keyword string (``host=… password=… dbname=…``) as a database target,
    and a name no file can have (:func:`memlane.arguments.path`).

    Taken for a path, it became a SQLite file named after the connection string, password
    included, in the working directory. It is refused before anything is created; the
    message does not repeat it.
    """
    from memlane.arguments import path
    from memlane.config import is_libpq_keywords

    path("the database path", target)  # not blank (`--db ' '` made a file named " "), no NUL
    if is_libpq_keywords(target):
        from memlane.errors import InvalidInput

        raise InvalidInput(
            "the database target looks like a libpq keyword connection string"
            " (host=… dbname=…), which memlane does not read; name the database by a"
            " postgresql:// URL instead (postgresql://USER:PASSWORD@HOST:5432/DBNAME)"
        )
