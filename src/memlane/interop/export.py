"""Export memories (and their sessions) as JSON, JSONL or Markdown.

JSON and JSONL exports are lossless: reading one back with ``memlane import
memlane FILE`` (or ``memlane import jsonl FILE`` for JSONL) restores every
memory with its identity, kind, type, session, topic key, source, timestamps,
counters and structured metadata (summaries and checkpoints included), the
sessions themselves, and optionally the vectors (base64 float32 per model).

* JSONL: a header line ``{"record": "header", "format": "memlane-export", …}``,
  then one line per session (``"record": "session"``) and per memory
  (``"record": "memory"``). Memory lines keep the keys of the plain import
  record of DESIGN §7 (``id``, ``text``, ``project``, ``type`` …) so other
  tools can read them.
* JSON: ``{"format": "memlane-export", "version": 2, "sessions": [...],
  "memories": [...]}``.
* Markdown: for people; not importable.

Each memory carries its ``identity`` (see :mod:`memlane.interop.identity`)
which names the database it was born in and its id there; that is how a
second import of the same export adds nothing. The internal normalized hash
never leaves the core.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from memlane.errors import InvalidInput
from memlane.interop.identity import UID, identity_of, instance_id
from memlane.memories import iter_all
from memlane.models import Memory as MemoryRecord
from memlane.models import Session, utcnow
from memlane.store.base import NO_LIMIT

if TYPE_CHECKING:
    from memlane.core import Core

FORMATS = ("jsonl", "json", "markdown")
EXPORT_FORMAT = "memlane-export"
EXPORT_VERSION = 2


def export_header(
    instance: str, projects: Sequence[str] | None = None, vectors: bool = False
) -> dict[str, Any]:
    """The fields of an export's first record (``record: header``): format, version,
    time, the exporting instance, the projects it holds (None: all), vectors or not."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": utcnow().isoformat(),
        "instance": instance,
        "projects": None if projects is None else list(projects),
        "vectors": vectors,
    }


def _iso(moment: Any) -> str | None:
    return None if moment is None else str(moment.isoformat())


def memory_record(
    memory: MemoryRecord, instance: str, vectors: dict[str, bytes] | None = None
) -> dict[str, Any]:
    """The exported dict of one memory (import-compatible keys first)."""
    identity = identity_of(memory, instance)
    # A copy's ``uid:`` source_id is our own bookkeeping, not a source key.
    own_source_id = None if (memory.source_id or "").startswith(UID) else memory.source_id
    record: dict[str, Any] = {
        "record": "memory",
        "id": own_source_id or "memlane:" + identity[len(UID) :],
        "text": memory.content,
        "project": memory.project,
        "type": memory.type,
        "title": memory.title,
        "session": memory.session_id,
        "created_at": _iso(memory.created_at),
        "tags": list(memory.tags),
        "files": list(memory.files),
        "metadata": memory.metadata,
        "kind": memory.kind,
        "source": memory.source,
        "source_id": own_source_id,
        "topic_key": memory.topic_key,
        "identity": identity,
        "memlane_id": memory.id,
        "updated_at": _iso(memory.updated_at),
        "revision_count": memory.revision_count,
        "access_count": memory.access_count,
        "last_accessed_at": _iso(memory.last_accessed_at),
        "stale": memory.stale,
    }
    if vectors:
        record["vectors"] = {
            model: base64.b64encode(blob).decode("ascii") for model, blob in vectors.items()
        }
    return record


def session_record(session: Session) -> dict[str, Any]:
    """The exported dict of one session."""
    return {
        "record": "session",
        "id": session.id,
        "project": session.project,
        "agent": session.agent,
        "status": session.status,
        "started_at": _iso(session.started_at),
        "ended_at": _iso(session.ended_at),
        "last_activity_at": _iso(session.last_activity_at),
        "transcript_path": session.transcript_path,
        "transcript_offset": session.transcript_offset,
        "prompt_count": session.prompt_count,
        "parent_session_id": session.parent_session_id,
    }


def load_vectors(core: Core) -> dict[int, dict[str, bytes]]:
    """Every stored vector, by memory id then model (held in memory: opt-in only)."""
    vectors: dict[int, dict[str, bytes]] = {}
    for model in core.store.embedding_counts():
        for batch in core.store.iter_embeddings(model):
            for memory_id, blob in batch:
                vectors.setdefault(memory_id, {})[model] = blob
    return vectors


def iter_records(
    core: Core,
    projects: tuple[str, ...] | None,
    *,
    with_vectors: bool = False,
) -> Iterator[dict[str, Any]]:
    """Session records, then memory records (oldest first) of ``projects``."""
    instance = instance_id(core)
    for session in sorted(
        core.store.list_sessions(projects=projects, limit=NO_LIMIT),
        key=lambda s: (s.started_at, s.id),
    ):
        yield session_record(session)
    vectors = load_vectors(core) if with_vectors else {}
    for record in iter_all(core, projects):
        yield memory_record(record, instance, vectors.get(record.id))


def export(
    core: Core,
    out: TextIO,
    *,
    format: str = "jsonl",
    project: str | None = None,
    with_vectors: bool = False,
) -> int:
    """Write the memories of ``project`` (None: every project) to ``out``; returns how many."""
    if format not in FORMATS:
        raise InvalidInput(f"unknown export format {format!r} (one of: {', '.join(FORMATS)})")
    projects = None if project is None else core.projects_for(project, False)
    if format == "markdown":
        count = 0
        for record in iter_all(core, projects):
            out.write(_markdown(record))
            count += 1
        return count
    header = export_header(instance_id(core), projects, with_vectors)
    count = 0
    if format == "jsonl":
        out.write(json.dumps({"record": "header", **header}, ensure_ascii=False) + "\n")
        for item in iter_records(core, projects, with_vectors=with_vectors):
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += item["record"] == "memory"
        return count
    # JSON: streamed by hand so a large export never sits in memory twice.
    out.write(json.dumps(header, ensure_ascii=False)[:-1])
    out.write(', "sessions": [')
    first = True
    memories_open = False
    for item in iter_records(core, projects, with_vectors=with_vectors):
        if item["record"] == "memory" and not memories_open:
            out.write('\n], "memories": [')
            memories_open = True
            first = True
        out.write(("" if first else ",") + "\n" + json.dumps(item, ensure_ascii=False))
        first = False
        count += item["record"] == "memory"
    if not memories_open:
        out.write('\n], "memories": [')
    out.write("\n]}\n")
    return count


def _markdown(memory: MemoryRecord) -> str:
    title = memory.title or memory.content.splitlines()[0][:80]
    lines = [
        f"## {title}",
        "",
        f"- id: {memory.id} · project: {memory.project} · {memory.kind}/{memory.type}"
        f" · {memory.created_at:%Y-%m-%d %H:%M} UTC"
        + (f" · session {memory.session_id}" if memory.session_id else ""),
    ]
    if memory.files:
        lines.append("- files: " + ", ".join(memory.files))
    if memory.tags:
        lines.append("- tags: " + ", ".join(memory.tags))
    if memory.metadata:  # what an import kept of its record (a postmortem's root_cause)
        lines.append("- metadata: " + json.dumps(memory.metadata, ensure_ascii=False))
    fence = "````" if "```" in memory.content else "```"
    lines += ["", fence, memory.content, fence, "", ""]
    return "\n".join(lines)
