"""The injection log on SQLite (the ``InjectionLog`` part of the Store protocol).

A mixin of :class:`~memlane.store.sqlite.SQLiteStore`: it uses the store's
connection, lock and transactions. Tables and the triggers that keep the log
in step with deletions are in migration 5 (``migrations/sqlite.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from memlane.models import (
    Feedback,
    InjectedMemory,
    Injection,
    InjectionTotals,
    NewInjection,
    from_epoch,
    to_epoch,
)

_INJECTION_COLUMNS = (
    "id, session_id, project, event, prompt_number, created_at, mode, relayed, hook_ms,"
    " chars, tokens, prompt, text, cleared"
)


def _escape_like(needle: str) -> str:
    return needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _marks(rows: Sequence[sqlite3.Row]) -> dict[tuple[int, int], str]:
    return {(int(r["injection_id"]), int(r["memory_id"])): str(r["mark"]) for r in rows}


class SQLiteInjectionLog:
    """The injection log's queries; mixed into SQLiteStore."""

    _conn: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[None]:  # pragma: no cover - the store's
        raise NotImplementedError

    def _query(
        self, sql: str, params: Sequence[Any] = ()
    ) -> list[sqlite3.Row]:  # pragma: no cover - the store's
        raise NotImplementedError

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:  # pragma: no cover
        raise NotImplementedError

    def insert_injection(self, new: NewInjection) -> int:
        with self.transaction():
            ids = [m.memory_id for m in new.memories]
            present = {
                int(row[0])
                for part in _chunks(ids)
                for row in self._conn.execute(
                    f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(part))})", part
                )
            }
            gone = len(present) < len(set(ids))
            cursor = self._conn.execute(
                f"INSERT INTO injections ({_INJECTION_COLUMNS.removeprefix('id, ')})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.session_id,
                    new.project,
                    new.event,
                    new.prompt_number,
                    to_epoch(new.created_at),
                    new.mode,
                    int(new.relayed),
                    new.hook_ms,
                    new.chars,
                    new.tokens,
                    "" if gone else new.prompt,
                    "" if gone else new.text,
                    int(gone),
                ),
            )
            assert cursor.lastrowid is not None
            injection_id = int(cursor.lastrowid)
            self._conn.executemany(
                "INSERT INTO injected_memories (injection_id, rank, memory_id, score)"
                " VALUES (?, ?, ?, ?)",
                [
                    (injection_id, m.rank, m.memory_id, m.score)
                    for m in new.memories
                    if m.memory_id in present
                ],
            )
        return injection_id

    def count_quiet_hook(self, session_id: str, project: str, event: str, day: str) -> None:
        self._write(
            "INSERT INTO quiet_hooks (session_id, day, event, project, count)"
            " VALUES (?, ?, ?, ?, 1)"
            " ON CONFLICT(session_id, day, event) DO UPDATE SET count = count + 1",
            (session_id, day, event, project),
        )

    def list_injections(
        self,
        *,
        session_id: str | None = None,
        projects: Sequence[str] | None = None,
        memory_id: int | None = None,
        event: str | None = None,
        ids: Sequence[int] | None = None,
        limit: int = 50,
    ) -> list[Injection]:
        clauses: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if projects is not None:
            clauses.append(f"project IN ({','.join('?' * len(projects))})")
            params.extend(projects)
        if memory_id is not None:
            clauses.append("id IN (SELECT injection_id FROM injected_memories WHERE memory_id = ?)")
            params.append(memory_id)
        if event is not None:
            clauses.append("event = ?")
            params.append(event)
        if ids is not None:
            clauses.append(f"id IN ({','.join('?' * len(ids))})")
            params.extend(ids)
        where = " AND ".join(clauses) or "1"
        if (projects is not None and not projects) or (ids is not None and not ids):
            return []
        rows = self._query(
            f"SELECT {_INJECTION_COLUMNS} FROM injections WHERE {where} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        found = [int(row["id"]) for row in rows]
        items: dict[int, list[InjectedMemory]] = {i: [] for i in found}
        marks: dict[tuple[int, int], str] = {}
        for part in _chunks(found):
            marks.update(
                _marks(
                    self._query(
                        "SELECT injection_id, memory_id, mark FROM feedback"
                        f" WHERE injection_id IN ({','.join('?' * len(part))}) ORDER BY id",
                        part,
                    )
                )
            )
            for row in self._query(
                "SELECT injection_id, rank, memory_id, score FROM injected_memories"
                f" WHERE injection_id IN ({','.join('?' * len(part))})"
                " ORDER BY injection_id, rank",
                part,
            ):
                owner, mid = int(row["injection_id"]), int(row["memory_id"])
                items[owner].append(
                    InjectedMemory(mid, int(row["rank"]), row["score"], marks.get((owner, mid)))
                )
        return [_row_to_injection(row, tuple(items[int(row["id"])])) for row in rows]

    def injection_totals(self, projects: Sequence[str] | None, since: datetime) -> InjectionTotals:
        if projects is not None and not projects:
            return InjectionTotals()
        where, params = ("1", []) if projects is None else _in("project", projects)
        session_tokens: dict[str, int] = {}
        injected: dict[str, int] = {}
        for row in self._query(
            f"SELECT session_id, event, count(*), sum(tokens) FROM injections WHERE {where}"
            " GROUP BY session_id, event",
            params,
        ):
            sid = str(row[0])
            session_tokens[sid] = session_tokens.get(sid, 0) + int(row[3])
            injected[str(row[1])] = injected.get(str(row[1]), 0) + int(row[2])
        quiet: dict[str, int] = {}
        for row in self._query(
            f"SELECT session_id, event, sum(count) FROM quiet_hooks WHERE {where}"
            " GROUP BY session_id, event",
            params,
        ):
            session_tokens.setdefault(str(row[0]), 0)
            quiet[str(row[1])] = quiet.get(str(row[1]), 0) + int(row[2])
        days = self._query(
            "SELECT strftime('%Y-%m-%d', created_at, 'unixepoch'), sum(tokens) FROM injections"
            f" WHERE {where} AND created_at >= ? GROUP BY 1 ORDER BY 1",
            [*params, to_epoch(since)],
        )
        marks = self._query(
            "SELECT f.mark, count(*) FROM feedback f JOIN memories m ON m.id = f.memory_id"
            f" WHERE {where.replace('project', 'm.project')} GROUP BY f.mark",
            params,
        )
        return InjectionTotals(
            session_tokens=session_tokens,
            injected=injected,
            quiet=quiet,
            day_tokens={str(row[0]): int(row[1]) for row in days},
            marks={str(row[0]): int(row[1]) for row in marks},
        )

    def put_feedback(self, feedback: Feedback) -> None:
        with self.transaction():
            if feedback.injection_id is not None:
                self._conn.execute(
                    "DELETE FROM feedback WHERE injection_id = ? AND memory_id = ?",
                    (feedback.injection_id, feedback.memory_id),
                )
            self._conn.execute(
                "INSERT INTO feedback (memory_id, injection_id, mark, prompt, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    feedback.memory_id,
                    feedback.injection_id,
                    feedback.mark,
                    feedback.prompt,
                    to_epoch(feedback.created_at),
                ),
            )

    def feedback_for(self, memory_ids: Sequence[int]) -> list[Feedback]:
        found: list[Feedback] = []
        for part in _chunks(list(memory_ids)):
            rows = self._query(
                "SELECT memory_id, mark, prompt, created_at, injection_id FROM feedback"
                f" WHERE memory_id IN ({','.join('?' * len(part))}) ORDER BY id",
                part,
            )
            found.extend(
                Feedback(
                    memory_id=int(row[0]),
                    mark=str(row[1]),
                    prompt=str(row[2]),
                    created_at=from_epoch(row[3]),
                    injection_id=None if row[4] is None else int(row[4]),
                )
                for row in rows
            )
        return found

    def count_injections_before(self, before: datetime) -> int:
        rows = self._query(
            "SELECT count(*) FROM injections WHERE created_at < ?", (to_epoch(before),)
        )
        return int(rows[0][0])

    def prune_injections(self, before: datetime) -> int:
        with self.transaction():
            removed = self._conn.execute(
                "DELETE FROM injections WHERE created_at < ?", (to_epoch(before),)
            ).rowcount
            self._conn.execute(
                "DELETE FROM quiet_hooks WHERE day < ?", (before.strftime("%Y-%m-%d"),)
            )
        return int(removed)

    def injection_text_sizes(self) -> list[tuple[int, int]]:
        rows = self._query(
            "SELECT id, length(CAST(prompt AS BLOB)) + length(CAST(text AS BLOB)) FROM injections"
            " WHERE text != '' OR prompt != '' ORDER BY id"
        )
        return [(int(row[0]), int(row[1])) for row in rows]

    def clear_injection_text(self, ids: Sequence[int]) -> int:
        total = 0
        with self.transaction():
            for part in _chunks(list(ids)):
                total += self._conn.execute(
                    "UPDATE injections SET prompt = '', text = '', cleared = 1"
                    f" WHERE id IN ({','.join('?' * len(part))})",
                    part,
                ).rowcount
        return total

    def forget_injection_text(self, needle: str, projects: Sequence[str] | None) -> int:
        if projects is not None and not projects:
            return 0
        pattern = f"%{_escape_like(needle)}%"
        where, params = ("1", []) if projects is None else _in("project", projects)
        with self.transaction():
            cleared = self._conn.execute(
                "UPDATE injections SET prompt = '', text = '', cleared = 1"
                f" WHERE (prompt LIKE ? ESCAPE '\\' OR text LIKE ? ESCAPE '\\') AND {where}",
                [pattern, pattern, *params],
            ).rowcount
            self._conn.execute(
                "DELETE FROM feedback WHERE prompt LIKE ? ESCAPE '\\' AND memory_id IN"
                f" (SELECT id FROM memories WHERE {where})",
                [pattern, *params],
            )
        return int(cleared)


def _in(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
    return f"{column} IN ({','.join('?' * len(values))})", list(values)


def _chunks(values: list[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _row_to_injection(row: sqlite3.Row, memories: tuple[InjectedMemory, ...]) -> Injection:
    return Injection(
        id=int(row["id"]),
        session_id=row["session_id"],
        project=row["project"],
        event=row["event"],
        prompt_number=row["prompt_number"],
        created_at=from_epoch(row["created_at"]),
        mode=row["mode"],
        relayed=bool(row["relayed"]),
        hook_ms=float(row["hook_ms"]),
        chars=int(row["chars"]),
        tokens=int(row["tokens"]),
        prompt=row["prompt"],
        text=row["text"],
        memories=memories,
        cleared=bool(row["cleared"]),
    )
