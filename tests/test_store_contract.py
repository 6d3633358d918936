"""The Store contract suite (tests/store_contract.py) on SQLite and on PostgreSQL."""

from __future__ import annotations

from tests.store_contract import StoreContract


class TestStoreContract(StoreContract):
    """Every contract test, once per backend."""
