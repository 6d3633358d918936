"""Core records of memlane as frozen dataclasses.

This module is on the hook path, so it imports only the standard library. The
pydantic wire models that HTTP and MCP serialize live in ``schemas.py`` and are
built from these records; they never carry ``normalized_hash``.

Timestamps are timezone-aware UTC ``datetime`` objects here and epoch seconds
(float) in the stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Literal

    Kind = Literal["observation", "turn", "knowledge", "summary", "checkpoint", "prompt", "note"]
    SaveStatus = Literal["created", "updated", "deduplicated"]
    SearchMode = Literal["hybrid", "keyword", "semantic"]
    SearchScope = Literal["project", "all", "tiered"]
    SessionStatus = Literal["active", "ended", "auto_closed"]

# Search modes and project scopes, named once: the engine, config, CLI, HTTP and MCP use these.
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "keyword", "semantic")
SCOPES: tuple[SearchScope, ...] = ("project", "all", "tiered")
# How keyword and semantic candidates are fused (config search.fusion, --fusion).
FUSIONS: tuple[str, ...] = ("calibrated", "rrf")

if not TYPE_CHECKING:  # hidden from mypy, which reads the aliases above

    def __getattr__(name: str) -> object:
        # pydantic (HTTP, MCP) needs the Literal types at run time: built from the tuples
        # on first use, since importing typing here would slow every hook.
        if name in ("SearchMode", "SearchScope"):
            from typing import Literal

            value = Literal[SEARCH_MODES if name == "SearchMode" else SCOPES]
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Ids are SQLite INTEGERs (64-bit) or PostgreSQL bigints: one outside them cannot exist
# (and would overflow the query that looked for it).
MAX_ID = 2**63 - 1
# A memory's type is a category (note, decision, bugfix…): this long at most, everywhere.
MAX_TYPE_CHARS = 40
# A search query typed by a person or an agent (CLI, HTTP, MCP): this long at most.
MAX_QUERY_CHARS = 2000
# Types one search may name (`type:a OR type:b`, MCP's `types`): each is one ordered read.
MAX_QUERY_TYPES = 20
# A name (project, session id, source id): an identity, never a text. One limit for
# every interface: Core.plain_name, the HTTP bodies and lookups, the MCP arguments.
MAX_NAME_CHARS = 1000
# A topic key given by a person or an agent (memories.given_topic_key): this long at most.
MAX_TOPIC_KEY_CHARS = 200
# Tags and linked paths of one memory: more is refused (capture links 50 paths at most).
MAX_TAGS = 100
MAX_FILES = 200


def possible_id(number: int) -> bool:
    """Whether a memory (or injection) could have this id."""
    return 0 < number <= MAX_ID


# The ``source`` of memories cut from agent transcripts: the only records memlane
# splits into pieces (search groups neighbouring pieces of one turn).
TRANSCRIPT_SOURCE = "transcript"

KINDS: tuple[str, ...] = (
    "observation",
    "turn",
    "knowledge",
    "summary",
    "checkpoint",
    "prompt",
    "note",
)

# Where imported memories come from: the ``source`` of each importer's memories
# (``memlane.interop``). An imported note was not saved in the session it names, and an
# imported chat turn is shown with the turn that followed it.
JSONL_SOURCE = "jsonl"
JSONL_STORE_SOURCE = "jsonl-store"
CLAUDE_MEM_SOURCE = "claude-mem"
INDEX_SOURCE = "index"
IMPORT_SOURCES = frozenset((JSONL_SOURCE, JSONL_STORE_SOURCE, CLAUDE_MEM_SOURCE, INDEX_SOURCE))

# Types of observations captured from tool events.
OBSERVATION_TYPES: tuple[str, ...] = (
    "file-write",
    "file-read",
    "command",
    "research",
    "tool-use",
    "delegation",
)
# Types of knowledge an agent or a person saves on purpose.
KNOWLEDGE_TYPES: tuple[str, ...] = (
    "decision",
    "lesson",
    "bugfix",
    "feature",
    "discovery",
    "constraint",
    "heuristic",
    "rejected-approach",
    "postmortem",
    "refactor",
    "change",
)
OTHER_TYPES: tuple[str, ...] = ("note", "prompt", "turn", "summary", "checkpoint")
TYPES: tuple[str, ...] = OBSERVATION_TYPES + KNOWLEDGE_TYPES + OTHER_TYPES

# The types a save over HTTP or MCP takes (schemas.KnowledgeType, ObservationType): as
# knowledge, what an agent decided or learned; as an observation, a note, a finding or a
# change (the other knowledge types), or a type capture records.
SAVED_KNOWLEDGE_TYPES: tuple[str, ...] = (
    "decision",
    "lesson",
    "constraint",
    "heuristic",
    "rejected-approach",
)
SAVED_OBSERVATION_TYPES: tuple[str, ...] = (
    "note",
    *(t for t in KNOWLEDGE_TYPES if t not in SAVED_KNOWLEDGE_TYPES),
    *OBSERVATION_TYPES,
)


def kind_for_type(type_: str) -> str:
    """The kind a memory of ``type_`` belongs to when the caller gives none."""
    if type_ in OBSERVATION_TYPES:
        return "observation"
    if type_ in KNOWLEDGE_TYPES:
        return "knowledge"
    if type_ in ("prompt", "turn", "summary", "checkpoint"):
        return type_
    return "note"


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def epoch_us(moment: datetime) -> int:
    """``moment`` in whole microseconds since the epoch, exactly (no float on the way): the
    unit of the store's change marker (a session's activity), to which a feed compares
    activity times. Whole milliseconds made two activities of one millisecond one change."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory: an observation, a transcript turn chunk, knowledge, a note…"""

    id: int
    project: str
    kind: str
    type: str
    content: str
    created_at: datetime
    updated_at: datetime
    title: str = ""
    session_id: str | None = None
    files: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    topic_key: str | None = None
    source: str = "memlane"
    source_id: str | None = None
    revision_count: int = 0
    access_count: int = 0
    last_accessed_at: datetime | None = None
    stale: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    # Internal: dedup key over privacy-stripped content. Never leaves the core.
    normalized_hash: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class NewMemory:
    """What the facade hands the store to insert (hash already computed)."""

    project: str
    kind: str
    type: str
    content: str
    normalized_hash: str
    created_at: datetime
    title: str = ""
    session_id: str | None = None
    files: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    topic_key: str | None = None
    source: str = "memlane"
    source_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What a save did to memory ``id``: ``created``, ``updated`` or ``deduplicated``.

    ``kept_type`` is set when a save was deduplicated onto a memory of another type:
    the stored memory keeps its type, and ``notice`` says so in one line for people
    (CLI, HTTP and MCP show the same words); both are None otherwise.
    """

    status: SaveStatus
    id: int
    kept_type: str | None = None
    notice: str | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    id: int
    project: str
    kind: str
    type: str
    title: str
    content: str
    created_at: datetime
    score: float
    source_id: str | None = None
    session_id: str | None = None
    files: tuple[str, ...] = ()
    stale: bool = False
    # Set when the hit comes from another project than the one asked for.
    from_project: str | None = None
    # The part of the content that matches the query (memlane.search.passages).
    snippet: str = ""
    # Every memory this hit stands for, in order, itself included: more than one
    # when neighbouring pieces of one split record (a long transcript turn) matched.
    members: tuple[int, ...] = ()
    source_ids: tuple[str, ...] = ()
    # The tool call the hit records (metadata ``CALL_KEY``), when it records one.
    call: str | None = None
    # Where the memory came from (``Memory.source``: a hook, an import, the transcript).
    source: str = "memlane"
    # Scored below the noise floor and admitted by the relaxation cascade (search without
    # ``min_score`` pads to ``limit``): a weak match, shown as such.
    relaxed: bool = False


class SearchResult(list[SearchHit]):
    """The hits of one search, best first, and a one-line ``notice`` for people or None.

    A list, so it is what ``Memory.search`` always returned; the notice says
    why a search ran in another mode than asked (e.g. "keyword mode: no
    vectors yet"). It belongs to this result: nothing is left on the facade,
    which the worker shares across threads.
    """

    __slots__ = ("mode", "notice")

    def __init__(
        self, hits: Iterable[SearchHit] = (), notice: str | None = None, mode: str | None = None
    ) -> None:
        super().__init__(hits)
        self.notice = notice
        # The mode the search ran in (keyword, hybrid, semantic), when the caller knows it.
        self.mode = mode


# The agent of a session no hook has named yet (the column's default).
UNKNOWN_AGENT = "unknown"
# Metadata key of a memory that records one tool call: the agent's id of the call
# (an observation and the transcript units of one call hold the same).
CALL_KEY = "call"


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    project: str
    status: str
    started_at: datetime
    last_activity_at: datetime
    agent: str = UNKNOWN_AGENT
    ended_at: datetime | None = None
    transcript_path: str | None = None
    transcript_offset: int = 0
    prompt_count: int = 0
    parent_session_id: str | None = None

    @property
    def auto_closed(self) -> bool:
        return self.status == "auto_closed"


@dataclass(frozen=True, slots=True)
class Summary:
    """End-of-session summary. Every summary says whether a rule wrote it."""

    session_id: str
    project: str
    is_auto_generated: bool
    request: str = ""
    completed: tuple[str, ...] = ()
    learned: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    created_at: datetime | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where a session stands: enough to resume it after a compaction or a break."""

    session_id: str
    project: str
    task: str = ""
    progress: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    created_at: datetime | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class LineError:
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class ImportReport:
    path: str
    created: int = 0
    updated: int = 0
    skipped: int = 0
    errors: tuple[LineError, ...] = ()
    errors_omitted: int = 0  # bad lines counted beyond those listed in ``errors``
    sessions: int = 0  # sessions created or refreshed (an export's session records)

    @property
    def total(self) -> int:
        return self.created + self.updated + self.skipped

    @property
    def error_count(self) -> int:
        """Bad lines in all: those listed and those only counted."""
        return len(self.errors) + self.errors_omitted


@dataclass(frozen=True, slots=True)
class InjectionStats:
    """What the hooks injected: how often, and how many tokens (see ``memlane.injections``).

    ``tokens_per_session_*`` are over the sessions the log has seen (a session whose
    prompts got nothing counts as 0); ``per_day`` holds the injected tokens of each
    UTC day of the last ``STATS_DAYS`` days that had any.
    """

    prompts: int = 0
    prompts_injected: int = 0
    session_starts: int = 0
    session_starts_injected: int = 0
    sessions: int = 0
    tokens_total: int = 0
    tokens_per_session_median: float = 0.0
    tokens_per_session_p95: float = 0.0
    per_day: dict[str, int] = field(default_factory=dict)
    marked_useful: int = 0
    marked_noise: int = 0

    @property
    def injected_share(self) -> float:
        """The share of prompts that got anything injected (0 when none was seen)."""
        return self.prompts_injected / self.prompts if self.prompts else 0.0


@dataclass(frozen=True, slots=True)
class Stats:
    memories: int
    sessions: int
    projects: dict[str, int]
    kinds: dict[str, int]
    types: dict[str, int]
    embedded: int
    db_bytes: int
    oldest: datetime | None
    newest: datetime | None
    injections: InjectionStats = field(default_factory=InjectionStats)


# -- the injection log ------------------------------------------------------------------

# The hook events that inject text (the only ones the log records).
INJECTING_EVENTS: tuple[str, ...] = ("session-start", "user-prompt-submit")
# Feedback marks on an injected memory.
FEEDBACK_MARKS: tuple[str, ...] = ("useful", "noise")


@dataclass(frozen=True, slots=True)
class InjectedMemory:
    """One memory an injection showed: its place in the text, its score, the user's mark."""

    memory_id: int
    rank: int
    score: float | None = None
    feedback: str | None = None


@dataclass(frozen=True, slots=True)
class NewInjection:
    """What a hook injected, as the log stores it (text already privacy-filtered).

    ``mode``: the recall mode (keyword, hybrid, semantic), ``context`` for the
    SessionStart pack; ``relayed``: the worker answered the hook (else its own
    process); ``hook_ms``: from the hook's start to its answer; ``chars`` and
    ``tokens``: the size of the text the agent received.
    """

    session_id: str
    project: str
    event: str
    created_at: datetime
    mode: str
    relayed: bool
    hook_ms: float
    chars: int
    tokens: int
    text: str
    prompt: str = ""
    prompt_number: int | None = None
    memories: tuple[InjectedMemory, ...] = ()


@dataclass(frozen=True, slots=True)
class Injection:
    """One logged injection. ``cleared``: its text was removed because a memory it
    showed was deleted or forgotten (the counts stay, for the token meter)."""

    id: int
    session_id: str
    project: str
    event: str
    created_at: datetime
    mode: str
    relayed: bool
    hook_ms: float
    chars: int
    tokens: int
    text: str
    prompt: str = ""
    prompt_number: int | None = None
    memories: tuple[InjectedMemory, ...] = ()
    cleared: bool = False


@dataclass(frozen=True, slots=True)
class InjectionTotals:
    """Raw sums of the log for one project or all, as a store counts them."""

    session_tokens: dict[str, int] = field(default_factory=dict)
    injected: dict[str, int] = field(default_factory=dict)
    quiet: dict[str, int] = field(default_factory=dict)
    day_tokens: dict[str, int] = field(default_factory=dict)
    marks: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Feedback:
    """A user's mark on a memory injected for ``prompt`` (``injection_id`` when known)."""

    memory_id: int
    mark: str
    prompt: str
    created_at: datetime
    injection_id: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Selection shared by store listing, deletion and candidate generation.

    ``projects`` None means every project. Times are inclusive lower /
    exclusive upper bounds.
    """

    projects: tuple[str, ...] | None = None
    session_id: str | None = None
    kinds: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    ids: tuple[int, ...] | None = None
    files: tuple[str, ...] | None = None
