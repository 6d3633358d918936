"""The one write path: every memory, from every entry point, is stored here.

Save, edit, capture, transcript ingest, imports, sync pull, summaries and
checkpoints all describe what they want stored as a :class:`Draft` and hand it
to a :class:`Writer` (:func:`save` is a batch of one). :func:`prepare` turns it
into the row to store under the privacy rule, in this order, and nothing reaches
the store another way:

1. **privacy first** (invariant 1): content, title, tags, linked paths, topic
   key and every metadata key and string value go through :meth:`Core.scrub`
   before anything is clipped, titled or hashed (a secret cut in two by a clip
   is no longer recognised); content empty after that is refused
   (:class:`~memlane.errors.NothingToStore`). Text the privacy module vouches
   for (:func:`memlane.privacy.vouched`: cut from text it scrubbed) is not
   filtered twice (:class:`memlane.privacy.Filter` returns it as it is);
2. **bounded**: content and title are clipped (``MAX_CONTENT_CHARS``,
   ``MAX_TITLE_CHARS``) with a visible ``TRUNCATION_MARK``, except content a
   person or a client gave (``Draft.given``), which is refused when it does not
   fit, as given or once its secrets are masked (:func:`clean_content`); a title
   derived from the content (``derive_title``) is the scrubbed content's first line;
3. **one hash**: the normalized hash of the scrubbed, clipped content is the
   identity used for dedup, so a secret never reaches the hash either.

Then :meth:`Writer.save` stores it:

4. **upserts** (invariant 4): a ``topic_key`` (else ``source`` + ``source_id``)
   already present in the project is updated in place, its ``revision_count``
   bumped and the memory moved to the current session; a re-save that would
   change nothing (same content, and no new title, type, files, tags or
   metadata) is a duplicate, not a revision: the memory stays as it is, in
   its session;
5. **dedup**: knowledge, notes, summaries and checkpoints are duplicates
   project-wide; captured observations (or any draft with ``dedup_window``)
   only within a time window and with the same type, so the same command run
   again tomorrow is a new fact;
6. **activity**: the session of every write is touched (created when unknown)
   once per batch, inside the batch's transaction, so a save counts as session
   activity exactly when it lands. A draft with ``activity=False`` (the summary
   written when an idle session is closed) leaves the session's clock alone.

A lossless copy (export round trip, sync pull) carries :class:`Preserved`: its
timestamps and counters stay as exported, it is never deduplicated, it updates
the local copy its caller matched by identity (``Preserved.into``) or is
inserted, and it is not session activity. Steps 1-3 apply to it all the same.

Edits (:func:`update`) clean each given field with the same helpers. The rest
of what the facade does with memories lives here too: get, list, timeline,
selection for deletion and deletion.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from memlane import arguments, privacy
from memlane.errors import InvalidInput, NotFound, NothingToStore
from memlane.models import (
    KINDS,
    MAX_FILES,
    MAX_TAGS,
    MAX_TOPIC_KEY_CHARS,
    MAX_TYPE_CHARS,
    UNKNOWN_AGENT,
    MemoryFilter,
    NewMemory,
    SaveResult,
    Session,
    kind_for_type,
    possible_id,
    to_epoch,
)
from memlane.text import CONTROL_CHARACTERS, one_line

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.core import Core
    from memlane.models import Memory as MemoryRecord
    from memlane.store.base import Store

# Longest content stored for one memory. Text given for a memory (save, edit, the HTTP
# API, MCP, an import, a sync pull) that is longer, as given or once its secrets are
# masked, is refused (:func:`clean_content`): cutting it silently lost its end. Captured
# text (transcripts, tool output) and other tools' importers are clipped, marked.
MAX_CONTENT_CHARS = 64_000
MAX_TITLE_CHARS = 200
# Levels of dicts and lists in metadata, far above any tool's (a deeper one is refused).
MAX_METADATA_DEPTH = 64
DERIVED_TITLE_CHARS = 80
# A timeline's bounds (the CLI's; HTTP and MCP ask for less): memories of a range, and
# neighbours on each side of one memory.
MAX_TIMELINE = 1000
MAX_NEIGHBOURS = 200
TRUNCATION_MARK = "\n…[truncated by memlane]"
# Kinds whose duplicates are found project-wide; the others dedup inside a time window.
PROJECT_WIDE_DEDUP = frozenset({"knowledge", "note", "summary", "checkpoint"})
DEFAULT_OBSERVATION_WINDOW = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Preserved:
    """What a lossless copy keeps as exported: its version, counters and flags.

    ``into`` is the local copy the caller matched by identity (updated in
    place, counters never going down); None inserts a new memory.
    """

    updated_at: datetime
    revision_count: int = 0
    access_count: int = 0
    last_accessed_at: datetime | None = None
    stale: bool = False
    into: MemoryRecord | None = None


@dataclass(slots=True)  # not frozen: ingest builds one per chunk, and frozen init costs
class Draft:
    """A memory as an entry point wants it stored, before the privacy rule.

    ``derive_title``: without a title, use the first line of the scrubbed
    content. ``activity``: whether the write counts as activity of its session.
    ``agent``: who writes it (a hook's agent), named on its session when the session
    has no agent yet (:func:`touch_session`).
    ``given``: the content is text a person or a client sent (save, an import's record,
    a sync pull), refused rather than clipped when it does not fit (:func:`clean_content`).
    ``fresh_source_id``: the caller has just allocated ``source_id`` and checked
    that no memory holds it (transcript chunk indexes), so there is nothing to
    upsert and no lookup is made. ``preserved``: set for a lossless copy (see
    the module docstring).
    """

    content: str
    project: str | None = None
    type: str = "note"
    kind: str | None = None
    title: str | None = None
    session_id: str | None = None
    topic_key: str | None = None
    source: str = "memlane"
    source_id: str | None = None
    created_at: datetime | None = None
    files: Sequence[str] = ()
    tags: Sequence[str] = ()
    metadata: dict[str, Any] | None = None
    dedup_window: timedelta | None = None
    derive_title: bool = False
    activity: bool = True
    given: bool = False
    fresh_source_id: bool = False
    preserved: Preserved | None = None
    agent: str = UNKNOWN_AGENT


# -- the privacy rule, one helper per kind of field ---------------------------------


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with ``TRUNCATION_MARK``."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_MARK)] + TRUNCATION_MARK


def given_content(text: str, what: str = "the content") -> str:
    """``text`` given for one memory by a person or a client, when it fits one
    (:data:`MAX_CONTENT_CHARS`, leading and trailing blanks aside); else InvalidInput."""
    if isinstance(text, str) and len(text) > MAX_CONTENT_CHARS:
        size = len(text.strip())
        if size > MAX_CONTENT_CHARS:
            raise InvalidInput(
                f"{what} is {size:,} characters; a memory holds at most {MAX_CONTENT_CHARS:,}"
                " (nothing saved: split it into several memories)"
            )
    return text


def clean_content(core: Core, text: str, *, given: bool = False) -> str:
    """Scrubbed and stripped content, at most :data:`MAX_CONTENT_CHARS`; NothingToStore
    when nothing is left. Longer, it is clipped with :data:`TRUNCATION_MARK`, or refused
    (InvalidInput) when ``given`` (text a person or a client sent: a marker can be
    longer than the secret it replaces, so text that fits can outgrow a memory)."""
    if not isinstance(text, str):
        raise InvalidInput("content must be text")
    if given:
        given_content(text)  # before scrubbing a text that cannot fit
    if not text.strip():  # blank as given: privacy filtering had no part in it
        raise NothingToStore("nothing to save: the content is empty")
    clean = core.scrub(text).strip()
    if len(clean) > MAX_CONTENT_CHARS:
        if given:
            raise InvalidInput(
                f"the content is {len(text.strip()):,} characters, {len(clean):,} once its"
                f" secrets are masked; a memory holds at most {MAX_CONTENT_CHARS:,}"
                " (nothing saved: split it into several memories)"
            )
        clean = clip(clean, MAX_CONTENT_CHARS)
    if not clean:
        raise NothingToStore("nothing to save: the content is empty after privacy filtering")
    return clean


def clean_title(core: Core, text: str | None) -> str:
    """A given title, scrubbed, stripped and clipped ('' for none)."""
    return clip(core.scrub(text).strip(), MAX_TITLE_CHARS) if text else ""


def derived_title(clean: str) -> str:
    """The title of already scrubbed content: its first line, on one line, shortened."""
    end = clean.find("\n")
    return one_line(clean if end < 0 else clean[:end], DERIVED_TITLE_CHARS)


def clean_strings(core: Core, items: Sequence[str]) -> tuple[str, ...]:
    """Tags or linked paths, each scrubbed (a secret there leaks the same)."""
    return tuple(core.scrub(item) for item in items) if items else ()


def clean_list(core: Core, items: Sequence[str], what: str) -> tuple[str, ...]:
    """A memory's ``tags`` or ``files``, :func:`bounded` then :func:`clean_strings`, without
    the items that say nothing (blank, control characters only): an empty tag is no tag,
    as an empty topic key is no key (an agent may fill an optional list with ``""``, and
    an export of an older version may hold one)."""
    clean = clean_strings(core, bounded(items, what))
    return tuple(item for item in clean if not arguments.blank(item))


def bounded(items: Sequence[str], what: str) -> Sequence[str]:
    """``items`` (a memory's ``tags`` or ``files``) if there are not more than a memory
    keeps (:data:`memlane.models.MAX_TAGS`, ``MAX_FILES``), each a string
    (:func:`memlane.arguments.texts`); else InvalidInput. Checked before anything is
    scrubbed: 400,000 tags on one imported line took 16 s."""
    limit = MAX_TAGS if what == "tags" else MAX_FILES
    arguments.texts(what, items)
    if len(items) > limit:
        raise InvalidInput(f"{len(items):,} {what} (a memory keeps {limit} at most)")
    return items


# Metadata strings up to this long are remembered with their clean form in a run's
# ``seen`` (:func:`clean_metadata`): a transcript's units repeat the same keys, roles,
# kinds and turn ids hundreds of times.
SEEN_CHARS = 256

# A run's remembered metadata strings: (key, value) to the value scrubbed under the key
# (:func:`scrub_under`; a key itself is remembered as ("", key)).
Seen = dict[tuple[str, str], str]


def clean_metadata(
    core: Core,
    metadata: dict[str, Any],
    where: str = "metadata",
    depth: int = 0,
    seen: Seen | None = None,
) -> dict[str, Any]:
    """Every key and every string inside ``metadata`` scrubbed (tool inputs hide secrets).

    A number that is not finite (``1e999`` parses as infinity, ``NaN``) is refused:
    JSON has no spelling for it, so it would be stored and exported as invalid JSON.
    So is nesting deeper than ``MAX_METADATA_DEPTH`` (``depth``: this dict's level):
    walking it would exhaust Python's recursion limit, and anything but a dict.
    ``seen``: short strings already cleaned by the same core in this run (filled here).
    """
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInput(
            f"{core.scrub(where)[:200]} is nested deeper than {MAX_METADATA_DEPTH} levels;"
            " flatten it or store it as a string"
        )
    if not isinstance(metadata, dict):  # a crafted row, or a caller of the Python API
        raise InvalidInput(f"metadata must be an object (a dict), not {type(metadata).__name__}")
    # Strings (nearly every value) are scrubbed here and whole numbers kept, without
    # naming where they are.
    return {
        _seen_under(core, "", str(key), seen): (
            _seen_under(core, str(key), value, seen)
            if isinstance(value, str)
            else value
            if type(value) is int
            else _clean_value(core, value, f"{where}.{key}", depth + 1, str(key), seen)
        )
        for key, value in metadata.items()
    }


def _seen_under(core: Core, key: str, value: str, seen: Seen | None) -> str:
    """:func:`scrub_under`, answered from ``seen`` for a short plain string cleaned before
    (the same core, so the same filter: the same answer)."""
    if seen is None or len(value) > SEEN_CHARS or type(value) is not str:
        return scrub_under(core, key, value)
    pair = (key, value)
    clean = seen.get(pair)
    if clean is None:
        clean = seen[pair] = scrub_under(core, key, value)
    return clean


def scrub_under(core: Core, key: str, value: str) -> str:
    """``value`` scrubbed as the value of ``key``: ``{"db_password": "Quartz.9024!"}``
    is a secret by its key, which the value alone does not show. A one-line value is
    read as ``key=value`` would be in text (the same judgement: a placeholder, a word
    or a UUID under ``session_id`` stays); a value of several lines is read alone
    (and so is any value under the empty key: ``core.scrub(value)``)."""
    alone = core.scrub(value)
    if not key or "\n" in value or "\r" in value:
        return alone
    name = core.scrub(key)
    # After "=", a value opening with "=" or ">" reads as "==" or "=>" (code, left as it
    # is); under a key it is a value: "name: value" reads it as one.
    head = f"{name}: " if alone[:1] in ("=", ">") else f"{name}="
    paired = core.scrub(head + alone)
    # The key's own text is masked on its own (above); a pair read differently stays alone.
    return paired[len(head) :] if paired.startswith(head) else alone


def _clean_value(
    core: Core, value: Any, where: str, depth: int, key: str = "", seen: Seen | None = None
) -> Any:
    if isinstance(value, str):
        return _seen_under(core, key, value, seen)
    if isinstance(value, dict):
        return clean_metadata(core, value, where, depth, seen)
    if isinstance(value, list | tuple):
        if depth > MAX_METADATA_DEPTH:
            return clean_metadata(core, {}, where, depth)  # refused there
        # The items of a list under a key are its values: {"tokens": ["ghp_…"]}.
        return [
            _clean_value(core, item, f"{where}[{i}]", depth + 1, key, seen)
            for i, item in enumerate(value)
        ]
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(
            f"{core.scrub(where)} is {value}, not a finite number; store it as a string"
        )
    return value


def given_topic_key(key: object) -> str | None:
    """A topic key as a person or an agent gives it (CLI, HTTP, MCP, the Python API):
    an opaque string, kept as given — ``auth/tokens``, ``{"area":"auth"}``, ``[x]``.

    None or "" is no key (an agent's tool call often fills an optional field with "").
    One only of blanks, one holding a control character (a line break, an escape) or one
    longer than ``MAX_TOPIC_KEY_CHARS`` is refused: a key names one memory for later saves
    to update, so it must be typed again the same way. (A secret inside is masked by the
    write path, as everywhere.)
    """
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise InvalidInput(f"the topic key must be text, not {type(key).__name__}")
    if not key.strip():
        raise InvalidInput("the topic key is blank: give one such as auth/token-storage")
    if len(key) > MAX_TOPIC_KEY_CHARS:
        raise InvalidInput(
            f"the topic key is {len(key):,} characters long (at most {MAX_TOPIC_KEY_CHARS})"
        )
    if not key.isprintable() and re.search(CONTROL_CHARACTERS, key):
        raise InvalidInput("the topic key holds a control character; use another topic key")
    return key


def clean_type(core: Core, type: str) -> str:
    """``type`` trimmed and lower-cased; a category, so an empty one or one holding a
    secret is refused (:meth:`Core.plain_name`), not masked."""
    name = type.strip()
    if not name:
        raise InvalidInput(arguments.EMPTY_TYPE)
    if len(name) > MAX_TYPE_CHARS:
        raise InvalidInput(
            f"the type is {len(name):,} characters long (at most {MAX_TYPE_CHARS}):"
            " give one such as note, decision or bugfix"
        )
    # Checked as typed: lower-cased, a key id (``AKIA…``, ``AIza…``) no longer looks like one,
    # and upper-casing it again gives it back.
    return core.plain_name("type", name).lower()


def prepare(
    core: Core, draft: Draft, now: datetime | None = None, seen: Seen | None = None
) -> NewMemory:
    """The row ``draft`` becomes under the privacy rule (steps 1-3 of the module docstring).

    ``now`` dates a draft without ``created_at`` (default: the core's clock). ``seen``:
    metadata strings this core cleaned for the run's drafts before (:func:`clean_metadata`).
    """
    type_ = clean_type(core, (draft.type or "").strip() or "note")
    kind = draft.kind or kind_for_type(type_)
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r} (one of: {', '.join(KINDS)})")
    content = clean_content(core, draft.content, given=draft.given)
    title = clean_title(core, draft.title)
    if not title and draft.derive_title:
        title = derived_title(content)
    return NewMemory(
        project=core.resolve_project(draft.project),
        kind=kind,
        type=type_,
        content=content,
        normalized_hash=privacy.hash_scrubbed(content),
        created_at=draft.created_at or now or core.now(),
        title=title,
        # An empty key is no key: stored as "" it would collide on the unique indexes.
        session_id=core.plain_name("session id", draft.session_id) if draft.session_id else None,
        files=clean_list(core, draft.files, "files"),
        tags=clean_list(core, draft.tags, "tags"),
        topic_key=core.scrub(draft.topic_key) if draft.topic_key else None,
        source=draft.source,
        source_id=core.plain_name("source id", draft.source_id) if draft.source_id else None,
        metadata={} if draft.metadata is None else clean_metadata(core, draft.metadata, seen=seen),
    )


# -- writing ------------------------------------------------------------------------


def deduplicated(kept_id: int, kept_type: str, row: NewMemory) -> SaveResult:
    """``row`` is a duplicate of memory ``kept_id`` of ``kept_type``, which keeps its
    type: the result says when that is not the type ``row`` asked for."""
    if kept_type == row.type:
        return SaveResult("deduplicated", kept_id)
    notice = (
        f"#{kept_id} holds this text already, as type {kept_type!r}; the type {row.type!r}"
        " was not applied (an edit of the memory changes its type)"
    )
    return SaveResult("deduplicated", kept_id, kept_type=kept_type, notice=notice)


def revision(existing: MemoryRecord, row: NewMemory, *, with_metadata: bool) -> dict[str, Any]:
    """The fields ``row`` would change in ``existing`` (step 4); empty: a duplicate.

    A field the draft leaves empty (title, files, tags, metadata) keeps the
    stored value, so only what the draft says differently counts.
    """
    changes: dict[str, Any] = {}
    if row.content != existing.content:
        changes["content"] = row.content
        changes["normalized_hash"] = row.normalized_hash
    if row.type != existing.type:
        changes["type"] = row.type
    if row.kind != existing.kind:
        changes["kind"] = row.kind
    if row.title and row.title != existing.title:
        changes["title"] = row.title
    if row.files and row.files != existing.files:
        changes["files"] = row.files
    if row.tags and row.tags != existing.tags:
        changes["tags"] = row.tags
    if with_metadata:
        merged = {**existing.metadata, **row.metadata}
        if merged != existing.metadata:
            changes["metadata"] = merged
    return changes


class KnownKeys:
    """What a batch learned in bulk about its keys, so that its saves skip lookups.

    Each key is (project, value), or (project, source, source_id). An absence is
    remembered for every kind of key; for a source id, also the memory holding it
    (what ``find_memory`` would read for it, so a re-imported record is settled
    without a read of its own). Writing a row forgets its keys and updating a memory
    forgets it, so what is remembered is what a lookup would find.
    """

    __slots__ = ("hashes", "held", "held_at", "sources", "topics")

    def __init__(self) -> None:
        self.hashes: set[tuple[str, str]] = set()
        self.topics: set[tuple[str, str]] = set()
        self.sources: set[tuple[str, str, str]] = set()
        self.held: dict[tuple[str, str, str], MemoryRecord] = {}
        self.held_at: dict[int, list[tuple[str, str, str]]] = {}  # memory id -> its keys

    def learn(
        self,
        store: Store,
        rows: Iterable[NewMemory],
        holders: Mapping[tuple[str, str, str], MemoryRecord],
    ) -> None:
        """Ask ``store`` which keys of ``rows`` are held (and by which memory, for a
        source id, unless ``holders`` has it); remember the others as absent."""
        hashes: dict[str, set[str]] = {}
        topics: dict[str, set[str]] = {}
        sources: dict[tuple[str, str], set[str]] = {}
        for row in rows:
            hashes.setdefault(row.project, set()).add(row.normalized_hash)
            if row.topic_key:
                topics.setdefault(row.project, set()).add(row.topic_key)
            if row.source_id:
                sources.setdefault((row.project, row.source), set()).add(row.source_id)
        for project, values in hashes.items():
            held = store.present_keys(project, "normalized_hash", sorted(values))
            self.hashes.update((project, v) for v in values - held)
        for project, values in topics.items():
            held = store.present_keys(project, "topic_key", sorted(values))
            self.topics.update((project, v) for v in values - held)
        for (project, source), values in sources.items():
            found = {
                v: holders[(project, source, v)] for v in values if (project, source, v) in holders
            }
            asked = sorted(values - found.keys())
            if asked:
                found.update(store.find_by_source_ids(project, source, asked))
            self.sources.update((project, source, v) for v in values - found.keys())
            for value, memory in found.items():
                self.held[(project, source, value)] = memory
                self.held_at.setdefault(memory.id, []).append((project, source, value))

    def normalized_hash(self, row: NewMemory) -> bool:
        return bool(self.hashes) and (row.project, row.normalized_hash) in self.hashes

    def topic_key(self, row: NewMemory) -> bool:
        return bool(self.topics) and (row.project, row.topic_key or "") in self.topics

    def source_id(self, row: NewMemory) -> bool:
        return bool(self.sources) and (row.project, row.source, row.source_id or "") in self.sources

    def holder(self, row: NewMemory) -> MemoryRecord | None:
        """The memory learned to hold ``row``'s source id; None when not learned."""
        return self.held.get((row.project, row.source, row.source_id or "")) if self.held else None

    def written(self, row: NewMemory) -> None:
        """``row`` is stored now (inserted, or the new state of an update): its keys are held."""
        if self.hashes:
            self.hashes.discard((row.project, row.normalized_hash))
        if self.topics and row.topic_key:
            self.topics.discard((row.project, row.topic_key))
        if self.sources and row.source_id:
            self.sources.discard((row.project, row.source, row.source_id))

    def updated(self, memory_id: int) -> None:
        """Memory ``memory_id`` is changed: what was read of it is no longer current."""
        for key in self.held_at.pop(memory_id, ()):
            del self.held[key]


class Writer:
    """Stores drafts inside one transaction; see :func:`batch`."""

    def __init__(self, core: Core) -> None:
        self.core = core
        # session id -> (project, earliest and latest moment written in it, agent)
        self._activity: dict[str, tuple[str, datetime, datetime, str]] = {}
        self._known = KnownKeys()

    def expect(
        self,
        rows: Iterable[NewMemory],
        holders: Mapping[tuple[str, str, str], MemoryRecord] | None = None,
    ) -> None:
        """Learn, in one query per key column, which keys of ``rows`` no memory holds,
        and which memory holds each source id that one does.

        A batch calls this with the rows it is about to save: each save then skips
        the lookups that cannot find anything, and a row whose source id is held is
        settled against the memory read here (a key the batch writes itself is
        looked up again, so a duplicate inside the batch is still caught). The
        results are exactly those of saving without it; only inside the batch's
        transaction is the answer current, so it is forgotten when the batch ends.
        A caller that changes memories other than through this writer before the
        batch ends calls :meth:`forget_keys` first. ``holders``: memories the caller
        has just read, as stored now, by the (project, source, source_id) they hold:
        not read again.
        """
        self._known.learn(self.core.store, rows, holders or {})

    def save(self, draft: Draft, row: NewMemory | None = None) -> SaveResult:
        """Store one draft, or recognise it as an update or a duplicate.

        ``row``: the draft already :func:`prepare`-d (by a caller preparing ahead).
        """
        if row is None:
            row = prepare(self.core, draft)
        settled = self._settle(draft, row)
        if settled is not None:
            return settled
        return SaveResult("created", self.core.store.insert_memory(row))

    def _settle(self, draft: Draft, row: NewMemory) -> SaveResult | None:
        """What :meth:`save` makes of ``row`` after the lookups it needs: an update, a
        duplicate or a lossless copy, done; None when ``row`` is to be inserted as it is
        (its keys are then counted as held: the caller inserts it before any lookup)."""
        if draft.preserved is not None:
            return self._copy(row, draft, draft.preserved)
        if row.session_id and draft.activity:
            self._note_activity(row.session_id, row.project, row.created_at, draft.agent)
        store = self.core.store
        known = self._known
        existing: MemoryRecord | None = None
        if self._may_hold_topic(row):
            existing = store.find_memory(row.project, topic_key=row.topic_key)
        if existing is None and self._may_hold_source(draft, row):
            existing = known.holder(row) or store.find_memory(
                row.project, source=row.source, source_id=row.source_id
            )
        if existing is not None:
            changes = revision(existing, row, with_metadata=draft.metadata is not None)
            if not changes:
                return deduplicated(existing.id, existing.type, row)
            changes["revision_count"] = existing.revision_count + 1
            changes["updated_at"] = self.core.now()
            if row.session_id:
                changes["session_id"] = row.session_id
            store.update_memory(existing.id, changes)
            known.updated(existing.id)
            known.written(row)
            return SaveResult("updated", existing.id)
        duplicate = self._duplicate(row, draft.dedup_window)
        if duplicate is not None:
            return deduplicated(duplicate.id, duplicate.type, row)
        known.written(row)
        return None

    def save_many(
        self, items: Iterable[tuple[Draft, NewMemory]], *, beside: bool = False
    ) -> Callable[[], list[SaveResult]]:
        """Save each (draft, prepared row) in order, exactly as :meth:`save` would; returns
        a function giving the results.

        Rows that :meth:`save` would insert without looking anything up (no key a
        memory may hold, by :meth:`expect` or by the draft, and no dedup rule to check)
        are inserted together, one statement per run of them; a row that needs a lookup
        first stores the run before it, so it finds what the batch wrote, in the same
        order and under the same ids as one by one, and if it is to be inserted, it
        opens the next run (a statement costs FTS5 a segment of its own). A row whose
        only lookup is for a duplicate of rows of the run, the store holding none of its
        text before them (:meth:`expect`), is settled against the run itself: a transcript
        repeats a command's output within a batch. ``beside``:
        the last run is inserted on another thread while the caller goes on
        (:meth:`Store.insert_batch`); the function waits for it.
        """
        store = self.core.store
        results: list[SaveResult | None] = []
        run: list[NewMemory] = []
        places: list[int] = []  # where each row of the run has its result
        # The run's rows whose text no memory held before them (Writer.expect said so),
        # by (project, hash): a later row's duplicate is then looked for among them, not
        # by storing the run first and asking the store (a statement and a query each).
        fresh: dict[tuple[str, str], list[int]] = {}
        # (result, row of the run it duplicates, the row deduplicated)
        waiting: list[tuple[int, int, NewMemory]] = []

        def stored(ids: list[int]) -> None:
            for place, new_id in zip(places, ids, strict=True):
                results[place] = SaveResult("created", new_id)
            for place, duplicated, row in waiting:
                results[place] = deduplicated(ids[duplicated], run[duplicated].type, row)

        def append(row: NewMemory, was_absent: bool) -> None:
            key = (row.project, row.normalized_hash)
            if was_absent or key in fresh:
                fresh.setdefault(key, []).append(len(run))
            places.append(len(results))
            results.append(None)
            run.append(row)

        for draft, row in items:
            key = (row.project, row.normalized_hash)
            was_absent = self._known.normalized_hash(row)
            if self._blind(draft, row):
                if row.session_id and draft.activity:
                    self._note_activity(row.session_id, row.project, row.created_at, draft.agent)
                self._known.written(row)
                append(row, was_absent)
                continue
            if key in fresh and self._only_dedup(draft, row):
                # What _settle does for such a row, the lookup answered by the run.
                if row.session_id and draft.activity:
                    self._note_activity(row.session_id, row.project, row.created_at, draft.agent)
                duplicated = self._duplicate_in_run(row, draft.dedup_window, run, fresh[key])
                if duplicated is None:
                    self._known.written(row)
                    append(row, False)
                else:
                    waiting.append((len(results), duplicated, row))
                    results.append(None)
                continue
            if run:
                stored(store.insert_memories(run))
                run, places, fresh, waiting = [], [], {}, []
            settled = self._settle(draft, row)
            if settled is None:
                # Inserted with the run it opens: any later lookup stores that run first.
                append(row, False)
            else:
                results.append(settled)
        if not run:
            return lambda: _filled(results)
        job = store.insert_batch(run, beside=beside)  # the last items: the run ends the batch
        done: list[bool] = []

        def finished() -> list[SaveResult]:
            if not done:
                stored(job.result())
                done.append(True)
            return _filled(results)

        return finished

    def _only_dedup(self, draft: Draft, row: NewMemory) -> bool:
        """Whether :meth:`_settle` would look up nothing for ``row`` but its duplicate
        (no lossless copy, no topic key or source id that a memory may hold)."""
        return (
            draft.preserved is None
            and not self._may_hold_topic(row)
            and not self._may_hold_source(draft, row)
        )

    def _blind(self, draft: Draft, row: NewMemory) -> bool:
        """Whether :meth:`save` would insert ``row`` without a lookup."""
        return self._only_dedup(draft, row) and not self._may_duplicate(row, draft.dedup_window)

    def _may_hold_topic(self, row: NewMemory) -> bool:
        return bool(row.topic_key) and not self._known.topic_key(row)

    def _may_hold_source(self, draft: Draft, row: NewMemory) -> bool:
        return bool(row.source_id) and not draft.fresh_source_id and not self._known.source_id(row)

    def _may_duplicate(self, row: NewMemory, window: timedelta | None) -> bool:
        """Whether the dedup rule of ``row``'s kind has to look for a duplicate."""
        if self._known.normalized_hash(row):
            return False
        return row.kind in PROJECT_WIDE_DEDUP or row.kind == "observation" or window is not None

    def _duplicate(self, row: NewMemory, window: timedelta | None) -> MemoryRecord | None:
        """The memory ``row`` duplicates in its project, under the dedup rule of its kind."""
        rule = self._dedup_rule(row, window)
        if rule is None:
            return None
        created_after, same_type = rule
        found = self.core.store.find_memory(
            row.project,
            normalized_hash=row.normalized_hash,
            kinds=(row.kind,),
            created_after=created_after,
        )
        if found is not None and (not same_type or found.type == row.type):
            return found
        return None

    def _dedup_rule(
        self, row: NewMemory, window: timedelta | None
    ) -> tuple[datetime | None, bool] | None:
        """How :meth:`_duplicate` looks for ``row``'s duplicate: the newest memory of its
        project, hash and kind created at or after a moment (None: ever), which counts
        only if of ``row``'s type (the bool); None when there is nothing to look for."""
        if not self._may_duplicate(row, window):
            return None
        if row.kind in PROJECT_WIDE_DEDUP and window is None:
            return None, False
        if row.kind == "observation" or window is not None:
            span = window if window is not None else DEFAULT_OBSERVATION_WINDOW
            return row.created_at - span, True
        return None

    def _duplicate_in_run(
        self, row: NewMemory, window: timedelta | None, run: Sequence[NewMemory], at: list[int]
    ) -> int | None:
        """:meth:`_duplicate` of ``row`` when the memories of its project and hash are the
        rows of ``run`` at places ``at`` (none stored yet): the place of the duplicate, or
        None. The newest one is the latest created (``to_epoch``: the order both stores
        keep), then the last inserted, as ``find_memory`` orders them."""
        rule = self._dedup_rule(row, window)
        if rule is None:
            return None
        created_after, same_type = rule
        after = None if created_after is None else to_epoch(created_after)
        found: tuple[float, int] | None = None
        for place in at:
            other = run[place]
            if other.kind != row.kind:
                continue
            created = to_epoch(other.created_at)
            if after is not None and created < after:
                continue
            if found is None or (created, place) > found:
                found = (created, place)
        if found is None or (same_type and run[found[1]].type != row.type):
            return None
        return found[1]

    def _copy(self, row: NewMemory, draft: Draft, kept: Preserved) -> SaveResult:
        """Write a lossless copy: update the matched local copy, or insert one as exported."""
        store = self.core.store
        existing = kept.into
        self._known.written(row)
        if existing is None:
            new_id = store.insert_memory(row)
            store.update_memory(
                new_id,
                {
                    "updated_at": kept.updated_at,
                    "revision_count": kept.revision_count,
                    "access_count": kept.access_count,
                    "last_accessed_at": kept.last_accessed_at,
                    "stale": kept.stale,
                },
            )
            return SaveResult("created", new_id)
        changes: dict[str, Any] = {
            "content": row.content,
            "normalized_hash": row.normalized_hash,
            "title": row.title,
            "kind": row.kind,
            "type": row.type,
            "files": row.files,
            "tags": row.tags,
            "metadata": row.metadata,
            "session_id": row.session_id,
            "stale": kept.stale,
            "revision_count": max(kept.revision_count, existing.revision_count),
            "access_count": max(kept.access_count, existing.access_count),
            "created_at": row.created_at,
            "updated_at": kept.updated_at,
        }
        if kept.last_accessed_at is not None and (
            existing.last_accessed_at is None or kept.last_accessed_at > existing.last_accessed_at
        ):
            changes["last_accessed_at"] = kept.last_accessed_at
        if row.topic_key != existing.topic_key:
            holder = (
                store.find_memory(row.project, topic_key=row.topic_key) if row.topic_key else None
            )
            if holder is None:  # the key is unique per project: never take another's
                changes["topic_key"] = row.topic_key
        store.update_memory(existing.id, changes)
        self._known.updated(existing.id)
        return SaveResult("updated", existing.id)

    def _note_activity(self, session_id: str, project: str, moment: datetime, agent: str) -> None:
        known = self._activity.get(session_id)
        if known is None:
            self._activity[session_id] = (project, moment, moment, agent)
        else:
            agent = known[3] if known[3] != UNKNOWN_AGENT else agent  # the first name wins
            first, last = min(known[1], moment), max(known[2], moment)
            self._activity[session_id] = (known[0], first, last, agent)

    def forget_keys(self) -> None:
        """Forget what :meth:`expect` learned (it holds only inside the transaction, and
        while memories change only through this writer)."""
        self._known = KnownKeys()

    def touch_sessions(self) -> None:
        """Record the batch's activity in each session it wrote to (step 6)."""
        for session_id, (project, first, last, agent) in self._activity.items():
            touch_session(self.core, session_id, project, now=last, started=first, agent=agent)
        self._activity.clear()


def _filled(results: list[SaveResult | None]) -> list[SaveResult]:
    """``results`` once each of them is known (a row's id comes when its run is stored)."""
    filled = [result for result in results if result is not None]
    if len(filled) != len(results):
        raise RuntimeError("a result asked for before its run was stored")
    return filled


@contextmanager
def batch(core: Core) -> Iterator[Writer]:
    """A :class:`Writer` whose saves share one transaction (joining the caller's, if any).

    Sessions are touched once each when the block ends, still inside the
    transaction: a batch of 400 transcript chunks costs one session update.
    """
    writer = Writer(core)
    with core.store.transaction():
        yield writer
        writer.touch_sessions()
    writer.forget_keys()


def save(core: Core, draft: Draft) -> SaveResult:
    """Store one memory, or recognise it as an update or a duplicate.

    Returns ``SaveResult(status, id)`` with status ``created``, ``updated``
    (topic_key / source_id upsert, or a matched lossless copy) or ``deduplicated``.
    """
    with batch(core) as writer:
        return writer.save(draft)


def touch_session(
    core: Core,
    session_id: str,
    project: str,
    *,
    now: datetime | None = None,
    prompt: bool = False,
    started: datetime | None = None,
    agent: str = UNKNOWN_AGENT,
) -> Session:
    """Record activity in a session, creating it if this is the first we hear of it.

    Any write counts (hooks can arrive in any order, or SessionStart not at
    all); ``last_activity_at`` only moves forward, so a late or replayed hook
    cannot make a session look idle. ``prompt`` counts one more prompt;
    ``started`` is the start of a session created here (default ``now``).
    ``agent`` names a session that has no agent yet (Kiro, Cursor and Windsurf send
    no SessionStart), from the row this reads anyway: naming it costs no query of
    its own. A known agent is never replaced (the first name wins).
    """
    moment = now or core.now()
    store = core.store
    session = store.get_session(core.plain_name("session id", session_id))
    core.plain_name("project name", project)  # a hook's comes from its cwd, unresolved
    if session is None:
        store.upsert_session(
            Session(
                id=session_id,
                project=project,
                status="active",
                agent=agent,
                started_at=min(started or moment, moment),
                last_activity_at=moment,
                prompt_count=1 if prompt else 0,
            )
        )
    else:
        named = names_agent(session, agent)
        if not (moment > session.last_activity_at or prompt or named):
            return session  # nothing changes: no write
        changes: dict[str, Any] = {"last_activity_at": max(moment, session.last_activity_at)}
        if prompt:
            changes["prompt_count"] = session.prompt_count + 1
        if named:
            changes["agent"] = agent
        store.update_session(session_id, changes)
    result = store.get_session(session_id)
    assert result is not None
    return result


def names_agent(session: Session, agent: str) -> bool:
    """Whether ``agent`` is to be stored as ``session``'s agent: it has none yet."""
    return session.agent == UNKNOWN_AGENT and agent != UNKNOWN_AGENT


# -- edits --------------------------------------------------------------------------


def update(
    core: Core,
    memory_id: int,
    *,
    content: str | None = None,
    title: str | None = None,
    type: str | None = None,
    tags: Sequence[str] | None = None,
    files: Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> MemoryRecord:
    """Edit a memory in place: each given field cleaned like a save, the revision counted."""
    current = get(core, memory_id)  # checks the id's type too
    changes: dict[str, Any] = {}
    if content is not None:
        clean = clean_content(core, content, given=True)
        changes.update(content=clean, normalized_hash=privacy.hash_scrubbed(clean))
    if title is not None:
        changes["title"] = clean_title(core, title)
    if type is not None:
        changes["type"] = clean_type(core, type)
    if tags is not None:
        changes["tags"] = clean_list(core, tags, "tags")
    if files is not None:
        changes["files"] = clean_list(core, files, "files")
    if metadata is not None:
        changes["metadata"] = {**current.metadata, **clean_metadata(core, metadata)}
    if not changes:
        raise InvalidInput("nothing to change: give new content, a title, a type, tags or files")
    changes["updated_at"] = core.now()
    changes["revision_count"] = current.revision_count + 1
    core.store.update_memory(memory_id, changes)
    return get(core, memory_id)


def delete(
    core: Core,
    *,
    id: int | None = None,
    ids: Sequence[int] | None = None,
    session_id: str | None = None,
    before: datetime | None = None,
    project: str | None = None,
    dry_run: bool = False,
) -> list[int]:
    """Delete memories by id(s), session, age or project; returns the ids removed.

    Criteria combine with AND and at least one is required, so an empty call can
    never mean "everything"; ``id`` must exist. A dry run returns exactly the ids
    the real run removes (as long as nothing writes in between). Deleting a whole
    session (the session alone, no id or age) also removes its session row, in the
    same transaction. Forgetting by query or file, with its log, is
    ``memlane.maintenance``'s job.
    """
    project = core.named_project(project)  # "" names no project: refused, never "all"
    session_id = arguments.narrowing_text(
        "the session id", session_id, "name the session whose memories to delete"
    )
    before = arguments.moment("before", before)
    wanted: list[int] | None = None
    if id is not None:
        get(core, id)
        wanted = [id]
    if ids is not None:  # an id no memory can have (2**70) matches none
        wanted = [*(wanted or []), *(i for i in arguments.memory_ids(ids) if possible_id(i))]
    if wanted is None and session_id is None and before is None and project is None:
        raise InvalidInput("say what to delete: ids, a session, a date before which, or a project")
    flt = MemoryFilter(
        ids=tuple(wanted) if wanted is not None else None,
        session_id=session_id,
        created_before=before,
        projects=(project,) if project is not None else None,
    )
    selected = core.store.memory_ids(flt)
    if not dry_run and selected:
        with core.store.transaction():
            core.store.delete_memories(selected)
            if session_id is not None and id is None and ids is None and before is None:
                core.store.delete_sessions([session_id])
    return selected


# -- reading ------------------------------------------------------------------------


# What a "no memory with id N" error suggests, on every interface (HTTP and MCP too: no
# CLI command in it).
MEMORY_ID_HINT = "a search shows the ids of memories"


def get(core: Core, memory_id: int, *, record_access: bool = False) -> MemoryRecord:
    """One memory by id (:class:`NotFound` when there is none); with ``record_access``
    counted as a use (the frequency signal of ranking).

    The one rule of every interface: a use is a read of a memory by its id (``memlane
    get``, HTTP ``GET /api/observations/{id}`` and ``/batch``, MCP ``get_observations``
    pass ``record_access``): someone asked for that memory. A listing that shows it (a
    search, a recall, a timeline) or an injection of it is not: the CLI counted each
    search, so repeating a query raised its own hits' scores."""
    valid = possible_id(arguments.memory_id(memory_id))
    if record_access and valid:  # count first, so the record returned includes this use
        core.store.record_access([memory_id], core.now())
    found = core.store.get_memories([memory_id]) if valid else []
    if not found:
        raise NotFound(f"no memory with id {memory_id} ({MEMORY_ID_HINT})")
    return found[0]


def get_many(core: Core, ids: Sequence[int], *, record_access: bool = False) -> list[MemoryRecord]:
    """The memories of ``ids`` that exist; with ``record_access`` each counted as a use
    (as :func:`get` counts it: first, so the records returned include this use)."""
    wanted = list(dict.fromkeys(i for i in arguments.memory_ids(ids) if possible_id(i)))
    if record_access and wanted:
        core.store.record_access(wanted, core.now())  # an id that does not exist counts nothing
    return core.store.get_memories(wanted)


def list_memories(
    core: Core,
    *,
    project: str | None = None,
    all_projects: bool = False,
    kinds: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    session_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[MemoryRecord]:
    """Memories of a project (or every project), newest first."""
    flt = MemoryFilter(
        projects=core.projects_for(project, all_projects),
        kinds=tuple(kinds) if kinds else None,
        types=tuple(types) if types else None,
        session_id=arguments.optional_text("the session id", session_id),
    )
    return core.store.list_memories(flt, limit=limit, offset=offset)


def iter_all(
    core: Core, projects: tuple[str, ...] | None, batch_size: int = 1000
) -> Iterator[MemoryRecord]:
    """Every memory of ``projects`` (None: all), oldest first, read in batches."""
    offset = 0
    flt = MemoryFilter(projects=projects)
    while True:
        rows = core.store.list_memories(flt, limit=batch_size, offset=offset, newest_first=False)
        if not rows:
            return
        yield from rows
        offset += len(rows)


def timeline(
    core: Core,
    *,
    around: int | None = None,
    before: int = 5,
    after: int = 5,
    start: datetime | None = None,
    end: datetime | None = None,
    project: str | None = None,
    all_projects: bool = False,
    session_id: str | None = None,
    limit: int = 50,
) -> list[MemoryRecord]:
    """Memories in the order they happened, oldest first; nothing is ranked.

    Either the neighbourhood of one memory (``before`` older and ``after``
    newer ones of its project, whatever their session), or a time range of a
    project, of every project or of one session, keeping the ``limit`` newest
    memories of the range; not both.
    """
    store = core.store
    limit = arguments.whole("limit", limit, 1, MAX_TIMELINE)
    session_id = arguments.optional_text("the session id", session_id)
    if around is not None and any(v is not None for v in (start, end, session_id)):
        raise InvalidInput(
            "give a memory to center on (around) or a range (start, end, session), not both"
        )
    if around is not None:
        before = arguments.whole("before", before, 0, MAX_NEIGHBOURS)
        after = arguments.whole("after", after, 0, MAX_NEIGHBOURS)
        anchor = get(core, around)
        older = store.list_memories(
            MemoryFilter(projects=(anchor.project,), created_before=anchor.created_at),
            limit=before,
        )
        newer = store.list_memories(
            MemoryFilter(projects=(anchor.project,), created_after=anchor.created_at),
            limit=after + 1,
            newest_first=False,
        )
        # created_after is inclusive: the anchor itself comes back among the newer ones.
        newer = [m for m in newer if m.id != anchor.id][:after]
        return [*reversed(older), anchor, *newer]
    start, end = arguments.moment("start", start), arguments.moment("end", end)
    if start is not None and end is not None and end <= start:
        raise InvalidInput("the time range is empty: end must be after start")
    projects = core.projects_for(project, all_projects)
    flt = MemoryFilter(
        projects=projects, session_id=session_id, created_after=start, created_before=end
    )
    return list(reversed(store.list_memories(flt, limit=limit)))
