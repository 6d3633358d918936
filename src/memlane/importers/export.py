"""Export memories as JSON, JSONL or Markdown.

JSONL export writes the import record format of DESIGN §7 plus memlane's own
fields (kind, source, topic_key, memlane_id, …), so ``memlane import jsonl``
reads it back. The internal normalized hash never leaves the core.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from memlane.errors import InvalidInput
from memlane.models import Memory as MemoryRecord

if TYPE_CHECKING:
    from memlane.service import Memory

FORMATS = ("jsonl", "json", "markdown")


def memory_record(memory: MemoryRecord) -> dict[str, Any]:
    """The exported dict of one memory (import-compatible keys first)."""
    record: dict[str, Any] = {
        "id": memory.source_id or f"memlane:{memory.id}",
        "text": memory.content,
        "project": memory.project,
        "type": memory.type,
        "title": memory.title,
        "session": memory.session_id,
        "created_at": memory.created_at.isoformat(),
        "tags": list(memory.tags),
        "files": list(memory.files),
        "metadata": memory.metadata,
        "kind": memory.kind,
        "source": memory.source,
        "topic_key": memory.topic_key,
        "memlane_id": memory.id,
        "updated_at": memory.updated_at.isoformat(),
        "revision_count": memory.revision_count,
    }
    return record


def export(
    memory: Memory,
    out: TextIO,
    *,
    format: str,
    projects: tuple[str, ...] | None,
) -> int:
    if format not in FORMATS:
        raise InvalidInput(f"unknown export format {format!r} (one of: {', '.join(FORMATS)})")
    count = 0
    if format == "json":
        out.write("[")
        for memory_ in memory.iter_all(projects):
            out.write(
                ("," if count else "")
                + "\n"
                + json.dumps(memory_record(memory_), ensure_ascii=False)
            )
            count += 1
        out.write("\n]\n")
        return count
    for memory_ in memory.iter_all(projects):
        if format == "jsonl":
            out.write(json.dumps(memory_record(memory_), ensure_ascii=False) + "\n")
        else:
            out.write(_markdown(memory_))
        count += 1
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
    fence = "````" if "```" in memory.content else "```"
    lines += ["", fence, memory.content, fence, "", ""]
    return "\n".join(lines)
