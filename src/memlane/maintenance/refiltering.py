"""Stored text through today's privacy filter: for rules added after it was stored.

Every text is filtered before it is stored, by the rules of that day. When a later
version masks more (a password piped to ``docker login``, a ``.pgpass`` line), what
was stored before keeps it. :func:`refilter` passes every stored memory (title,
content, linked files, tags, metadata: the cleaning :mod:`memlane.memories` gives a
new one), every session's transcript path and every entry of the injection log
through the filter again. A memory the filter changes is updated in place (its
full-text entry follows by trigger, its vectors are dropped for the worker to
compute again, its dedup hash is that of the new content); a log entry is cleared,
as a deleted memory's are. ``dry_run`` only counts.

Maintenance runs it once per filter (:func:`refilter_once`): the filter's version
is a hash of the code of the privacy modules and the configured
``secret_patterns``, recorded in the database when a pass has used it, so an
upgrade that masks more reaches what is stored without anyone asking. A restore
runs it whatever the restored file records (:func:`refilter_all`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from memlane import memories, privacy
from memlane.models import MemoryFilter
from memlane.store.base import NO_LIMIT

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.models import Memory

# Memories read per round trip.
BATCH = 500
# The modules whose code is the privacy filter, and where a database records the
# versions of it a pass has used.
FILTER_MODULES = (
    "privacy.py",
    "secret_rules.py",
    "secret_gates.py",
    "secret_values.py",
    "secret_words.py",
)
FILTER_NAMESPACE = "privacy-filter"


@dataclass(frozen=True, slots=True)
class RefilterReport:
    """What :func:`refilter` changed (or, ``dry_run``, would change)."""

    dry_run: bool
    memories: tuple[int, ...]
    sessions: tuple[str, ...]
    log_entries: tuple[int, ...]


def refilter(core: Core, *, dry_run: bool = False) -> RefilterReport:
    """Pass the stored texts through the privacy filter again (module docstring)."""
    store = core.store
    changed: list[int] = []
    ids = store.memory_ids(MemoryFilter())
    for start in range(0, len(ids), BATCH):
        for memory in store.get_memories(ids[start : start + BATCH]):
            changes = _memory_changes(core, memory)
            if changes:
                changed.append(memory.id)
                if not dry_run:
                    store.update_memory(memory.id, changes)
    sessions: list[str] = []
    for session in store.list_sessions(limit=NO_LIMIT):
        kept = core.stored_path(session.transcript_path)
        if kept != session.transcript_path:
            sessions.append(session.id)
            if not dry_run:
                store.update_session(session.id, {"transcript_path": kept})
    entries = [
        entry.id
        for entry in store.list_injections(limit=NO_LIMIT)
        if core.scrub(entry.prompt) != entry.prompt or core.scrub(entry.text) != entry.text
    ]
    if entries and not dry_run:
        store.clear_injection_text(entries)
    return RefilterReport(dry_run, tuple(changed), tuple(sessions), tuple(entries))


def _memory_changes(core: Core, memory: Memory) -> dict[str, Any]:
    """The fields of ``memory`` today's filter changes, cleaned as a new memory's are
    (:mod:`memlane.memories`), with the new dedup hash."""
    changes: dict[str, Any] = {}
    content = memories.clean_content(core, memory.content)
    if content != memory.content:
        changes["content"] = content
        changes["normalized_hash"] = privacy.hash_scrubbed(content)
    if (title := memories.clean_title(core, memory.title)) != memory.title:
        changes["title"] = title
    for field in ("files", "tags"):
        values = getattr(memory, field)
        if (cleaned := memories.clean_strings(core, values)) != tuple(values):
            changes[field] = cleaned
    if memory.metadata and (meta := memories.clean_metadata(core, memory.metadata)) != (
        memory.metadata
    ):
        changes["metadata"] = meta
    return changes


def filter_version(core: Core) -> str:
    """A hash of the filter ``core`` applies: its modules' code and ``secret_patterns``."""
    digest = hashlib.sha256()
    package = resources.files("memlane")
    for name in FILTER_MODULES:
        digest.update(package.joinpath(name).read_bytes())
    for pattern in core.settings.secret_patterns:
        digest.update(b"\0" + pattern.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def refilter_once(core: Core) -> RefilterReport | None:
    """:func:`refilter` unless a pass already used this filter (None then); records it."""
    if core.store.seen(FILTER_NAMESPACE, [filter_version(core)]):
        return None
    return refilter_all(core)


def refilter_all(core: Core) -> RefilterReport:
    """:func:`refilter` whatever the database says, then record this filter as used.

    For a database from elsewhere (a restored backup): its record of the passes made
    is its own word, and a crafted file records today's filter over raw secrets.
    """
    report = refilter(core)
    core.store.mark_seen(FILTER_NAMESPACE, [filter_version(core)])
    return report
