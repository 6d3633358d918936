"""The injection log (the ``InjectionLog`` part of the Store protocol), written once.

A mixin of both SQL stores, on the same terms as :mod:`memlane.store.common`:
statements with ``%s`` placeholders, the store's
:class:`~memlane.store.dialect.Dialect` fills in what differs. The tables, and
the triggers that keep the log in step with deletions, are each backend's
migration 5 (``migrations/sqlite.py``, ``migrations/postgres.py``).
"""

from __future__ import annotations

from memlane.models import Feedback, InjectedMemory, InjectionTotals
from memlane.store.common import SqlStatements
from memlane.store.dialect import INJECTION_COLUMNS, escape_like

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime
    from typing import Any

    from memlane.models import Injection, NewInjection


class InjectionLogQueries(SqlStatements):
    """The injection log's queries; mixed into SQLiteStore and PostgresStore."""

    def _projects(self, projects: Sequence[str] | None) -> tuple[str, list[Any]]:
        return (
            (self.dialect.true, [])
            if projects is None
            else self.dialect.any_of("project", projects)
        )

    def insert_injection(self, new: NewInjection) -> int:
        d = self.dialect
        ids = [m.memory_id for m in new.memories]
        with self._atomic() as conn:
            present: set[int] = set()
            for where, params in d.in_chunks("id", ids, "bigint"):
                rows = conn.execute(d.sql(f"SELECT id FROM memories WHERE {where}"), params)
                present.update(int(row[0]) for row in rows.fetchall())
            gone = len(present) < len(set(ids))
            injection_id = d.insert_id(
                conn,
                d.sql(
                    f"INSERT INTO injections ({INJECTION_COLUMNS.removeprefix('id, ')})"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                ),
                (
                    d.text(new.session_id),
                    d.text(new.project),
                    new.event,
                    new.prompt_number,
                    d.time(new.created_at),
                    new.mode,
                    d.flag(new.relayed),
                    new.hook_ms,
                    new.chars,
                    new.tokens,
                    "" if gone else d.text(new.prompt),
                    "" if gone else d.text(new.text),
                    d.flag(gone),
                ),
            )
            d.execute_many(
                conn,
                d.sql(
                    "INSERT INTO injected_memories (injection_id, rank, memory_id, score)"
                    " VALUES (%s, %s, %s, %s)"
                ),
                [
                    (injection_id, m.rank, m.memory_id, m.score)
                    for m in new.memories
                    if m.memory_id in present
                ],
            )
        return injection_id

    def count_quiet_hook(self, session_id: str, project: str, event: str, day: str) -> None:
        d = self.dialect
        self._execute(
            d.sql(
                "INSERT INTO quiet_hooks (session_id, day, event, project, count)"
                " VALUES (%s, %s, %s, %s, 1) ON CONFLICT (session_id, day, event)"
                " DO UPDATE SET count = quiet_hooks.count + 1"
            ),
            (d.text(session_id), day, event, d.text(project)),
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
        d = self.dialect
        clauses: list[str] = []
        params: list[Any] = []
        if session_id is not None:
            clauses.append("session_id = %s")
            params.append(d.text(session_id))
        if projects is not None:
            where, values = self._projects(projects)
            clauses.append(where)
            params.extend(values)
        if memory_id is not None:
            clauses.append(
                "id IN (SELECT injection_id FROM injected_memories WHERE memory_id = %s)"
            )
            params.append(memory_id)
        if event is not None:
            clauses.append("event = %s")
            params.append(event)
        if ids is not None:
            where, values = d.any_of("id", ids, "bigint")
            clauses.append(where)
            params.extend(values)
        rows = self._rows(
            f"SELECT {INJECTION_COLUMNS} FROM injections WHERE {' AND '.join(clauses) or d.true}"
            " ORDER BY id DESC LIMIT %s",
            [*params, limit],
        )
        found = [int(row[0]) for row in rows]
        items: dict[int, list[InjectedMemory]] = {i: [] for i in found}
        marks: dict[tuple[int, int], str] = {}
        for where, values in d.in_chunks("injection_id", found, "bigint"):
            for r in self._rows(
                f"SELECT injection_id, memory_id, mark FROM feedback WHERE {where} ORDER BY id",
                values,
            ):
                marks[int(r[0]), int(r[1])] = str(r[2])
            for r in self._rows(
                "SELECT injection_id, rank, memory_id, score FROM injected_memories"
                f" WHERE {where} ORDER BY injection_id, rank",
                values,
            ):
                owner, mid = int(r[0]), int(r[2])
                items[owner].append(InjectedMemory(mid, int(r[1]), r[3], marks.get((owner, mid))))
        return [d.injection(row, tuple(items[int(row[0])])) for row in rows]

    def injection_totals(self, projects: Sequence[str] | None, since: datetime) -> InjectionTotals:
        if projects is not None and not projects:
            return InjectionTotals()
        d = self.dialect
        where, params = self._projects(projects)
        session_tokens: dict[str, int] = {}
        injected: dict[str, int] = {}
        for row in self._rows(
            f"SELECT session_id, event, count(*), sum(tokens) FROM injections WHERE {where}"
            " GROUP BY session_id, event",
            params,
        ):
            sid = str(row[0])
            session_tokens[sid] = session_tokens.get(sid, 0) + int(row[3])
            injected[str(row[1])] = injected.get(str(row[1]), 0) + int(row[2])
        quiet: dict[str, int] = {}
        for row in self._rows(
            f"SELECT session_id, event, sum(count) FROM quiet_hooks WHERE {where}"
            " GROUP BY session_id, event",
            params,
        ):
            session_tokens.setdefault(str(row[0]), 0)
            quiet[str(row[1])] = quiet.get(str(row[1]), 0) + int(row[2])
        days = self._rows(
            f"SELECT {d.day('created_at')} AS day, sum(tokens) FROM injections"
            f" WHERE {where} AND created_at >= %s GROUP BY day ORDER BY day",
            [*params, d.time(since)],
        )
        marks = self._rows(
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
        d = self.dialect
        with self._atomic() as conn:
            if feedback.injection_id is not None:
                conn.execute(
                    d.sql("DELETE FROM feedback WHERE injection_id = %s AND memory_id = %s"),
                    (feedback.injection_id, feedback.memory_id),
                )
            conn.execute(
                d.sql(
                    "INSERT INTO feedback (memory_id, injection_id, mark, prompt, created_at)"
                    " VALUES (%s, %s, %s, %s, %s)"
                ),
                (
                    feedback.memory_id,
                    feedback.injection_id,
                    feedback.mark,
                    d.text(feedback.prompt),
                    d.time(feedback.created_at),
                ),
            )

    def feedback_for(self, memory_ids: Sequence[int]) -> list[Feedback]:
        d = self.dialect
        found: list[Feedback] = []
        for where, params in d.in_chunks("memory_id", memory_ids, "bigint"):
            rows = self._rows(
                "SELECT memory_id, mark, prompt, created_at, injection_id FROM feedback"
                f" WHERE {where} ORDER BY id",
                params,
            )
            found.extend(
                Feedback(
                    memory_id=int(row[0]),
                    mark=str(row[1]),
                    prompt=str(row[2]),
                    created_at=d.read_time(row[3]),
                    injection_id=None if row[4] is None else int(row[4]),
                )
                for row in rows
            )
        return found

    def feedback_prompts(self) -> list[str]:
        return [str(row[0]) for row in self._rows("SELECT DISTINCT prompt FROM feedback")]

    def delete_feedback(self, prompts: Sequence[str]) -> int:
        d = self.dialect
        total = 0
        with self._atomic() as conn:
            for where, params in d.in_chunks("prompt", [d.text(p) for p in prompts]):
                total += conn.execute(d.sql(f"DELETE FROM feedback WHERE {where}"), params).rowcount
        return total

    def count_injections_before(self, before: datetime) -> int:
        rows = self._rows(
            "SELECT count(*) FROM injections WHERE created_at < %s", (self.dialect.time(before),)
        )
        return int(rows[0][0])

    def prune_injections(self, before: datetime) -> int:
        d = self.dialect
        with self._atomic() as conn:
            removed = conn.execute(
                d.sql("DELETE FROM injections WHERE created_at < %s"), (d.time(before),)
            ).rowcount
            conn.execute(
                d.sql("DELETE FROM quiet_hooks WHERE day < %s"), (before.strftime("%Y-%m-%d"),)
            )
        return int(removed)

    def injection_text_sizes(self) -> list[tuple[int, int]]:
        d = self.dialect
        rows = self._rows(
            f"SELECT id, {d.byte_length('prompt')} + {d.byte_length('text')} FROM injections"
            " WHERE text <> '' OR prompt <> '' ORDER BY id"
        )
        return [(int(row[0]), int(row[1])) for row in rows]

    def clear_injection_text(self, ids: Sequence[int]) -> int:
        d = self.dialect
        total = 0
        with self._atomic() as conn:
            for where, params in d.in_chunks("id", ids, "bigint"):
                total += conn.execute(
                    d.sql(
                        f"UPDATE injections SET prompt = '', text = '', cleared = {d.true}"
                        f" WHERE {where}"
                    ),
                    params,
                ).rowcount
        return total

    def forget_injection_text(self, needle: str, projects: Sequence[str] | None) -> int:
        if projects is not None and not projects:
            return 0
        d = self.dialect
        pattern = f"%{escape_like(d.text(needle))}%"
        where, params = self._projects(projects)
        with self._atomic() as conn:
            cleared = conn.execute(
                d.sql(
                    f"UPDATE injections SET prompt = '', text = '', cleared = {d.true}"
                    f" WHERE (prompt {d.like} %s ESCAPE '\\' OR text {d.like} %s ESCAPE '\\')"
                    f" AND {where}"
                ),
                [pattern, pattern, *params],
            ).rowcount
            conn.execute(
                d.sql(
                    f"DELETE FROM feedback WHERE prompt {d.like} %s ESCAPE '\\' AND memory_id IN"
                    f" (SELECT id FROM memories WHERE {where})"
                ),
                [pattern, *params],
            )
        return int(cleared)
