"""JSONL memory records (DESIGN §7): each one validated into a draft for the write path.

One JSON object per line::

    {"text"|"content": str, "id"?: str, "session"?: str, "project"?: str,
     "type"?: str, "title"?: str, "speaker"|"role"?: str,
     "timestamp"|"created_at"?: ISO-8601 or epoch seconds,
     "tags"?: [str], "files"?: [str], "metadata"?: {...}}

Any other field of a record is kept in its metadata (the record's own ``metadata``
wins when both name a key).

``id`` becomes ``source_id`` (without one, a hash of the record stands in), so
re-importing a file adds nothing. An id is its file's own: the file's name goes in
``metadata.import_file`` (:data:`FILE_KEY`), and a record whose id a memory imported
from another file of the project holds is stored as ``<file>#<id>``
(:func:`settle_file_ids`) rather than replacing it. A memory imported before files
were named (no ``import_file``) is claimed by the first file that brings its id.

Each line is validated before anything is written; a bad line is reported with its
number and the good ones are still imported. Records are written in batched
transactions, never half-written (:func:`memlane.interop.roundtrip.import_jsonl` reads
the file, and applies lines of memlane's own export, ``"record": …``, losslessly).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from memlane.errors import InvalidInput
from memlane.memories import MAX_CONTENT_CHARS, Draft, given_content
from memlane.models import JSONL_SOURCE, MAX_NAME_CHARS, NewMemory
from memlane.privacy import excerpt
from memlane.timeparse import RANGE, ahead_of_clock, in_range

if TYPE_CHECKING:
    from memlane.models import Memory
    from memlane.store.base import Store

SOURCE = JSONL_SOURCE
# The metadata key naming the file a record with an ``id`` was imported from.
FILE_KEY = "import_file"
# An imported record's metadata, as JSON, is at most four times the longest content a
# memory keeps (it may repeat the record's key facts). Every key and string of it is
# scrubbed, so one line of a million keys (17 MB) took 31 s and stored 18.8 MB.
MAX_METADATA_CHARS = 4 * MAX_CONTENT_CHARS


def parse_time(value: Any, what: str = "timestamp") -> datetime:
    """ISO-8601 text (``Z`` allowed) or epoch seconds, as aware UTC, within the range
    every interface takes (:func:`memlane.timeparse.in_range`: 1970 to 9000) and not
    ahead of this machine's clock (:func:`memlane.timeparse.ahead_of_clock`). JSON as
    Python reads it spells ``NaN`` and ``Infinity`` (``1e999``), and an epoch past the
    calendar overflows: each is the line's error, not the import's end."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what} must be ISO-8601 text or epoch seconds, got {excerpt(value)}")
    if isinstance(value, int | float):
        try:
            moment = datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, ValueError, OSError):  # NaN, infinite, past year 9999
            moment = None
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"{what} {excerpt(value)} is not an ISO-8601 date") from None
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    else:
        raise InvalidInput(
            f"{what} must be ISO-8601 text or epoch seconds, got {type(value).__name__}"
        )
    if moment is None or not in_range(moment):
        raise InvalidInput(f"{what} {excerpt(value)} is out of range ({RANGE})")
    if ahead_of_clock(moment):
        raise InvalidInput(
            f"{what} {excerpt(value)} is more than a day ahead of this machine's clock; record"
            " refused (it would win over every later edit: check the clock where it was written)"
        )
    return moment


def _str_list(record: dict[str, Any], key: str) -> tuple[str, ...]:
    value = record.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput(f"{key!r} must be a list of strings")
    return tuple(value)


