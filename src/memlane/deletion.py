"""Deleting memories by what a person names: id(s), session, age or project.

Criteria combine with AND and at least one is required, so an empty call can
never mean "everything". Selection and removal are separate steps, so a dry
run returns exactly the ids the real run removes (as long as nothing writes in
between). Deleting a whole session (the session alone, no id or age) also
removes its session row, in the same transaction as its memories.
Forgetting by query or file, with its log, is ``memlane.maintenance``'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memlane.errors import InvalidInput
from memlane.models import MemoryFilter

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from memlane.service import Memory


def select_for_delete(
    memory: Memory,
    *,
    id: int | None = None,
    ids: Sequence[int] | None = None,
    session_id: str | None = None,
    before: datetime | None = None,
    project: str | None = None,
) -> list[int]:
    """The ids of the memories matching every given criterion (``id`` must exist)."""
    wanted: list[int] | None = None
    if id is not None:
        memory.get(id)
        wanted = [id]
    if ids is not None:
        wanted = [*(wanted or []), *ids]
    if wanted is None and session_id is None and before is None and project is None:
        raise InvalidInput("say what to delete: --id, --session, --before or --project")
    flt = MemoryFilter(
        ids=tuple(wanted) if wanted is not None else None,
        session_id=session_id,
        created_before=before,
        projects=(project,) if project is not None else None,
    )
    return memory.store.memory_ids(flt)


def delete_memories(
    memory: Memory,
    *,
    id: int | None = None,
    ids: Sequence[int] | None = None,
    session_id: str | None = None,
    before: datetime | None = None,
    project: str | None = None,
    dry_run: bool = False,
) -> list[int]:
    """Delete the memories :func:`select_for_delete` selects; returns their ids."""
    selected = memory.select_for_delete(
        id=id, ids=ids, session_id=session_id, before=before, project=project
    )
    if not dry_run and selected:
        with memory.store.transaction():
            memory.store.delete_memories(selected)
            if session_id is not None and id is None and ids is None and before is None:
                memory.store.delete_sessions([session_id])
    return selected
