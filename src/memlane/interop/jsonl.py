"""JSONL memory records (DESIGN §7): their validation and how one is saved.

One JSON object per line::

    {"text"|"content": str, "id"?: str, "session"?: str, "project"?: str,
     "type"?: str, "title"?: str, "speaker"|"role"?: str,
     "timestamp"|"created_at"?: ISO-8601 or epoch seconds,
     "tags"?: [str], "files"?: [str], "metadata"?: {...}}

``id`` becomes ``source_id`` (without one, a hash of the record stands in), so
re-importing a file adds nothing. Each line is validated before anything is
written; a bad line is reported with its number and the good ones are still
imported. Records are written in batched transactions, never half-written
(:func:`memlane.interop.roundtrip.import_jsonl` reads the file, and applies
lines of memlane's own export, ``"record": …``, losslessly).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memlane import memories
from memlane.errors import InvalidInput
from memlane.memories import Draft

if TYPE_CHECKING:
    from memlane.core import Core

SOURCE = "jsonl"


@dataclass(frozen=True, slots=True)
class JsonlRecord:
    content: str
    source_id: str
    project: str | None = None
    session_id: str | None = None
    type: str = "note"
    title: str | None = None
    role: str | None = None
    created_at: datetime | None = None
    tags: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


def parse_time(value: Any, what: str = "timestamp") -> datetime:
    """ISO-8601 text (``Z`` allowed) or epoch seconds, as aware UTC."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what} must be ISO-8601 text or epoch seconds, got {value!r}")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    if isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"{what} {value!r} is not an ISO-8601 date") from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise InvalidInput(f"{what} must be ISO-8601 text or epoch seconds, got {type(value).__name__}")


def _str_list(record: dict[str, Any], key: str) -> tuple[str, ...]:
    value = record.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInput(f"{key!r} must be a list of strings")
    return tuple(value)


def _opt_str(record: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise InvalidInput(f"{key!r} must be a string")
        return str(value)
    return None


def parse_record(line: str) -> JsonlRecord:
    """Validate one JSONL line into a record (raises InvalidInput naming the problem)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    return parse_object(record)


def parse_object(record: Any) -> JsonlRecord:
    """Validate one decoded record (a JSON object) of DESIGN §7."""
    if not isinstance(record, dict):
        raise InvalidInput("a record must be a JSON object")
    content = record.get("text", record.get("content"))
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("missing 'text' (or 'content'): a non-empty string is required")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidInput("'metadata' must be an object")
    stamp = record.get("timestamp", record.get("created_at"))
    created = None if stamp is None else parse_time(stamp)
    role = _opt_str(record, "speaker", "role")
    type_ = (_opt_str(record, "type") or ("turn" if role else "note")).strip().lower() or "note"
    source_id = _opt_str(record, "id")
    if source_id is None:
        canonical = json.dumps(record, sort_keys=True, ensure_ascii=False)
        source_id = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    if role:
        metadata = {**metadata, "role": role}
    return JsonlRecord(
        content=content,
        source_id=source_id,
        project=_opt_str(record, "project"),
        session_id=_opt_str(record, "session", "session_id"),
        type=type_,
        title=_opt_str(record, "title"),
        role=role,
        created_at=created,
        tags=_str_list(record, "tags"),
        files=_str_list(record, "files"),
        metadata=metadata,
    )


def save_plain(core: Core, rec: JsonlRecord, *, project: str | None = None) -> str:
    """Save one plain record; returns the save status (created, updated, deduplicated)."""
    draft = Draft(
        rec.content,
        project=project or rec.project,
        type=rec.type,
        title=rec.title,
        session_id=rec.session_id,
        source=SOURCE,
        source_id=rec.source_id,
        created_at=rec.created_at,
        files=rec.files,
        tags=rec.tags,
        metadata=rec.metadata,
    )
    return memories.save(core, draft).status
