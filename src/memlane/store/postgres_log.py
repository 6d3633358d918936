"""The injection log on PostgreSQL (the ``InjectionLog`` part of the Store protocol).

A mixin of :class:`~memlane.store.postgres.PostgresStore`: it uses the store's
pool, its ``_atomic`` units of work and its value cleaning. Tables and the
statement-level triggers that keep the log in step with deletions are in
migration 5 (``migrations/postgres.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from memlane.models import Feedback, InjectedMemory, Injection, InjectionTotals, NewInjection

_INJECTION_COLUMNS = (
    "id, session_id, project, event, prompt_number, created_at, mode, relayed, hook_ms,"
    " chars, tokens, prompt, text, cleared"
)


def _escape_like(needle: str) -> str:
    return needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _clean(text: str) -> str:
    """PostgreSQL text cannot hold NUL characters (stored as U+FFFD, as everywhere)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _time(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class PostgresInjectionLog:
    """The injection log's queries; mixed into PostgresStore."""

    def _atomic(self) -> AbstractContextManager[Any]:  # pragma: no cover - the store's
        raise NotImplementedError

    def _query(
        self, query: Any, params: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:  # pragma: no cover - the store's
        raise NotImplementedError

    def _execute(self, query: Any, params: Sequence[Any] = ()) -> int:  # pragma: no cover
        raise NotImplementedError

    def insert_injection(self, new: NewInjection) -> int:
        ids = [m.memory_id for m in new.memories]
        with self._atomic() as conn:
            present = {
                int(row[0])
                for row in conn.execute(
                    "SELECT id FROM memories WHERE id = ANY(%s::bigint[])", (ids,)
                ).fetchall()
            }
            gone = len(present) < len(set(ids))
            row = conn.execute(
                f"INSERT INTO injections ({_INJECTION_COLUMNS.removeprefix('id, ')})"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (
                    _clean(new.session_id),
                    _clean(new.project),
                    new.event,
                    new.prompt_number,
                    _time(new.created_at),
                    new.mode,
                    new.relayed,
                    new.hook_ms,
                    new.chars,
                    new.tokens,
                    "" if gone else _clean(new.prompt),
                    "" if gone else _clean(new.text),
                    gone,
                ),
            ).fetchone()
            assert row is not None
            injection_id = int(row[0])
            kept = [m for m in new.memories if m.memory_id in present]
            if kept:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO injected_memories (injection_id, rank, memory_id, score)"
                        " VALUES (%s, %s, %s, %s)",
                        [(injection_id, m.rank, m.memory_id, m.score) for m in kept],
                    )
        return injection_id

    def count_quiet_hook(self, session_id: str, project: str, event: str, day: str) -> None:
        self._execute(
            "INSERT INTO quiet_hooks (session_id, day, event, project, count)"
            " VALUES (%s, %s, %s, %s, 1) ON CONFLICT (session_id, day, event)"
            " DO UPDATE SET count = quiet_hooks.count + 1",
            (_clean(session_id), day, event, _clean(project)),
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
        if (projects is not None and not projects) or (ids is not None and not ids):
            return []
        clauses: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            clauses.append("session_id = %s")
            params.append(_clean(session_id))
        if projects is not None:
            clauses.append("project = ANY(%s::text[])")
            params.append([_clean(p) for p in projects])
        if memory_id is not None:
            clauses.append(
                "id IN (SELECT injection_id FROM injected_memories WHERE memory_id = %s)"
            )
            params.append(memory_id)
        if event is not None:
            clauses.append("event = %s")
            params.append(event)
        if ids is not None:
            clauses.append("id = ANY(%s::bigint[])")
            params.append(list(ids))
        where = " AND ".join(clauses) or "true"
        rows = self._query(
            f"SELECT {_INJECTION_COLUMNS} FROM injections WHERE {where} ORDER BY id DESC LIMIT %s",
            [*params, limit],
        )
        found = [int(row[0]) for row in rows]
        marks = {
            (int(r[0]), int(r[1])): str(r[2])
            for r in self._query(
                "SELECT injection_id, memory_id, mark FROM feedback"
                " WHERE injection_id = ANY(%s::bigint[]) ORDER BY id",
                (found,),
            )
        }
        items: dict[int, list[InjectedMemory]] = {i: [] for i in found}
        for r in self._query(
            "SELECT injection_id, rank, memory_id, score FROM injected_memories"
            " WHERE injection_id = ANY(%s::bigint[]) ORDER BY injection_id, rank",
            (found,),
        ):
            owner, mid = int(r[0]), int(r[2])
            items[owner].append(InjectedMemory(mid, int(r[1]), r[3], marks.get((owner, mid))))
        return [_row_to_injection(row, tuple(items[int(row[0])])) for row in rows]

    def injection_totals(self, projects: Sequence[str] | None, since: datetime) -> InjectionTotals:
        if projects is not None and not projects:
            return InjectionTotals()
        where, params = ("true", []) if projects is None else _in("project", projects)
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
            "SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, sum(tokens)"
            f" FROM injections WHERE {where} AND created_at >= %s GROUP BY day ORDER BY day",
            [*params, _time(since)],
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
        with self._atomic() as conn:
            if feedback.injection_id is not None:
                conn.execute(
                    "DELETE FROM feedback WHERE injection_id = %s AND memory_id = %s",
                    (feedback.injection_id, feedback.memory_id),
                )
            conn.execute(
                "INSERT INTO feedback (memory_id, injection_id, mark, prompt, created_at)"
                " VALUES (%s, %s, %s, %s, %s)",
                (
                    feedback.memory_id,
                    feedback.injection_id,
                    feedback.mark,
                    _clean(feedback.prompt),
                    _time(feedback.created_at),
                ),
            )

    def feedback_for(self, memory_ids: Sequence[int]) -> list[Feedback]:
        rows = self._query(
            "SELECT memory_id, mark, prompt, created_at, injection_id FROM feedback"
            " WHERE memory_id = ANY(%s::bigint[]) ORDER BY id",
            (list(memory_ids),),
        )
        return [
            Feedback(
                memory_id=int(row[0]),
                mark=str(row[1]),
                prompt=str(row[2]),
                created_at=row[3].astimezone(UTC),
                injection_id=None if row[4] is None else int(row[4]),
            )
            for row in rows
        ]

    def count_injections_before(self, before: datetime) -> int:
        rows = self._query(
            "SELECT count(*) FROM injections WHERE created_at < %s", (_time(before),)
        )
        return int(rows[0][0])

    def prune_injections(self, before: datetime) -> int:
        with self._atomic() as conn:
            removed = conn.execute(
                "DELETE FROM injections WHERE created_at < %s", (_time(before),)
            ).rowcount
            conn.execute("DELETE FROM quiet_hooks WHERE day < %s", (before.strftime("%Y-%m-%d"),))
        return int(removed)

    def injection_text_sizes(self) -> list[tuple[int, int]]:
        rows = self._query(
            "SELECT id, octet_length(prompt) + octet_length(text) FROM injections"
            " WHERE text <> '' OR prompt <> '' ORDER BY id"
        )
        return [(int(row[0]), int(row[1])) for row in rows]

    def clear_injection_text(self, ids: Sequence[int]) -> int:
        if not ids:
            return 0
        return self._execute(
            "UPDATE injections SET prompt = '', text = '', cleared = true"
            " WHERE id = ANY(%s::bigint[])",
            (list(ids),),
        )

    def forget_injection_text(self, needle: str, projects: Sequence[str] | None) -> int:
        if projects is not None and not projects:
            return 0
        pattern = f"%{_escape_like(_clean(needle))}%"
        where, params = ("true", []) if projects is None else _in("project", projects)
        with self._atomic() as conn:
            cleared = conn.execute(
                "UPDATE injections SET prompt = '', text = '', cleared = true"
                " WHERE (prompt ILIKE %s ESCAPE '\\' OR text ILIKE %s ESCAPE '\\')"
                f" AND {where}",
                [pattern, pattern, *params],
            ).rowcount
            conn.execute(
                "DELETE FROM feedback WHERE prompt ILIKE %s ESCAPE '\\' AND memory_id IN"
                f" (SELECT id FROM memories WHERE {where})",
                [pattern, *params],
            )
        return int(cleared)


def _in(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
    return f"{column} = ANY(%s::text[])", [[_clean(v) for v in values]]


def _row_to_injection(row: Sequence[Any], memories: tuple[InjectedMemory, ...]) -> Injection:
    return Injection(
        id=int(row[0]),
        session_id=row[1],
        project=row[2],
        event=row[3],
        prompt_number=row[4],
        created_at=row[5].astimezone(UTC),
        mode=row[6],
        relayed=bool(row[7]),
        hook_ms=float(row[8]),
        chars=int(row[9]),
        tokens=int(row[10]),
        prompt=row[11],
        text=row[12],
        memories=memories,
        cleared=bool(row[13]),
    )
