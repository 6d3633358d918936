"""The Store contract suite (tests/store_contract.py) on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memlane.store.base import Store
from memlane.store.sqlite import SQLiteStore
from tests.store_contract import StoreContract


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """Opens a store on this test's database (a SQLite file, or a PostgreSQL schema)."""
    if request.param == "sqlite":
        path = tmp_path / "contract.db"
        return lambda: SQLiteStore(path)
    from memlane.store.postgres import PostgresStore

    dsn = request.getfixturevalue("pg_dsn")
    return lambda: PostgresStore(dsn, pool_size=2)


@pytest.fixture
def store(reopen: Callable[[], Store]) -> Iterator[Store]:
    opened = reopen()
    yield opened
    opened.close()


class TestStoreContract(StoreContract):
    """Every contract test, once per backend."""
