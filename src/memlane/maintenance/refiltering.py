"""Stored text through today's privacy filter: for rules added after it was stored.

Every text is filtered before it is stored, by the rules of that day. When a later
version masks more (a password piped to ``docker login``, a ``.pgpass`` line), what
was stored before keeps it. :func:`refilter` passes every stored memory (title,
content, type, topic key, linked files, tags, metadata: the cleaning
:mod:`memlane.memories` gives a new one, with its helpers), every session's transcript
path, every entry of the injection log
and every feedback mark's prompt through the filter again. A memory the filter changes
is updated in place (its full-text entry follows by trigger, its vectors are dropped
for the worker to compute again, its dedup hash is that of the new content); a log
entry is cleared, as a deleted memory's are; a mark is dropped, as ``forget`` drops
one. ``dry_run`` only counts.

Names are not masked: the write path refuses a project name, session id, source id,
type or agent the filter would change (``Core.plain_name``: masked, two names would
become one): a restored or migrated row known by such a name is left out; a row of this
database is kept and listed (``RefilterReport.named``: a configured pattern may match a
project's name, and a pass that runs by itself must not delete the project). A memory
with no content left once filtered is deleted (:class:`Screen`). A masked topic key
another memory of the project holds already is dropped (the write path would have
merged the two).

Maintenance runs it once per filter (:func:`refilter_once`): the filter's version
is a hash of the code of the privacy modules and the configured
``secret_patterns``, recorded in the database when a pass has used it, so an
upgrade that masks more reaches what is stored without anyone asking; the run says
how many memories it deleted, and this database keeps its transcript paths. A database
from elsewhere (a restored backup) is passed whatever it records
(:func:`refilter_all`), and its transcript paths are dropped as an import drops them:
they are this machine's hooks' to give. ``memlane migrate-store`` passes what it
copies through the same :class:`Screen` before writing it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import resources
from typing import TYPE_CHECKING, Any

from memlane import memories, privacy, sessions
from memlane.errors import InvalidInput, NothingToStore
from memlane.models import MemoryFilter
from memlane.store.base import NO_LIMIT

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.models import Memory, Session

# Memories read per round trip.
BATCH = 500
# The modules whose code is the privacy filter, and where a database records the
# versions of it a pass has used.
FILTER_MODULES = (
    "privacy.py",
    "secret_forms.py",
    "secret_rules.py",
    "secret_gates.py",
    "secret_values.py",
    "secret_words.py",
)
FILTER_NAMESPACE = "privacy-filter"


@dataclass(frozen=True, slots=True)
class RefilterReport:
    """What :func:`refilter` changed (or, ``dry_run``, would change): memories and
    sessions updated, and deleted for a name the filter changes, log entries cleared
    and the prompts whose feedback marks were dropped."""

    dry_run: bool
    memories: tuple[int, ...]
    sessions: tuple[str, ...]
    log_entries: tuple[int, ...]
    deleted_memories: tuple[int, ...] = ()
    deleted_sessions: tuple[str, ...] = ()
    mark_prompts: int = 0
    # This database's memories and sessions known by a name today's filter takes for a
    # secret: kept (:meth:`Screen.names_kept`).
    named: tuple[int | str, ...] = ()
    # This database's memories with a field the write path refuses today (metadata nested
    # too deep, a tag that is no string): kept, that field as stored.
    unfit: tuple[int, ...] = ()


class Screen:
    """Today's filter over rows of a database, as the write path would store them.

    ``changes`` of a row are the fields the filter changes (empty: none), or None
    when the row is not kept: all of a memory's content is a secret, or (a foreign row)
    the write path would refuse it — a name it is known by holds a secret, a
    ``<private>`` block or a control character (:meth:`Core.plain_name`), or a field
    it cannot store: a type it refuses, metadata nested too deep, too many tags
    (:meth:`names_kept` and :meth:`memory_changes` say what this database's rows keep).
    ``foreign``: the rows come from elsewhere, and a session's transcript path is
    dropped. ``copying``: the rows go into an empty store, one by one, so the topic
    keys taken so far are those this screen saw (else the store is asked).
    """

    def __init__(self, core: Core, *, foreign: bool, copying: bool = False) -> None:
        self.core = core
        self.foreign = foreign
        self._plain: dict[str, bool] = {}
        self._types: dict[str, str] = {}  # a stored type: its cleaned one
        self.named: list[int | str] = []  # this database's rows named by a secret, kept
        self.unfit: list[int] = []  # this database's memories with a field refused, kept
        self._keys: set[tuple[str, str]] | None = set() if copying else None
        # The write path's helper for each field of a memory besides its texts.
        self._cleaners: dict[str, Callable[[Any], Any]] = {
            "type": self._type,
            "files": partial(memories.clean_list, core, what="files"),
            "tags": partial(memories.clean_list, core, what="tags"),
            "metadata": partial(memories.clean_metadata, core),
        }

    def names_kept(self, row: int | str, names: tuple[str | None, ...]) -> bool:
        """Whether a row known by ``names`` is kept. A foreign row with a name the write
        path refuses is not. This database's rows were stored under the rules of their
        day: one whose name today's filter takes for a secret (a configured pattern
        ``acme`` and the project ``acme-web``) is kept and listed in ``named``, for the
        user to judge — a pass that runs by itself must not delete a project."""
        if all(self.plain(name) for name in names):
            return True
        if self.foreign:
            return False
        self.named.append(row)
        return True

    def plain(self, name: str | None) -> bool:
        """Whether ``name`` is one the write path stores (None and "" are no name)."""
        if not name:
            return True
        known = self._plain.get(name)
        if known is None:
            try:
                self.core.plain_name("name", name)
                known = True
            except InvalidInput:
                known = False
            self._plain[name] = known
        return known

    def memory_changes(self, memory: Memory) -> dict[str, Any] | None:
        """The fields of ``memory`` the filter changes, each cleaned as the write path
        cleans a new memory's (:mod:`memlane.memories`), with the new dedup hash; None:
        it is not kept. A field the write path refuses today (metadata nested too deep,
        too many tags) leaves a foreign row out; this database's row keeps it as stored,
        and its other fields are filtered all the same."""
        names = (memory.project, memory.session_id, memory.source_id, memory.type)
        listed = len(self.named)
        if not self.names_kept(memory.id, names):
            return None
        changes: dict[str, Any] = {}
        try:
            content = memories.clean_content(self.core, memory.content)
        except NothingToStore:  # all of it was a secret
            return None
        if content != memory.content:
            changes["content"] = content
            changes["normalized_hash"] = privacy.hash_scrubbed(content)
        if (title := memories.clean_title(self.core, memory.title)) != memory.title:
            changes["title"] = title
        unfit = False
        for field, clean in self._cleaners.items():
            stored = getattr(memory, field)
            value = self._cleaned(clean, stored)
            if value is None:  # refused by the write path today
                if self.foreign:
                    return None
                unfit = True
            elif value != stored:
                changes[field] = value
        if unfit and len(self.named) == listed:  # a type named by a secret is said once
            self.unfit.append(memory.id)
        if memory.topic_key:
            key = self._topic_key(memory)
            if key != memory.topic_key:
                changes["topic_key"] = key
        return changes

    def _cleaned(self, clean: Callable[[Any], Any], value: Any) -> Any:
        """``value`` cleaned by the write path's helper ``clean``; None when that refuses
        it. This database's tags or files refused only for their number (strings all, more
        than a memory keeps today) are masked all the same."""
        try:
            return clean(value)
        except InvalidInput:
            if self.foreign or not _strings(value):
                return None
            return memories.clean_strings(self.core, value)

    def _type(self, stored: str) -> str:
        """:func:`memories.clean_type`, once per distinct type (a few types, many memories)."""
        cleaned = self._types.get(stored)
        if cleaned is None:
            cleaned = self._types[stored] = memories.clean_type(self.core, stored)
        return cleaned

    def _topic_key(self, memory: Memory) -> str | None:
        """``memory``'s topic key masked as the write path masks it; None when another
        memory of the project holds that key (it would have been an update of it)."""
        assert memory.topic_key
        key = self.core.scrub(memory.topic_key) or None
        if key is None:
            return None
        if self._keys is not None:
            if (memory.project, key) in self._keys:
                return None
            self._keys.add((memory.project, key))
        elif key != memory.topic_key:
            holder = self.core.store.find_memory(memory.project, topic_key=key)
            if holder is not None and holder.id != memory.id:
                return None
        return key

    def session_changes(self, session: Session) -> dict[str, Any] | None:
        """The fields of ``session`` the filter changes; None: it is not kept."""
        names = tuple(name for _what, name in sessions.session_names(session))
        if not self.names_kept(session.id, names):
            return None
        path = None if self.foreign else self.core.stored_path(session.transcript_path)
        return {} if path == session.transcript_path else {"transcript_path": path}


def _strings(value: Any) -> bool:
    """Whether ``value`` is a stored tags or files tuple of strings only."""
    return isinstance(value, tuple) and all(isinstance(item, str) for item in value)


def refilter(core: Core, *, dry_run: bool = False, foreign: bool = False) -> RefilterReport:
    """Pass the stored texts through the privacy filter again (module docstring);
    ``foreign``: the database comes from elsewhere (:class:`Screen`)."""
    store = core.store
    screen = Screen(core, foreign=foreign)
    changed: list[int] = []
    deleted: list[int] = []
    ids = store.memory_ids(MemoryFilter())
    for start in range(0, len(ids), BATCH):
        for memory in store.get_memories(ids[start : start + BATCH]):
            changes = screen.memory_changes(memory)
            if changes is None:
                deleted.append(memory.id)
            elif changes:
                changed.append(memory.id)
                if not dry_run:
                    store.update_memory(memory.id, changes)
    if deleted and not dry_run:
        store.delete_memories(deleted)
    sessions: list[str] = []
    gone: list[str] = []
    for session in store.list_sessions(limit=NO_LIMIT):
        session_changes = screen.session_changes(session)
        if session_changes is None:
            gone.append(session.id)
        elif session_changes:
            sessions.append(session.id)
            if not dry_run:
                store.update_session(session.id, session_changes)
    if gone and not dry_run:
        store.delete_sessions(gone)
    entries = [
        entry.id
        for entry in store.list_injections(limit=NO_LIMIT)
        if core.scrub(entry.prompt) != entry.prompt or core.scrub(entry.text) != entry.text
    ]
    if entries and not dry_run:
        store.clear_injection_text(entries)
    prompts = [prompt for prompt in store.feedback_prompts() if core.scrub(prompt) != prompt]
    if prompts and not dry_run:
        store.delete_feedback(prompts)
    return RefilterReport(
        dry_run,
        tuple(changed),
        tuple(sessions),
        tuple(entries),
        tuple(deleted),
        tuple(gone),
        len(prompts),
        tuple(screen.named),
        tuple(screen.unfit),
    )


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
    """:func:`refilter` of this database, unless a pass already used this filter (None
    then); records it. Its own transcript paths are kept (masked)."""
    version = filter_version(core)
    if core.store.seen(FILTER_NAMESPACE, [version]):
        return None
    report = refilter(core)
    core.store.mark_seen(FILTER_NAMESPACE, [version])
    return report


def refilter_all(core: Core) -> RefilterReport:
    """:func:`refilter` whatever the database says, then record this filter as used.

    For a database from elsewhere (a restored backup): its record of the passes made
    is its own word, and a crafted file records today's filter over raw secrets. Its
    transcript paths are dropped (``foreign``).
    """
    report = refilter(core, foreign=True)
    core.store.mark_seen(FILTER_NAMESPACE, [filter_version(core)])
    return report
