"""Import a claude-mem database (github.com/thedotmack/claude-mem).

claude-mem keeps one SQLite file (default ``~/.claude-mem/claude-mem.db``):

* ``sdk_sessions`` — one row per agent session: ``content_session_id`` (the
  agent's own session id; ``claude_session_id`` in old versions),
  ``memory_session_id`` (``sdk_session_id`` in old versions), project,
  status ``active|completed|failed``, start/completion times;
* ``observations`` — LLM-extracted knowledge: type (``decision``, ``bugfix``,
  ``feature``, ``refactor``, ``change``, ``discovery``…), title, subtitle,
  narrative, facts and concepts (JSON arrays), files read/modified;
* ``session_summaries`` — request, investigated, learned, completed,
  next_steps, notes, files;
* ``user_prompts`` — the prompts, numbered per session;
* ``directives`` (newer versions) — durable rules the user gave.

Mapping: a session keeps the agent's session id (the one memlane's own hooks
see); observations become knowledge of the same type (unknown types become
``discovery``, the original type kept in metadata); summaries become summary
memories with the structured fields memlane reads (``is_auto_generated`` is
true: no person wrote them); prompts become prompt memories; active
directives become ``constraint`` knowledge. Times come from the
``*_epoch`` columns (milliseconds) or the ISO text.

Projects: every row keeps its claude-mem project unless ``into`` names the
memlane project to put it in; ``project`` imports only the rows of that one
claude-mem project (a prompt belongs to its session's project; a row without
one, e.g. a global directive, to the project ``claude-mem``). Rows left out
are not marked seen, so a later run can import them. The report counts rows
per claude-mem project (``projects``): what a dry run shows before you choose.

Repeatable: every row is keyed ``table:id:epoch`` (its ``source_id`` and a
``seen`` key), so a second run skips what the first imported — even rows you
deleted from memlane since. The source database is opened read-only; columns
are looked up by name so older and newer schemas both work.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import feedback, memories
from memlane.errors import InvalidInput, StoreError
from memlane.interop import decode
from memlane.interop.jsonl import parse_time
from memlane.interop.report import InteropReport, Tally
from memlane.memories import Draft
from memlane.models import CLAUDE_MEM_SOURCE, KNOWLEDGE_TYPES, Session
from memlane.privacy import excerpt

if TYPE_CHECKING:
    from memlane.core import Core

SOURCE = CLAUDE_MEM_SOURCE
SEEN_NAMESPACE = "claude-mem"
DEFAULT_PATH = Path("~/.claude-mem/claude-mem.db")
BATCH = 500
# The tables whose rows become memories (sdk_sessions become sessions).
ITEM_TABLES = ("observations", "session_summaries", "user_prompts", "directives")
FALLBACK_PROJECT = "claude-mem"
_SESSION_STATUS = {"active": "active", "completed": "ended", "failed": "ended"}


@dataclass(frozen=True, slots=True)
class Item:
    """One row ready to save."""

    table: str
    row_id: int
    key: str
    content: str
    origin: str  # the claude-mem project
    project: str  # the memlane project it goes to
    kind: str
    type: str
    created_at: datetime
    title: str = ""
    session_id: str | None = None
    files: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def draft(self) -> Draft:
        """What the write path stores for this row (keyed by ``key``, so found again)."""
        return Draft(
            self.content,
            project=self.project,
            type=self.type,
            kind=self.kind,
            title=self.title or None,
            session_id=self.session_id,
            source=SOURCE,
            source_id=self.key,
            created_at=self.created_at,
            files=self.files,
            tags=self.tags,
            metadata=self.metadata,
        )


def _epoch(value: Any) -> datetime | None:
    """An ``*_epoch`` column as a time; None when it holds none; InvalidInput when it lies
    outside the years memlane stores or ahead of this clock (:func:`parse_time`)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        # claude-mem writes Date.now() (milliseconds); accept seconds too.
        return parse_time(value / 1000 if value > 1e11 else value, "time")
    return None


