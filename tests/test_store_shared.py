"""The SQL stores share what they write alike: a statement lives in one place.

``store/common.py`` and ``store/injection_log.py`` hold the statements SQLite and
PostgreSQL run alike; a store that defined one of those methods again would
silently shadow the shared one (and the two copies would drift). Read with
``ast``, so the check needs no PostgreSQL driver.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import ModuleType

import pytest

from memlane.models import MemoryFilter
from memlane.store.common import filter_sql
from memlane.store.dialect import POSTGRES, SQLITE, Dialect
from memlane.store.fields import EMBEDDED_FIELDS
from memlane.store.migrations import postgres as postgres_migrations
from memlane.store.migrations import sqlite as sqlite_migrations

STORE = Path(__file__).resolve().parents[1] / "src" / "memlane" / "store"
# What each store must provide to the shared statements (see store/common.py).
HOOKS = {
    "_query",
    "_execute",
    "_atomic",
    "_database_bytes",
    "_match_total",
    "_newest_matches",
    "_reindex_rows",
}


def methods(path: Path, *classes: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name in classes
        for node in cls.body
        if isinstance(node, ast.FunctionDef)
    }


SHARED = (
    methods(STORE / "common.py", "SqlStatements", "CommonQueries")
    | methods(STORE / "injection_log.py", "InjectionLogQueries")
) - HOOKS


@pytest.mark.parametrize(
    ("module", "cls"), [("sqlite.py", "SQLiteStore"), ("postgres.py", "PostgresStore")]
)
def test_no_store_defines_a_shared_method_again(module: str, cls: str) -> None:
    own = methods(STORE / module, cls)
    assert own >= HOOKS, f"{cls} lacks {sorted(HOOKS - own)}"
    assert not own & SHARED, f"{cls} redefines shared methods {sorted(own & SHARED)}"


def test_the_shared_statements_cover_the_injection_log_and_the_reads() -> None:
    assert {"insert_injection", "list_injections", "find_memory", "stats"} <= SHARED


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES])
def test_a_filter_has_one_parameter_per_placeholder(dialect: Dialect) -> None:
    flt = MemoryFilter(
        projects=("a", "b"),
        session_id="s",
        kinds=("note",),
        types=("fix", "lesson"),
        ids=(1, 2, 3),
        files=("x.py", "y.py"),
    )
    where, params = filter_sql(dialect, flt)
    placeholders = where.count("?") if dialect is SQLITE else where.count("%s")
    assert placeholders == len(params)


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES])
def test_an_empty_list_matches_nothing(dialect: Dialect) -> None:
    assert filter_sql(dialect, MemoryFilter(ids=())) == (dialect.false, [])


@pytest.mark.parametrize("backend", [sqlite_migrations, postgres_migrations])
def test_the_vectors_are_dropped_when_a_field_they_are_computed_from_changes(
    backend: ModuleType,
) -> None:
    # EMBEDDED_FIELDS says it once for Python (missing_embeddings, migrate-store); the
    # shipped migrations say it in SQL, and must say the same.
    statements = [
        part
        for _number, _name, sql in backend.MIGRATIONS
        for part in ([sql] if isinstance(sql, str) else sql)
    ]
    triggers = re.findall(
        r"CREATE TRIGGER embeddings_invalidate AFTER UPDATE OF ([\w, ]+?) ON memories",
        "\n".join(statements),
    )
    assert triggers, "no embeddings_invalidate trigger"
    assert tuple(name.strip() for name in triggers[-1].split(",")) == EMBEDDED_FIELDS
