"""Writing a memory: privacy filter, clipping, hashing, upserts and dedup.

:meth:`Memory.save <memlane.service.Memory.save>` and
:meth:`Memory.update <memlane.service.Memory.update>` delegate here. The rules,
in the order :func:`save_memory` applies them:

* **privacy first** (invariant 1): content, title, tags, linked paths and
  every string inside metadata go through :meth:`Memory.scrub` before anything
  is hashed, stored or embedded; content empty after scrubbing is refused;
* **bounded**: content and title are clipped (``MAX_CONTENT_CHARS``,
  ``MAX_TITLE_CHARS``) with a visible mark, never stored whole;
* **one hash**: the normalized hash of the *scrubbed* text is the identity
  used for dedup, so a secret never reaches the hash either;
* **upserts** (invariant 4): a ``topic_key`` (else ``source`` + ``source_id``)
  already present in the project is updated in place, its ``revision_count``
  bumped and the memory moved to the current session; a ``source_id`` re-sent
  with the same content is a duplicate, not a revision;
* **dedup**: knowledge, notes, summaries and checkpoints are duplicates
  project-wide; captured observations (or any save given ``dedup_window``)
  only within a time window and with the same type, so the same command run
  again tomorrow is a new fact.

The session is touched inside the same transaction as the write, so a save
counts as session activity exactly when it lands.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from memlane import privacy
from memlane.errors import InvalidInput
from memlane.models import KINDS, NewMemory, SaveResult, kind_for_type, utcnow

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.models import Memory as MemoryRecord
    from memlane.service import Memory

# Longest content stored for one memory; longer text is truncated, never stored whole.
MAX_CONTENT_CHARS = 64_000
MAX_TITLE_CHARS = 200
TRUNCATION_MARK = "\n…[truncated by memlane]"
# Kinds whose duplicates are found project-wide; the others dedup inside a time window.
PROJECT_WIDE_DEDUP = frozenset({"knowledge", "note", "summary", "checkpoint"})
DEFAULT_OBSERVATION_WINDOW = timedelta(minutes=5)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with ``TRUNCATION_MARK``."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_MARK)] + TRUNCATION_MARK


def scrub_metadata(memory: Memory, metadata: dict[str, Any]) -> dict[str, Any]:
    """Scrub every string inside metadata (secrets hide in tool inputs too)."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return memory.scrub(value)
        if isinstance(value, dict):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    result = clean(metadata)
    assert isinstance(result, dict)
    return result