def _count(value: Any, what: str) -> int:
    """A counter column (``prompt_counter``): a whole number, 0 when empty."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InvalidInput(f"{what} {excerpt(value)} is not a count")


def _when(row: dict[str, Any], prefix: str) -> datetime | None:
    moment = _epoch(row.get(f"{prefix}_epoch"))
    if moment is not None:
        return moment
    text = row.get(prefix)
    if isinstance(text, str) and text.strip():
        try:
            datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            return None  # not a time: the column is left out, as claude-mem's own reader does
        return parse_time(text, "time")
    return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _json_list(value: Any) -> list[str]:
    """A JSON array column (facts, concepts, files) as strings; plain text as one item."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped:
            return []
        try:
            decoded = decode.loads(stripped)
        except json.JSONDecodeError:
            return [stripped]
        value = decoded
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    return [str(value)]


class Source:
    """A claude-mem database opened read-only, with its column names looked up."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            self.conn.row_factory = sqlite3.Row
            # A text that is not UTF-8 (a damaged or crafted file) keeps its row readable.
            self.conn.text_factory = lambda data: data.decode("utf-8", "replace")
            self.tables = {
                row[0]
                for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            raise InvalidInput(f"{path} is not a readable SQLite database ({exc})") from None
        if not self.tables & {"observations", "session_summaries", "user_prompts"}:
            raise InvalidInput(
                f"{path} has no claude-mem tables (observations, session_summaries,"
                " user_prompts); is it a claude-mem database?"
            )

    def close(self) -> None:
        self.conn.close()

    def columns(self, table: str) -> set[str]:
        """The columns ``table`` stores: ``table_info`` leaves out generated ones, which
        are never read (a virtual one runs the file's own SQL on every read)."""
        if table not in self.tables:
            return set()
        # PRAGMA takes no parameters; the name comes from sqlite_master, not the user.
        return {row[1] for row in self.conn.execute(f'PRAGMA table_info("{table}")')}

    def pick(self, table: str, *names: str) -> str | None:
        have = self.columns(table)
        return next((name for name in names if name in have), None)

    def projects(self) -> set[str]:
        """The project names the database's tables mention."""
        found: set[str] = set()
        for table in ("sdk_sessions", "observations", "session_summaries", "directives"):
            if "project" in self.columns(table):
                # The table name is one of ours, checked against sqlite_master.
                query = f'SELECT DISTINCT project FROM "{table}" WHERE project IS NOT NULL'
                found.update(_text(row[0]) for row in self.conn.execute(query))
        return {name for name in found if name}

    def count(self, table: str) -> int:
        """Rows in ``table`` (0 when this database has no such table)."""
        if table not in self.tables:
            return 0
        return int(self.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])

    def rows(self, table: str) -> Iterator[dict[str, Any]]:
        stored = sorted(self.columns(table))
        if not stored:
            return
        if "id" not in stored:
            raise InvalidInput(f"{self.path}: {table} has no id column; is it claude-mem's?")
        # Column names come from the file: quoted, their quotes doubled.
        names = ", ".join('"' + name.replace('"', '""') + '"' for name in stored)
        cursor = self.conn.execute(f'SELECT {names} FROM "{table}" ORDER BY id')
        while True:
            batch = cursor.fetchmany(BATCH)
            if not batch:
                return
            for row in batch:
                yield dict(row)


