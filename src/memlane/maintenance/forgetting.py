"""Forget: remove the memories a user names (by query, id, session or file).

Forget removes rows; the FTS index follows by triggers and vectors by
``ON DELETE CASCADE``; the injection log loses the text of every entry that
showed a forgotten memory (store triggers) and, forgetting by query, of every
entry whose prompt or text contains the query. The maintenance log records how
many went and by which selector, never the query text (it may be the very thing
to forget).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from memlane import arguments, memories
from memlane.errors import InvalidInput, NotFound
from memlane.maintenance._common import _fetch, _iter_memories, _projects
from memlane.maintenance.reports import ForgetReport, ForgottenMemory
from memlane.maintenance.staleness import project_roots
from memlane.models import Memory as MemoryRecord
from memlane.models import MemoryFilter, utcnow

if TYPE_CHECKING:
    from memlane.core import Core


def _label(m: MemoryRecord) -> str:
    text = " ".join((m.title or m.content).split())
    return text if len(text) <= 100 else text[:99] + "…"


def file_candidates(path: str, root: Path | None) -> tuple[str, ...]:
    """The spellings a linked file may be stored under (as given, relative, absolute)."""
    names = {path, os.path.normpath(path)}
    absolute = os.path.abspath(os.path.expanduser(path))
    names.add(absolute)
    for base in filter(None, (root, Path(os.getcwd()))):
        try:
            rel = os.path.relpath(absolute, base)
        except ValueError:  # another drive (Windows)
            continue
        if not rel.startswith(".."):
            names.add(rel)
    return tuple(sorted(n for n in names if n and n != "."))


def plan_forget(
    core: Core,
    query: str | None = None,
    *,
    memory_id: int | None = None,
    session_id: str | None = None,
    file: str | None = None,
    project: str | None = None,
    all_projects: bool = False,
) -> tuple[str, list[MemoryRecord]]:
    """(selector, memories to forget). Exactly one selector is required.

    QUERY matches memories whose title or content contains it (case-insensitive
    substring: forgetting is destructive, so no fuzzy ranking decides it).
    ``--id`` and ``--session`` ignore the project; QUERY and ``--file`` look in
    the project (or every project).
    """
    given = [
        name
        for name, value in (
            ("query", query),
            ("id", memory_id),
            ("session", session_id),
            ("file", file),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise InvalidInput(
            "say what to forget: a query, a memory id, a session or a file (exactly one)"
        )
    store = core.store
    if memory_id is not None:
        found = memories.get_many(core, [memory_id])
        if not found:
            raise NotFound(f"no memory with id {memory_id} ({memories.MEMORY_ID_HINT})")
        return "id", found
    session_id = arguments.narrowing_text(
        "the session id", session_id, "name the session whose memories to forget"
    )
    if session_id is not None:
        return "session", list(_iter_memories(store, MemoryFilter(session_id=session_id)))
    projects = _projects(core, project, all_projects)
    file = arguments.narrowing_text("the file path", file, "name the file whose memories to forget")
    if file is not None:
        root = project_roots().get(core.resolve_project(project))
        flt = MemoryFilter(projects=projects, files=file_candidates(file.strip(), root))
        return "file", list(_iter_memories(store, flt))
    assert query is not None
    needle = arguments.required_text(
        "the query", query, "give the text of the memories to forget"
    ).strip()
    hits = store.like_candidates(needle, MemoryFilter(projects=projects), 10_000_000)
    ids = sorted(memory_id for memory_id, _ in hits)
    return "query", list(_fetch(store, ids))


def forget(
    core: Core,
    query: str | None = None,
    *,
    memory_id: int | None = None,
    session_id: str | None = None,
    file: str | None = None,
    project: str | None = None,
    all_projects: bool = False,
    dry_run: bool = False,
) -> ForgetReport:
    """Remove matching memories everywhere (rows, FTS by triggers, vectors by cascade)."""
    started = utcnow()
    selector, found = plan_forget(
        core,
        query,
        memory_id=memory_id,
        session_id=session_id,
        file=file,
        project=project,
        all_projects=all_projects,
    )
    found.sort(key=lambda m: m.id)
    items = tuple(ForgottenMemory(m.id, m.project, m.kind, m.type, _label(m)) for m in found)
    sessions: tuple[str, ...] = ()
    if session_id is not None and core.store.get_session(session_id) is not None:
        sessions = (session_id,)
    report = ForgetReport(dry_run, selector, items, sessions)
    if dry_run:
        return report
    cleared = 0
    with core.store.transaction():
        core.store.delete_memories([m.id for m in found])
        if sessions:
            core.store.delete_sessions(list(sessions))
        if query is not None:
            projects = _projects(core, project, all_projects)
            cleared = core.store.forget_injection_text(query.strip(), projects)
    core.store.log_maintenance(
        "forget", started, {"selector": selector, "removed": len(items), "log_cleared": cleared}
    )
    return replace(report, log_cleared=cleared)