def save_memory(
    memory: Memory,
    content: str,
    *,
    project: str | None = None,
    type: str = "note",
    kind: str | None = None,
    title: str | None = None,
    session_id: str | None = None,
    topic_key: str | None = None,
    source: str = "memlane",
    source_id: str | None = None,
    created_at: datetime | None = None,
    files: Sequence[str] = (),
    tags: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
    dedup_window: timedelta | None = None,
) -> SaveResult:
    """Store one memory, or recognise it as an update or a duplicate (see the module doc)."""
    if not isinstance(content, str):
        raise InvalidInput("content must be text")
    kind = kind or kind_for_type(type)
    # An empty key is no key: stored as "" it would collide on the unique indexes.
    topic_key = topic_key or None
    source_id = source_id or None
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r} (one of: {', '.join(KINDS)})")
    type_ = (type or "note").strip().lower()
    clean = clip(memory.scrub(content).strip(), MAX_CONTENT_CHARS)
    if not clean:
        raise InvalidInput("nothing to save: the content is empty after privacy filtering")
    clean_title = clip(memory.scrub(title or "").strip(), MAX_TITLE_CHARS)
    digest = privacy.hash_scrubbed(clean)
    project = memory.resolve_project(project)
    moment = created_at or utcnow()
    now = utcnow()
    clean_meta = scrub_metadata(memory, metadata or {})
    # Tags and linked paths are stored and indexed too: a secret there leaks the same.
    files = tuple(memory.scrub(f) for f in files)
    tags = tuple(memory.scrub(t) for t in tags)
    store = memory.store
    with store.transaction():
        if session_id:
            memory.touch_session(
                session_id, project, now=max(moment, now) if created_at is None else moment
            )
        existing: MemoryRecord | None = None
        if topic_key:
            existing = store.find_memory(project, topic_key=topic_key)
        if existing is None and source_id:
            existing = store.find_memory(project, source=source, source_id=source_id)
            if existing is not None and existing.normalized_hash == digest:
                return SaveResult("deduplicated", existing.id)
        if existing is not None:
            changes: dict[str, Any] = {
                "content": clean,
                "normalized_hash": digest,
                "revision_count": existing.revision_count + 1,
                "updated_at": now,
                "type": type_,
                "kind": kind,
                "files": tuple(files) or existing.files,
                "tags": tuple(tags) or existing.tags,
            }
            if clean_title:
                changes["title"] = clean_title
            if session_id:
                changes["session_id"] = session_id
            if metadata is not None:
                changes["metadata"] = {**existing.metadata, **clean_meta}
            store.update_memory(existing.id, changes)
            return SaveResult("updated", existing.id)
        duplicate = find_duplicate(memory, project, kind, type_, digest, moment, dedup_window)
        if duplicate is not None:
            return SaveResult("deduplicated", duplicate.id)
        new_id = store.insert_memory(
            NewMemory(
                project=project,
                kind=kind,
                type=type_,
                content=clean,
                normalized_hash=digest,
                created_at=moment,
                title=clean_title,
                session_id=session_id,
                files=tuple(files),
                tags=tuple(tags),
                topic_key=topic_key,
                source=source,
                source_id=source_id,
                metadata=clean_meta,
            )
        )
    return SaveResult("created", new_id)


def find_duplicate(
    memory: Memory,
    project: str,
    kind: str,
    type_: str,
    digest: str,
    moment: datetime,
    window: timedelta | None,
) -> MemoryRecord | None:
    """The memory ``digest`` duplicates in ``project``, under the dedup rule of ``kind``."""
    if kind in PROJECT_WIDE_DEDUP and window is None:
        return memory.store.find_memory(project, normalized_hash=digest, kinds=(kind,))
    if kind == "observation" or window is not None:
        span = window if window is not None else DEFAULT_OBSERVATION_WINDOW
        found = memory.store.find_memory(
            project, normalized_hash=digest, kinds=(kind,), created_after=moment - span
        )
        if found is not None and found.type == type_:
            return found
    return None


def update_memory(
    memory: Memory,
    memory_id: int,
    *,
    content: str | None = None,
    title: str | None = None,
    type: str | None = None,
    tags: Sequence[str] | None = None,
    files: Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> MemoryRecord:
    """Edit a memory in place, privacy-filtered and clipped like a save."""
    current = memory.get(memory_id)
    changes: dict[str, Any] = {}
    if content is not None:
        clean = clip(memory.scrub(content).strip(), MAX_CONTENT_CHARS)
        if not clean:
            raise InvalidInput("content is empty after privacy filtering")
        changes.update(content=clean, normalized_hash=privacy.hash_scrubbed(clean))
    if title is not None:
        changes["title"] = clip(memory.scrub(title).strip(), MAX_TITLE_CHARS)
    if type is not None:
        changes["type"] = type.strip().lower()
    if tags is not None:
        changes["tags"] = tuple(memory.scrub(t) for t in tags)
    if files is not None:
        changes["files"] = tuple(memory.scrub(f) for f in files)
    if metadata is not None:
        changes["metadata"] = {**current.metadata, **scrub_metadata(memory, metadata)}
    if not changes:
        raise InvalidInput("nothing to change (give --content or --title)")
    changes["updated_at"] = utcnow()
    changes["revision_count"] = current.revision_count + 1
    memory.store.update_memory(memory_id, changes)
    return memory.get(memory_id)