def opt_str(record: dict[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` the record gives, as text: a string, or an integer's digits
    (``"session": 42``); anything else (``true``, a list) is the record's error."""
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise InvalidInput(f"{key!r} must be a string")
        return str(value)
    return None


# How a JSON value is named when it has the wrong type.
_JSON_TYPES: dict[type, str] = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


# Where a line of a JSONL memory store keeps its text, after ``text`` and ``content``, and
# its key facts (:mod:`memlane.interop.jsonl_store` reads them).
STORE_TEXT_FIELDS = ("note", "body", "description", "lesson", "decision", "details", "message")
STORE_FACT_FIELDS = ("summary", "decisions", "outcomes")


def record_text(record: dict[str, Any]) -> str:
    """The record's ``text`` (or ``content``), a non-empty string; else InvalidInput saying
    whether it is missing (and, for a line of a JSONL memory store, which import reads
    it), of another type or empty."""
    key = "text" if "text" in record else "content"
    if key not in record:
        missing = "missing 'text' (or 'content'): a non-empty string is required"
        store_field = next(
            (name for name in STORE_TEXT_FIELDS + STORE_FACT_FIELDS if name in record), None
        )
        if store_field is not None:
            missing += (
                f" (a line with {store_field!r} is a JSONL memory store's: import its folder"
                " with `memlane import jsonl-store DIR`)"
            )
        raise InvalidInput(missing)
    value = record[key]
    if not isinstance(value, str):
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        raise InvalidInput(f"{key!r} is {kind}: a non-empty string is required")
    if not value.strip():
        raise InvalidInput(f"{key!r} is empty: a non-empty string is required")
    return given_content(value, repr(key))


def check_metadata(metadata: dict[str, Any]) -> None:
    """Refuse (InvalidInput) a record's ``metadata`` longer than :data:`MAX_METADATA_CHARS`
    as JSON."""
    try:
        size = len(json.dumps(metadata, ensure_ascii=False))
    except RecursionError:
        return  # too deep: refused, naming where, by the write path (clean_metadata)
    if size > MAX_METADATA_CHARS:
        raise InvalidInput(
            f"metadata is {size:,} characters as JSON (at most {MAX_METADATA_CHARS:,}):"
            " keep the fields that matter"
        )


# The fields of a record (the module docstring); any other one is kept in its metadata.
RECORD_FIELDS = frozenset(
    {
        "text",
        "content",
        "id",
        "session",
        "session_id",
        "project",
        "type",
        "title",
        "speaker",
        "role",
        "timestamp",
        "created_at",
        "tags",
        "files",
        "metadata",
        "record",  # null: a plain record (roundtrip reads the others)
    }
)


def parse_object(record: Any, *, project: str | None = None, file: str | None = None) -> Draft:
    """The draft of one decoded DESIGN §7 record (raises InvalidInput naming the problem).

    ``project`` overrides the record's own project. ``file``: the name of the file the
    record comes from, which owns its ``id`` (:func:`settle_file_ids`).
    """
    if not isinstance(record, dict):
        raise InvalidInput("a record must be a JSON object")
    content = record_text(record)
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("'metadata' must be an object")
    others = {k: v for k, v in record.items() if k not in RECORD_FIELDS}
    if others:  # kept, not dropped (a "severity"); the record's own metadata wins
        metadata = {**others, **metadata}
    stamp = record.get("timestamp", record.get("created_at"))
    created = None if stamp is None else parse_time(stamp)
    role = opt_str(record, "speaker", "role")
    # Lower-cased when prepared, after the secret check (``memories.clean_type``).
    type_ = (opt_str(record, "type") or ("turn" if role else "note")).strip() or "note"
    source_id = opt_str(record, "id")
    if source_id is None:
        canonical = json.dumps(record, sort_keys=True, ensure_ascii=False)
        source_id = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    if role:
        metadata = {**metadata, "role": role}
    if file is not None and "id" in record:
        metadata = {**metadata, FILE_KEY: file}
    check_metadata(metadata)
    return Draft(
        content,
        project=project or opt_str(record, "project"),
        type=type_,
        # Without a title a turn is headed by its speaker: search and embeddings see who
        # spoke ("What did Caroline say…" finds Caroline's turns).
        title=opt_str(record, "title") or role,
        session_id=opt_str(record, "session", "session_id"),
        source=SOURCE,
        source_id=source_id,
        created_at=created,
        files=_str_list(record, "files"),
        tags=_str_list(record, "tags"),
        metadata=metadata,
        given=True,
    )


def file_source_id(file: str, source_id: str) -> str:
    """The ``source_id`` of the record ``source_id`` of ``file`` when a memory imported
    from another file holds the id (at most :data:`MAX_NAME_CHARS`, as every name)."""
    key = f"{file}#{source_id}"
    if len(key) > MAX_NAME_CHARS:
        key = f"{file[:200]}#sha256:{hashlib.sha256(key.encode('utf-8')).hexdigest()}"
    return key


class FileIds(NamedTuple):
    """What :func:`settle_file_ids` found: the rows under the ids they are stored as,
    and the memories it read holding some of those ids, by (project, source, source_id),
    as stored now (what :meth:`memlane.memories.Writer.expect` need not read again)."""

    rows: list[NewMemory]
    holders: dict[tuple[str, str, str], Memory]


def settle_file_ids(store: Store, rows: Sequence[NewMemory]) -> FileIds:
    """``rows`` with the ``source_id`` each one is stored under: a record's id
    (:data:`FILE_KEY` names its file) stays its ``source_id`` unless a memory of its
    project imported from another file holds that id; then it is ``<file>#<id>``
    (:func:`file_source_id`). A memory holding the id without a file (imported before
    files were named) is claimed for this file, its metadata saying so, and updated.

    One query per project and batch finds which keys are held, and one more reads whose
    the held ids are."""
    files = [_file_of(row) for row in rows]
    wanted: dict[str, set[str]] = {}
    for row, file in zip(rows, files, strict=True):
        if file and row.source_id:
            keys = wanted.setdefault(row.project, set())
            keys.update((row.source_id, file_source_id(file, row.source_id)))
    if not wanted:
        return FileIds(list(rows), {})
    held = {
        project: store.present_keys(project, "source_id", sorted(keys), source=SOURCE)
        for project, keys in wanted.items()
    }
    # A row whose id is held, but not under its file's own key: whose the id is decides.
    disputed = [
        file_source_id(file, row.source_id) not in held[row.project]
        and row.source_id in held[row.project]
        if file and row.source_id
        else False
        for row, file in zip(rows, files, strict=True)
    ]
    ids: dict[str, set[str]] = {}
    for row, contested in zip(rows, disputed, strict=True):
        if contested and row.source_id:
            ids.setdefault(row.project, set()).add(row.source_id)
    holders = {
        project: store.find_by_source_ids(project, SOURCE, sorted(found))
        for project, found in ids.items()
    }
    owners: dict[tuple[str, str], str] = {}  # (project, id) -> the file owning it
    settled: list[NewMemory] = []
    for row, file, contested in zip(rows, files, disputed, strict=True):
        if not file or not row.source_id:
            settled.append(row)
            continue
        own = file_source_id(file, row.source_id)
        if contested:
            owner = owners.get((row.project, row.source_id))
            if owner is None:
                owner = _owner(store, holders[row.project].get(row.source_id), file)
                owners[(row.project, row.source_id)] = owner
            if owner == file:
                settled.append(row)
                continue
        elif own not in held[row.project]:
            settled.append(row)
            continue
        settled.append(replace(row, source_id=own))
    # A holder claimed above is changed: only the others are as read.
    current = {
        (project, SOURCE, source_id): memory
        for project, found in holders.items()
        for source_id, memory in found.items()
        if isinstance(memory.metadata.get(FILE_KEY), str)
    }
    return FileIds(settled, current)


def _file_of(row: NewMemory) -> str | None:
    """The file an imported ``row`` names as its id's owner (:data:`FILE_KEY`), if any."""
    file = row.metadata.get(FILE_KEY) if row.source == SOURCE else None
    return file if isinstance(file, str) else None


def _owner(store: Store, found: Memory | None, file: str) -> str:
    """The file the memory ``found`` (imported under the id) came from; one imported before
    files were named is claimed for ``file`` (its metadata updated, not a revision)."""
    if found is None:
        return file
    owner = found.metadata.get(FILE_KEY)
    if isinstance(owner, str):
        return owner
    store.update_memory(found.id, {"metadata": {**found.metadata, FILE_KEY: file}})
    return file