class ClaudeMemImport:
    """One import run; see the module docstring."""

    def __init__(self, core: Core, source: Source, *, only: str | None, into: str | None) -> None:
        self.core = core
        self.source = source
        self.only = only
        self.into = into
        self.tally = Tally()
        self.rows_read = 0  # source rows :meth:`items` went through
        self.session_ids: dict[str, str] = {}  # memory_session_id → agent session id
        self.session_projects: dict[str, str] = {}  # agent session id → project

    # -- sessions -------------------------------------------------------------

    def sessions(self) -> list[Session]:
        src = self.source
        content_col = src.pick("sdk_sessions", "content_session_id", "claude_session_id")
        memory_col = src.pick("sdk_sessions", "memory_session_id", "sdk_session_id")
        found: list[Session] = []
        for row in src.rows("sdk_sessions"):
            try:
                session = self._session(row, content_col, memory_col)
            except InvalidInput as exc:
                self.tally.error(int(row["id"]), f"sdk_sessions row {row['id']}: {exc}")
                continue
            if session is not None:
                found.append(session)
        return found

    def _session(
        self, row: dict[str, Any], content_col: str | None, memory_col: str | None
    ) -> Session | None:
        """The session of one ``sdk_sessions`` row (None: not in this run's project);
        InvalidInput names what is wrong with it."""
        agent_id = _text(row.get(content_col or "")) or _text(row.get(memory_col or ""))
        if not agent_id:
            raise InvalidInput("no session id")
        if memory_col and _text(row.get(memory_col)):
            self.session_ids[_text(row[memory_col])] = agent_id
        origin = _text(row.get("project")) or FALLBACK_PROJECT
        self.session_projects[agent_id] = origin
        if not self.selected(origin):
            return None
        started = _when(row, "started_at")
        if started is None:
            raise InvalidInput("no start time")
        ended = _when(row, "completed_at")
        prompt_count = _count(row.get("prompt_counter"), "prompt_counter")
        status = _SESSION_STATUS.get(_text(row.get("status")), "ended")
        return Session(
            id=agent_id,
            project=self.into or origin,
            agent=_text(row.get("platform_source")) or "claude-code",
            status=status,
            started_at=started,
            ended_at=ended if status != "active" else None,
            last_activity_at=max(started, ended) if ended else started,
            prompt_count=prompt_count,
        )

    # -- rows → items ---------------------------------------------------------

    def _session_of(self, row: dict[str, Any], table: str) -> str | None:
        col = self.source.pick(table, "memory_session_id", "sdk_session_id")
        raw = _text(row.get(col or ""))
        if raw:
            return self.session_ids.get(raw, raw)
        col = self.source.pick(table, "content_session_id", "claude_session_id")
        return _text(row.get(col or "")) or None

    def selected(self, origin: str) -> bool:
        """Whether rows of the claude-mem project ``origin`` are imported in this run."""
        return self.only is None or origin == self.only

    def _origin(self, row: dict[str, Any], session_id: str | None) -> str:
        """The claude-mem project of a row (its own column, else its session's)."""
        return (
            _text(row.get("project"))
            or (self.session_projects.get(session_id or "") or "")
            or FALLBACK_PROJECT
        )

    def _key(self, table: str, row: dict[str, Any]) -> str:
        return f"{table}:{row['id']}:{row.get('created_at_epoch') or row.get('created_at') or ''}"

    def observation(self, row: dict[str, Any]) -> Item:
        kind_type = _text(row.get("type")).lower() or "discovery"
        type_ = kind_type if kind_type in KNOWLEDGE_TYPES else "discovery"
        facts = _json_list(row.get("facts"))
        concepts = _json_list(row.get("concepts"))
        files_read = _json_list(row.get("files_read"))
        files_modified = _json_list(row.get("files_modified"))
        title = _text(row.get("title"))
        subtitle = _text(row.get("subtitle"))
        parts = [p for p in (subtitle, _text(row.get("narrative")), _text(row.get("text"))) if p]
        if facts:
            parts.append("\n".join(f"- {fact}" for fact in facts))
        content = "\n\n".join(parts) or title
        session_id = self._session_of(row, "observations")
        origin = self._origin(row, session_id)
        return Item(
            table="observations",
            row_id=int(row["id"]),
            key=self._key("observations", row),
            content=content,
            origin=origin,
            project=self.into or origin,
            kind="knowledge",
            type=type_,
            title=title,
            created_at=self._created(row),
            session_id=session_id,
            files=tuple(dict.fromkeys(files_modified + files_read)),
            tags=tuple(concepts),
            metadata={
                "claude_mem": {
                    "id": row["id"],
                    "type": kind_type,
                    "subtitle": subtitle,
                    "facts": facts,
                    "concepts": concepts,
                    "files_read": files_read,
                    "files_modified": files_modified,
                    "prompt_number": row.get("prompt_number"),
                }
            },
        )

    def summary(self, row: dict[str, Any]) -> Item:
        # Each field filtered as written, before a label goes in front of it or the title
        # cuts it (a token cut at 80 characters has no format left to find).
        fields = {
            name: self.core.scrub(_text(row.get(name)))
            for name in ("request", "investigated", "learned", "completed", "next_steps", "notes")
        }
        files = _json_list(row.get("files_edited")) + _json_list(row.get("files_read"))
        labels = {
            "request": "Request",
            "investigated": "Investigated",
            "learned": "Learned",
            "completed": "Completed",
            "next_steps": "Next steps",
            "notes": "Notes",
        }
        content = "\n".join(f"{labels[k]}: {v}" for k, v in fields.items() if v)
        session_id = self._session_of(row, "session_summaries")
        origin = self._origin(row, session_id)
        return Item(
            table="session_summaries",
            row_id=int(row["id"]),
            key=self._key("session_summaries", row),
            content=content,
            origin=origin,
            project=self.into or origin,
            kind="summary",
            type="summary",
            title=f"Session summary: {fields['request'][:80]}"
            if fields["request"]
            else "Session summary",
            created_at=self._created(row),
            session_id=session_id,
            files=tuple(dict.fromkeys(files)),
            metadata={
                "summary": {
                    "request": fields["request"],
                    "completed": [fields["completed"]] if fields["completed"] else [],
                    "learned": [fields["learned"]] if fields["learned"] else [],
                    "next_steps": [fields["next_steps"]] if fields["next_steps"] else [],
                    "files": list(dict.fromkeys(files)),
                    # Written by claude-mem's model, not by a person.
                    "is_auto_generated": True,
                    "generated_by": SOURCE,
                    "investigated": fields["investigated"],
                    "notes": fields["notes"],
                },
                "claude_mem": {"id": row["id"], "prompt_number": row.get("prompt_number")},
            },
        )

    def prompt(self, row: dict[str, Any]) -> Item:
        session_id = self._session_of(row, "user_prompts")
        origin = self._origin(row, session_id)
        return Item(
            table="user_prompts",
            row_id=int(row["id"]),
            key=self._key("user_prompts", row),
            content=_text(row.get("prompt_text")),
            origin=origin,
            project=self.into or origin,
            kind="prompt",
            type="prompt",
            created_at=self._created(row),
            session_id=session_id,
            metadata={
                "prompt_number": row.get("prompt_number"),
                "claude_mem": {"id": row["id"]},
            },
        )

    def directive(self, row: dict[str, Any]) -> Item | None:
        if _text(row.get("status")) not in ("", "active"):
            return None
        origin = self._origin(row, None)
        return Item(
            table="directives",
            row_id=int(row["id"]),
            key=self._key("directives", row),
            content=_text(row.get("content")),
            origin=origin,
            project=self.into or origin,
            kind="knowledge",
            type="constraint",
            title="Directive",
            created_at=self._created(row),
            metadata={"claude_mem": {"id": row["id"], "scope": _text(row.get("scope"))}},
        )

    def _created(self, row: dict[str, Any]) -> datetime:
        moment = _when(row, "created_at")
        if moment is None:
            raise InvalidInput("no created_at / created_at_epoch")
        return moment

    def items(self) -> Iterator[Item]:
        builders = (
            ("observations", self.observation),
            ("session_summaries", self.summary),
            ("user_prompts", self.prompt),
            ("directives", self.directive),
        )
        for table, build in builders:
            for row in self.source.rows(table):
                self.rows_read += 1
                try:
                    item = build(row)
                except InvalidInput as exc:
                    self.tally.error(int(row["id"]), f"{table} row {row['id']}: {exc}")
                    continue
                if item is None:
                    continue
                if not self.selected(item.origin):
                    self.tally.bump("other projects")
                    continue
                if not item.content:
                    self.tally.error(item.row_id, f"{table} row {item.row_id}: no text to import")
                    continue
                yield item

    # -- writing --------------------------------------------------------------

    def run(self, *, dry_run: bool) -> InteropReport:
        sessions = self.sessions()
        if dry_run:
            known = {s.id for s in sessions if self.core.store.get_session(s.id) is not None}
            self.tally.sessions = len(sessions) - len(known)
            for chunk in _chunks(self.items(), BATCH):
                seen = self.core.store.seen(SEEN_NAMESPACE, [i.key for i in chunk])
                for item in chunk:
                    new = item.key not in seen
                    self.tally.count("created" if new else "skipped")
                    self.tally.bump(item.table)
                    if new:
                        self.tally.bump_project(item.origin)
            return self.tally.freeze(str(self.source.path), dry_run=True)
        with self.core.store.transaction():
            for session in sessions:
                if self.core.store.get_session(session.id) is None:
                    self.core.store.upsert_session(session)
                    self.tally.sessions += 1
        total = sum(self.source.count(table) for table in ITEM_TABLES)
        label = f"importing {self.source.path.name}"
        with self.core.store.bulk_load(), feedback.progress(label, total) as tracker:
            # Rows count as done once their batch is committed: what a Ctrl-C says is kept.
            done = 0
            for chunk in _chunks(self.items(), BATCH):
                with feedback.commit_and_count():
                    self._write(chunk)
                    tracker.advance(self.rows_read - done)
                done = self.rows_read
            tracker.advance(self.rows_read - done)
        return self.tally.freeze(str(self.source.path))

    def _write(self, chunk: list[Item]) -> None:
        store = self.core.store
        # One transaction per batch: the rows and their seen keys land together.
        with memories.batch(self.core) as writer:
            seen = store.seen(SEEN_NAMESPACE, [item.key for item in chunk])
            done: list[str] = []
            for item in chunk:
                if item.key in seen:
                    self.tally.count("skipped")
                    continue
                try:
                    result = writer.save(item.draft())
                except InvalidInput as exc:
                    self.tally.error(item.row_id, f"{item.table} row {item.row_id}: {exc}")
                    continue
                self.tally.count(result.status)
                self.tally.bump(item.table)
                self.tally.bump_project(item.origin)
                done.append(item.key)
            store.mark_seen(SEEN_NAMESPACE, done)


def _chunks(items: Iterator[Item], size: int) -> Iterator[list[Item]]:
    batch: list[Item] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def import_claude_mem(
    core: Core,
    source: str | None = None,
    *,
    project: str | None = None,
    into: str | None = None,
    dry_run: bool = False,
) -> InteropReport:
    """Import the claude-mem database at ``source`` (default ``~/.claude-mem/claude-mem.db``).

    ``project``: only the rows of this claude-mem project; ``into``: the memlane
    project to put the rows in (default: each row's own).
    """
    path = Path(source).expanduser() if source else DEFAULT_PATH.expanduser()
    if not path.is_file():
        raise InvalidInput(
            f"no claude-mem database at {path}: give the path of the claude-mem database"
        )
    db = Source(path)
    try:
        if project is not None:
            known = db.projects()
            if project not in known:
                listed = ", ".join(sorted(known)) or "none"
                raise InvalidInput(
                    f"{path} has no claude-mem project {project!r} (its projects: {listed});"
                    " a dry run shows what each holds"
                )
        target = core.resolve_project(into) if into is not None else None
        return ClaudeMemImport(core, db, only=project, into=target).run(dry_run=dry_run)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc
    finally:
        db.close()
