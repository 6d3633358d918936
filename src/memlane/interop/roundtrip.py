"""Read memlane's own export back, losslessly (also the record layer of sync).

:class:`RecordApplier` takes decoded records one at a time:

* ``{"record": "header", …}`` is checked (format and version) and skipped;
* ``{"record": "session", …}`` creates the session, or refreshes it when the
  record's ``last_activity_at`` is newer (the local transcript offset is kept); a
  transcript path is this machine's hooks' to give, never a file's (it is dropped);
* ``{"record": "memory", …}`` is matched to a local memory by its identity
  (:mod:`memlane.interop.identity`) or topic key: absent → inserted with
  every field as exported (timestamps, counters, metadata, vectors); present
  and older → updated in place; otherwise skipped. A second import of the
  same file therefore adds nothing;
* ``{"record": "tombstone", "identity": …}`` (sync only) deletes the local copy;
* anything else is a plain DESIGN §7 record, saved like ``Memory.save``.

Every memory goes through the one write path (:mod:`memlane.memories`), an
exported one as a lossless copy (:class:`~memlane.memories.Preserved`): its
timestamps and counters are kept, and privacy holds all the same (every text
field scrubbed, then clipped and hashed).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import feedback, memories, sessions
from memlane.background import ahead
from memlane.errors import InvalidInput
from memlane.interop import decode
from memlane.interop.identity import (
    find_by_identity,
    instance_id,
    parse_source,
    parse_uid,
)
from memlane.interop.json_stream import JsonCursor
from memlane.interop.jsonl import parse_object, parse_time, record_text, settle_file_ids
from memlane.interop.report import InteropReport, Tally
from memlane.jsonlines import BOM, BadLine, numbered_lines, read_lines
from memlane.memories import Draft, Preserved
from memlane.models import KINDS, ImportReport, NewMemory, SaveResult, Session
from memlane.models import Memory as MemoryRecord
from memlane.privacy import excerpt

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.feedback import Tracker

EXPORT_FORMAT = "memlane-export"
SUPPORTED_VERSIONS = (2,)
SESSION_STATUSES = ("active", "ended", "auto_closed")
BATCH = 500


def _time(record: dict[str, Any], key: str, *, required: bool) -> datetime | None:
    value = record.get(key)
    if value is None:
        if required:
            raise InvalidInput(f"missing {key!r}")
        return None
    return parse_time(value, key)


def _str(record: dict[str, Any], key: str, *, default: str | None = None) -> str | None:
    value = record.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key!r} must be a string")
    return value


def _int(record: dict[str, Any], key: str) -> int:
    value = record.get(key, 0)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"{key!r} must be a non-negative integer")
    return value


def _strings(record: dict[str, Any], key: str) -> tuple[str, ...]:
    value = record.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput(f"{key!r} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class ExportedMemory:
    """One validated ``"record": "memory"`` line."""

    identity: str
    project: str
    kind: str
    type: str
    content: str
    title: str
    session_id: str | None
    files: tuple[str, ...]
    tags: tuple[str, ...]
    topic_key: str | None
    source: str
    source_id: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    revision_count: int
    access_count: int
    last_accessed_at: datetime | None
    stale: bool
    vectors: dict[str, bytes] = field(default_factory=dict)


def parse_memory(record: dict[str, Any]) -> ExportedMemory:
    """Validate an exported memory record (raises InvalidInput naming the field)."""
    identity = _str(record, "identity")
    if not identity:
        raise InvalidInput("missing 'identity' (not a memlane export record)")
    if parse_uid(identity) is None and parse_source(identity) is None:
        raise InvalidInput(f"malformed identity {excerpt(identity)}")
    content = record_text(record)
    project = _str(record, "project")
    if not project or not project.strip():
        raise InvalidInput("missing 'project'")
    kind = _str(record, "kind") or ""
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {excerpt(kind)} (one of: {', '.join(KINDS)})")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("'metadata' must be an object")
    created = _time(record, "created_at", required=True)
    assert created is not None
    updated = _time(record, "updated_at", required=False) or created
    vectors: dict[str, bytes] = {}
    raw_vectors = record.get("vectors") or {}
    if not isinstance(raw_vectors, dict):
        raise InvalidInput("'vectors' must be an object of model: base64")
    for model, encoded in raw_vectors.items():
        try:
            blob = base64.b64decode(str(encoded), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput(f"vector of model {excerpt(model)} is not base64") from None
        if not blob or len(blob) % 4:
            raise InvalidInput(f"vector of model {excerpt(model)} is not float32 data")
        from memlane.interop.index_file import vector_problem  # numpy: only with vectors

        problem = vector_problem(str(model), blob)
        if problem is not None:
            raise InvalidInput(f"vector of model {excerpt(model)} {problem}")
        vectors[str(model)] = blob
    source_id = _str(record, "source_id")
    parsed = parse_source(identity)
    if parsed is not None:
        source_id = parsed[2]
    return ExportedMemory(
        identity=identity,
        project=project.strip(),
        kind=kind,
        type=(_str(record, "type") or "note").strip().lower() or "note",
        content=content,
        title=_str(record, "title") or "",
        session_id=_str(record, "session"),
        files=_strings(record, "files"),
        tags=_strings(record, "tags"),
        topic_key=_str(record, "topic_key"),
        source=_str(record, "source") or "memlane",
        source_id=source_id,
        metadata=metadata,
        created_at=created,
        updated_at=max(updated, created),
        revision_count=_int(record, "revision_count"),
        access_count=_int(record, "access_count"),
        last_accessed_at=_time(record, "last_accessed_at", required=False),
        stale=bool(record.get("stale", False)),
        vectors=vectors,
    )


def parse_session(record: dict[str, Any]) -> Session:
    """Validate an exported session record."""
    session_id = _str(record, "id")
    if not session_id or not session_id.strip():
        raise InvalidInput("session record without 'id'")
    project = _str(record, "project")
    if not project:
        raise InvalidInput("session record without 'project'")
    status = _str(record, "status") or "ended"
    if status not in SESSION_STATUSES:
        raise InvalidInput(f"unknown session status {excerpt(status)}")
    started = _time(record, "started_at", required=True)
    assert started is not None
    return Session(
        id=session_id,
        project=project,
        agent=_str(record, "agent") or "unknown",
        status=status,
        started_at=started,
        ended_at=_time(record, "ended_at", required=False),
        last_activity_at=_time(record, "last_activity_at", required=False) or started,
        transcript_path=_str(record, "transcript_path"),
        transcript_offset=_int(record, "transcript_offset"),
        prompt_count=_int(record, "prompt_count"),
        parent_session_id=_str(record, "parent_session_id"),
    )


@dataclass(frozen=True, slots=True)
class Pending:
    """A record waiting in a batch; a plain one comes prepared (or with its error)."""

    number: int
    record: Any
    draft: Draft | None = None
    row: NewMemory | None = None
    error: InvalidInput | None = None


class RecordApplier:
    """Applies decoded records to a memory; see the module docstring.

    ``project`` overrides the records' own project. ``file``: the name of the file
    plain records come from, whose ids are that file's
    (:func:`memlane.interop.jsonl.settle_file_ids`). ``is_tombstoned`` (sync)
    answers whether an identity was deleted somewhere, so a late copy never
    brings a deleted memory back. ``on_applied`` is told the identity and
    version of every memory written or already up to date.
    """

    def __init__(
        self,
        core: Core,
        *,
        project: str | None = None,
        file: str | None = None,
        with_vectors: bool = True,
        is_tombstoned: Callable[[list[str]], set[str]] | None = None,
    ) -> None:
        self.core = core
        self.store = core.store
        self.project = project
        self.file = file
        self._plain_file: str | None = None  # self.file checked (_file_of)
        self._file_refused = ""  # why it is no plain name
        self.with_vectors = with_vectors
        self.is_tombstoned = is_tombstoned
        self.instance = instance_id(core)
        self.tally = Tally()
        self.applied: list[tuple[str, str]] = []  # (identity, version) written or current
        self._writer: memories.Writer | None = None

    # -- dispatch -------------------------------------------------------------

    def apply(self, number: int, record: Any) -> None:
        """Apply one decoded record; a bad one is counted as an error on ``number``."""
        try:
            if not isinstance(record, dict):
                raise InvalidInput("a record must be a JSON object")
            kind = record.get("record")
            if kind == "header":
                check_header(record)
            elif kind == "session":
                self.apply_session(parse_session(record))
            elif kind == "memory":
                self.apply_memory(parse_memory(record))
            elif kind == "tombstone":
                self.apply_tombstone(record)
            elif kind is None:
                self.apply_plain(record)
            else:
                raise InvalidInput(f"unknown record type {excerpt(kind)}")
        except InvalidInput as exc:
            # Validation happens before any write of the record, so nothing of it is
            # left behind; store failures propagate and roll the whole batch back.
            self.tally.error(number, str(exc))

    def apply_batches(
        self, numbered: Iterable[tuple[int, Any]], tracker: Tracker | None = None
    ) -> None:
        """Apply records in transactions of :data:`BATCH`: a failure never half-writes.

        One :func:`memlane.memories.batch` per transaction, so each session a batch
        writes to is touched once, not once per record, and its duplicate lookups
        are one query per key (:meth:`memlane.memories.Writer.expect`). When a core
        is idle, a thread reads, validates and prepares the next batch's plain
        records (privacy filter, hash) while this one is written
        (:mod:`memlane.background`); the records are applied in their order all
        the same. ``tracker`` advances by
        the records (lines) each batch covers.
        """
        done = 0
        with self.store.bulk_load(), ahead(self._prepared(numbered)) as batches:
            for pending in batches:
                done = self._flush(pending, tracker, done)

    def _prepared(self, numbered: Iterable[tuple[int, Any]]) -> Iterator[list[Pending]]:
        """Batches of records, each plain record with its draft and row (or its error)."""
        pending: list[Pending] = []
        for number, record in numbered:
            pending.append(self._prepare_plain(number, record))
            if len(pending) >= BATCH:
                yield pending
                pending = []
        if pending:
            yield pending

    def _prepare_plain(self, number: int, record: Any) -> Pending:
        if not isinstance(record, dict) or record.get("record") is not None:
            return Pending(number, record)  # applied as it comes (apply)
        try:
            draft = parse_object(record, project=self.project, file=self._file_of(record))
            return Pending(number, record, draft, memories.prepare(self.core, draft))
        except InvalidInput as exc:
            return Pending(number, record, error=exc)

    def _file_of(self, record: dict[str, Any]) -> str | None:
        """The file name that owns ``record``'s id (settle_file_ids), None without one. Part
        of the key of the record's memory, so a plain name: a name that holds a secret or
        a control character refuses each record with an id, and none without."""
        if self.file is None or "id" not in record:
            return None
        if self._plain_file is None:
            try:
                self._plain_file = self.core.plain_name("file name", self.file)
            except InvalidInput as exc:
                self._file_refused = str(exc)
                self._plain_file = ""
        if self._file_refused:
            raise InvalidInput(self._file_refused)
        return self._plain_file

    def _flush(self, pending: list[Pending], tracker: Tracker | None, done: int) -> int:
        last = pending[-1].number
        with feedback.commit_and_count():
            with memories.batch(self.core) as writer:
                self._writer = writer
                try:
                    pending, holders = self._settle_file_ids(pending)
                    writer.expect((item.row for item in pending if item.row is not None), holders)
                    for item in pending:
                        self._apply_pending(writer, item)
                finally:
                    self._writer = None
            if tracker is not None and last > done:
                tracker.advance(last - done)
        return max(last, done)

    def _settle_file_ids(
        self, pending: list[Pending]
    ) -> tuple[list[Pending], dict[tuple[str, str, str], MemoryRecord]]:
        """``pending`` with each plain record's row under the ``source_id`` it is stored
        as, and the memories read holding those ids (:func:`settle_file_ids`), inside
        the batch's transaction."""
        if self.file is None:
            return pending, {}
        found = settle_file_ids(self.store, [p.row for p in pending if p.row is not None])
        rows = iter(found.rows)
        settled = [
            replace(item, row=next(rows)) if item.row is not None else item for item in pending
        ]
        return settled, found.holders

    def _apply_pending(self, writer: memories.Writer, item: Pending) -> None:
        if item.error is not None:
            self.tally.error(item.number, str(item.error))
        elif item.draft is None or item.row is None:
            self.apply(item.number, item.record)
        else:
            try:
                result = writer.save(item.draft, item.row)
            except InvalidInput as exc:
                self.tally.error(item.number, str(exc))
                return
            self.tally.count(result.status)

    def _save(self, draft: Draft) -> SaveResult:
        """Save through the batch being flushed, or on its own (a record applied alone)."""
        if self._writer is not None:
            return self._writer.save(draft)
        return memories.save(self.core, draft)

    # -- records --------------------------------------------------------------

    def apply_session(self, session: Session) -> None:
        if self.project:
            session = _replace_project(session, self.project)
        for what, name in sessions.session_names(session):
            if name:
                self.core.plain_name(what, name)
        existing = self.store.get_session(session.id)
        if existing is None:
            # A file's transcript path is not one to read later (a crafted one names
            # /etc/shadow, or another machine's file): kept, a later hook of the session
            # that names no transcript would read it. The next hook names it again.
            self.store.upsert_session(replace(session, transcript_path=None))
            self.tally.sessions += 1
            return
        if session.last_activity_at <= existing.last_activity_at:
            return
        # The transcript path and offset are this machine's ingest state: keep them.
        self.store.update_session(
            session.id,
            {
                "status": session.status,
                "ended_at": session.ended_at,
                "last_activity_at": session.last_activity_at,
                "prompt_count": max(session.prompt_count, existing.prompt_count),
                "agent": session.agent,
            },
        )
        self.tally.sessions += 1

    def apply_memory(self, item: ExportedMemory) -> None:
        if self.is_tombstoned is not None and self.is_tombstoned([item.identity]):
            self.tally.count("skipped")
            return
        project = self.project or item.project
        existing = find_by_identity(
            self.store, item.identity, project=project, source=item.source, instance=self.instance
        )
        if existing is None and item.topic_key:
            # Stored topic keys are scrubbed: look the record's up the same way.
            key = self.core.scrub(item.topic_key)
            existing = self.store.find_memory(project, topic_key=key)
        version = item.updated_at.isoformat()
        if existing is not None and item.updated_at <= existing.updated_at:
            self._ensure_session(item, project)
            self.applied.append((item.identity, version))
            self.tally.count("skipped")
            return
        source_id = None if existing is not None else self._source_id(item)
        result = self._save(_copy_draft(item, project, source_id, existing))
        self._ensure_session(item, project)
        self._vectors(result.id, item)
        self.applied.append((item.identity, version))
        self.tally.count(result.status)

    @staticmethod
    def _source_id(item: ExportedMemory) -> str:
        """The source_id a new copy is stored under (how the next import finds it).

        An outside tool's key for a ``src:`` identity; the ``uid:`` identity itself
        otherwise, even for our own memory deleted since (it comes back as a copy).
        """
        parsed = parse_source(item.identity)
        return parsed[2] if parsed is not None else item.identity

    def _ensure_session(self, item: ExportedMemory, project: str) -> None:
        """A memory's session unknown here is created, ended at the memory's time."""
        if not item.session_id or self.store.get_session(item.session_id) is not None:
            return
        self.store.upsert_session(
            Session(
                id=item.session_id,
                project=project,
                status="ended",
                started_at=item.created_at,
                last_activity_at=item.created_at,
                ended_at=item.created_at,
            )
        )
        self.tally.sessions += 1

    def _vectors(self, memory_id: int, item: ExportedMemory) -> None:
        if not self.with_vectors:
            return
        for model, blob in item.vectors.items():
            self.store.put_embeddings(model, len(blob) // 4, [(memory_id, blob)])
            self.tally.vectors += 1

    def apply_tombstone(self, record: dict[str, Any]) -> None:
        identity = _str(record, "identity")
        if not identity or (parse_uid(identity) is None and parse_source(identity) is None):
            raise InvalidInput("tombstone without a valid 'identity'")
        project = self.project or _str(record, "project") or ""
        source = _str(record, "source") or "memlane"
        found = find_by_identity(
            self.store, identity, project=project, source=source, instance=self.instance
        )
        if found is not None:
            if self._writer is not None:  # deleted outside it: what it read ahead is not current
                self._writer.forget_keys()
            self.store.delete_memories([found.id])
            self.tally.deleted += 1

    def apply_plain(self, record: dict[str, Any]) -> None:
        draft = parse_object(record, project=self.project, file=self._file_of(record))
        if self._writer is not None:
            result = self._save_plain(self._writer, draft)
        else:
            with memories.batch(self.core) as writer:
                result = self._save_plain(writer, draft)
        self.tally.count(result.status)

    def _save_plain(self, writer: memories.Writer, draft: Draft) -> SaveResult:
        row = memories.prepare(self.core, draft)
        if self.file is not None:
            (row,) = settle_file_ids(self.store, [row]).rows
        return writer.save(draft, row)

    def report(self, source: str) -> InteropReport:
        return self.tally.freeze(source)


def check_header(record: dict[str, Any]) -> None:
    if record.get("format") != EXPORT_FORMAT:
        raise InvalidInput(f"header of an unknown format {excerpt(record.get('format'))}")
    if record.get("version") not in SUPPORTED_VERSIONS:
        raise InvalidInput(
            f"export version {excerpt(record.get('version'))} is not supported"
            f" (this memlane reads version {', '.join(map(str, SUPPORTED_VERSIONS))})"
        )


def _replace_project(session: Session, project: str) -> Session:
    return replace(session, project=project)


def _copy_draft(
    item: ExportedMemory, project: str, source_id: str | None, existing: MemoryRecord | None
) -> Draft:
    """The lossless-copy draft of an exported memory (``existing``: the copy it updates)."""
    return Draft(
        item.content,
        project=project,
        type=item.type,
        kind=item.kind,
        title=item.title,
        session_id=item.session_id,
        topic_key=item.topic_key,
        source=item.source,
        source_id=source_id,
        created_at=item.created_at,
        files=item.files,
        tags=item.tags,
        metadata=item.metadata,
        given=True,
        preserved=Preserved(
            updated_at=item.updated_at,
            revision_count=item.revision_count,
            access_count=item.access_count,
            last_accessed_at=item.last_accessed_at,
            stale=item.stale,
            into=existing,
        ),
    )


def iter_jsonl(path: Path, errors: Tally) -> Iterator[tuple[int, Any]]:
    """(line number, decoded object) of each non-empty line; bad JSON goes to ``errors``."""
    with path.open("rb") as handle:
        for number, line in numbered_lines(handle):
            if isinstance(line, BadLine):
                errors.error(number, line.message)
                continue
            if not line.strip():
                continue
            try:
                yield number, decode.loads(line)
            except json.JSONDecodeError as exc:
                errors.error(number, f"not valid JSON ({exc.msg} at column {exc.colno})")


# A JSON export's lists of records, in import order, and the kind of record each holds.
RECORD_LISTS = {"sessions": "session", "memories": "memory"}


@dataclass(frozen=True)
class JsonExport:
    """What a first reading of a JSON document found: a bare list of records or an
    export object, the object's record lists (in :data:`RECORD_LISTS` order), and how
    many records it holds."""

    path: Path
    bare_list: bool
    lists: tuple[str, ...]
    records: int

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        """Records (sessions first), numbered by their place in the import order."""
        try:
            if self.bare_list:
                with self.path.open("r", encoding="utf-8") as handle:
                    yield from enumerate(JsonCursor(handle).items(), start=1)
                return
            records = _lists_in_order(self.path, self.lists)
            for number, (name, item) in enumerate(records, start=1):
                record = RECORD_LISTS[name]
                yield number, {**item, "record": record} if isinstance(item, dict) else item
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{self.path} changed while it was imported ({exc})") from None


def read_json_export(path: Path) -> JsonExport:
    """Read the JSON document at ``path`` once, whole, holding one record at a time
    (:class:`JsonCursor`): a document that is not valid JSON, or an export of another
    format or version, is refused here, before anything is imported."""
    try:
        with path.open("r", encoding="utf-8") as handle:
            cursor = JsonCursor(handle)
            first = cursor.peek()
            if first == "[":
                records = sum(1 for _ in cursor.items())
                cursor.end()
                return JsonExport(path, True, (), records)
            if first != "{":
                cursor.value()
                cursor.end()
                raise InvalidInput(f"{path}: expected a memlane export object or a list of records")
            header: dict[str, Any] = {}
            lists: set[str] = set()
            records = 0
            for key in cursor.members():
                if key in header or key in lists:
                    raise InvalidInput(f"{path}: {excerpt(key)} is given twice; nothing imported")
                if key in RECORD_LISTS and cursor.peek() == "[":
                    lists.add(key)
                    records += sum(1 for _ in cursor.items())
                elif cursor.peek() == "[":
                    cursor.skip()  # a member memlane does not read: one item at a time
                    header[key] = []
                else:
                    header[key] = cursor.value()
            cursor.end()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); nothing imported") from None
    check_header(header)
    if any(header.get(name) for name in RECORD_LISTS):
        raise InvalidInput(f"{path}: 'sessions' and 'memories' must be lists")
    order = tuple(name for name in RECORD_LISTS if name in lists)
    return JsonExport(path, False, order, records)


