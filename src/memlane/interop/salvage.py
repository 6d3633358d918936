"""``memlane salvage``: the readable memories of a damaged database as a JSONL export.

The output is memlane's own JSONL export (:mod:`memlane.interop.export`): a
header, the readable sessions, then the readable memories, each named by the
identity it had in the damaged database, so ``memlane import jsonl`` into a
fresh database brings them back (and a second import adds nothing). The
damaged file is only read (:mod:`memlane.store.sqlite_salvage`).

A row is written only when the import would take it (the import's own checks,
:func:`~memlane.interop.roundtrip.parse_memory` and ``parse_session``): one holding
what no memory or session can (an unknown kind, a negative count, a time ahead of
the clock, bytes: a damaged or crafted file) is counted as unreadable instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.interop.export import export_header, memory_record, session_record
from memlane.interop.identity import instance_for
from memlane.interop.roundtrip import parse_memory, parse_session
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
            line = _importable(session_record(session), parse_session)
            if line is None:
                reader.drop_session()
                continue
            out.write(line)
            sessions += 1
        memories = 0
        for memory in reader.memories():
            line = _importable(memory_record(memory, instance), parse_memory)
            if line is None:
                reader.drop(memory.id)
                continue
            out.write(line)
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


def _importable(record: dict[str, Any], parse: Callable[[dict[str, Any]], object]) -> str | None:
    """``record`` as a JSONL line, None when ``memlane import`` would refuse it."""
    try:
        parse(record)
        return json.dumps(record, ensure_ascii=False) + "\n"
    except (InvalidInput, TypeError, ValueError):  # a value no memory holds, or no JSON
        return None
