"""``memlane salvage``: the readable memories of a damaged database as a JSONL export.

The output is memlane's own JSONL export (:mod:`memlane.interop.export`): a
header, the readable sessions, then the readable memories, each named by the
identity it had in the damaged database, so ``memlane import jsonl`` into a
fresh database brings them back (and a second import adds nothing). The
damaged file is only read (:mod:`memlane.store.sqlite_salvage`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.interop.export import export_header, memory_record, session_record
from memlane.interop.identity import instance_for
from memlane.paths import same_file
from memlane.store.sqlite_salvage import SalvageReader


@dataclass(frozen=True, slots=True)
class SalvageReport:
    """What a salvage wrote and what it could not read."""

    memories: int
    lost_memories: int
    sessions: int
    lost_sessions: int
    sessions_unread: bool


def salvage(settings: Settings, out: TextIO) -> SalvageReport:
    """Write the readable rows of ``settings``' SQLite database to ``out`` (JSONL)."""
    target = settings.database
    if "://" in target:
        raise InvalidInput(
            f"salvage reads a SQLite file, not {settings.database_display}; a damaged"
            " PostgreSQL database is repaired with PostgreSQL's own tools"
        )
    path = Path(target).expanduser()
    reader = SalvageReader(path)
    try:
        instance = instance_for(
            settings.paths.data_dir, target, default=same_file(path, settings.paths.db_path)
        )
        header = {**export_header(instance), "salvaged_from": str(path)}
        out.write(json.dumps({"record": "header", **header}, ensure_ascii=False) + "\n")
        sessions = 0
        for session in reader.sessions():
            out.write(json.dumps(session_record(session), ensure_ascii=False) + "\n")
            sessions += 1
        memories = 0
        for memory in reader.memories():
            try:
                line = json.dumps(memory_record(memory, instance), ensure_ascii=False)
            except (TypeError, ValueError):  # a value no JSON holds (from a damaged page)
                reader.drop(memory.id)
                continue
            out.write(line + "\n")
            memories += 1
    finally:
        reader.close()
    return SalvageReport(
        memories=memories,
        lost_memories=reader.lost_memories,
        sessions=sessions,
        lost_sessions=reader.lost_sessions,
        sessions_unread=reader.sessions_unread,
    )