def _lists_in_order(path: Path, names: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """(name, record) of the top-level lists ``names`` of the JSON object at ``path``, in
    the order of ``names``: one reading while the file holds them in that order, one
    more for each list that comes before one named earlier."""
    left = list(names)
    while left:
        streamed = False
        with path.open("r", encoding="utf-8") as handle:
            cursor = JsonCursor(handle)
            for key in cursor.members():
                if left and key == left[0] and cursor.peek() == "[":
                    left.pop(0)
                    streamed = True
                    for item in cursor.items():
                        yield key, item
                else:
                    cursor.skip()
        if not streamed:
            raise json.JSONDecodeError(f"no list {left[0]!r} any more", "", 0)


def check_jsonl_header(path: Path) -> None:
    """Refuse, whole, a JSONL export whose header names another format or version, as
    the JSON form is refused (:func:`read_json_export`): its records would be read with
    the wrong meaning. A file without a header line is plain records."""
    with path.open("rb") as handle:
        for line in read_lines(handle):
            if not line.head.strip():
                continue
            try:  # after a byte-order mark, as the lines are read (numbered_lines)
                head = line.head.removeprefix(BOM.encode("utf-8"))
                first = decode.loads(head) if line.whole else None
            except (json.JSONDecodeError, UnicodeDecodeError):
                return  # reported with its line number when read
            if isinstance(first, dict) and first.get("record") == "header":
                try:
                    check_header(first)
                except InvalidInput as exc:
                    raise InvalidInput(f"{path}: {exc}; nothing imported") from None
            return


def looks_like_json_document(path: Path) -> bool:
    """True when ``path`` is one JSON document, not JSON lines: it opens a list, or an
    object on a line of its own, or its first line is memlane's JSON export written on
    one line; a first line that does not parse alone (broken, very long, an object
    spread over lines) counts only when the whole file is one JSON object. A record
    with a ``format`` key of its own is a JSON line."""
    with path.open("rb") as handle:
        for line in read_lines(handle):
            head = line.head.removeprefix(BOM.encode("utf-8")).strip()
            if head:
                break
        else:
            return False
    if head.startswith(b"[") or head == b"{":
        return True
    if not head.startswith(b"{"):
        return False
    if line.whole:
        try:
            value = decode.loads(head)
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
        else:  # the JSONL export's header line has "record": "header"
            return "record" not in value and value.get("format") == EXPORT_FORMAT
    return _one_json_value(path)


def _one_json_value(path: Path) -> bool:
    """Whether all of ``path`` is one JSON object: memlane's JSON export as soon as its
    first member says so, else read as a stream, one member and item at a time (JSON
    lines fail where their second line starts)."""
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            cursor = JsonCursor(handle)
            for number, key in enumerate(cursor.members()):
                if number == 0 and key == "format" and cursor.peek() == '"':
                    if cursor.value() == EXPORT_FORMAT:
                        return True
                else:
                    cursor.skip()
            cursor.end()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return True


def import_export_file(
    core: Core, path: str, *, project: str | None = None, with_vectors: bool = True
) -> InteropReport:
    """Import a memlane export (JSON or JSONL), or a plain JSONL file of records."""
    file = decode.input_file(path)
    applier = RecordApplier(core, project=project, file=file.name, with_vectors=with_vectors)
    if looks_like_json_document(file):
        export = read_json_export(file)
        with feedback.progress(f"importing {file.name}", export.records) as tracker:
            applier.apply_batches(export, tracker)
    else:
        check_jsonl_header(file)
        with feedback.progress(f"importing {file.name}", count_lines(file)) as tracker:
            applier.apply_batches(iter_jsonl(file, applier.tally), tracker)
    applier.tally.errors.sort(key=lambda e: e.line)
    return applier.report(str(file))


def import_jsonl(core: Core, path: str, *, project: str | None = None) -> ImportReport:
    """Import the JSONL file at ``path``; ``project`` overrides records' own project.

    Plain DESIGN §7 records (:mod:`memlane.interop.jsonl`) and the lines of
    memlane's own JSONL export (sessions, memories with their identity) are
    both understood.
    """
    file = decode.input_file(path)
    if looks_like_json_document(file):
        # Read as lines, each line of it was "not valid JSON": hundreds of errors.
        raise InvalidInput(
            f"{path} is one JSON document, not JSON Lines (one record a line); nothing"
            f" imported: a memlane JSON export is imported with `memlane import memlane {path}`"
        )
    check_jsonl_header(file)
    applier = RecordApplier(core, project=project, file=file.name)
    with feedback.progress(f"importing {file.name}", count_lines(file)) as tracker:
        applier.apply_batches(iter_jsonl(file, applier.tally), tracker)
    applier.tally.errors.sort(key=lambda e: e.line)
    return applier.report(str(file)).import_report()


def count_lines(path: Path) -> int:
    """Lines in ``path`` (a progress bar's total): a fast binary count, ~0.1 s per 50 MB."""
    lines = 0
    last = b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")
