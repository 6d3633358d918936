"""Capture pipeline: what the hooks store, written through the one write path.

The facade's capture methods (``Memory.record_prompt``, ``record_tool_event``,
``ingest_transcript``, ``select_recall``) call these functions, which combine
the pure capture modules (classify, transcript, codex, units, observations) with
:mod:`memlane.memories` (session starts, summaries and checkpoints are
:mod:`memlane.capture.lifecycle`'s part):

* a prompt is stored as a ``prompt`` memory numbered in its session
  (``source_id`` ``<session>:prompt:<n>``); harness messages (task
  notifications, local command output) are counted, not stored;
* a tool event becomes a typed observation; an identical one inside its type's
  repeat window is skipped. Keyed by the call's id (``source_id``
  ``<session>:tool:<id>``), it is stored once whether PostToolUse or the
  transcript reports it first; a command the hook recorded without its exit code
  (Codex's) takes it from the transcript's version;
* a transcript (Claude Code's, or a Codex rollout) is ingested incrementally
  from the session's stored byte offset, in batches bounded by turns and by what
  they read (``BATCH_*``). Each batch is read and scrubbed outside the write lock,
  then one write transaction checks the offset is still the one it was read from
  (else it is read again from the new one), stores the batch's units
  (:mod:`memlane.capture.units`) and the observations its tool pairs hold
  (:mod:`memlane.capture.observations`), and moves the offset, so two hooks
  ingesting the same session at once (Stop and the SessionEnd tail) never store a
  unit twice, a crash leaves either the whole batch or none of it, and a prompt
  hook waits for the lock no longer than a batch takes to store. Units are
  ``turn`` memories typed by what they are (``request``, ``reply``, ``tool``,
  ``compaction``, ``local``) with ``source_id`` ``<session>:<unit index>``
  (unique per project), indexes counting up per session, so a unit's neighbours
  are its index ± 1. They are saved through one :func:`memlane.memories.batch`
  per transaction (scrubbed, clipped with a mark and hashed like any memory).
  Memory stays bounded by the batch size whatever the transcript's size. A
  transcript rewritten shorter than the stored offset replaces the units
  ingested from it (dropped in the first new batch's transaction), so ingesting
  it stays idempotent.

What of a recall result is injected is :mod:`memlane.search.selection`'s.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from functools import partial
from operator import attrgetter

from memlane import memories
from memlane.capture.replies import reply_text
from memlane.errors import InvalidInput, NothingToStore
from memlane.memories import Draft
from memlane.models import CALL_KEY, UNKNOWN_AGENT, MemoryFilter, NewMemory, SaveResult
from memlane.text import without_line_numbers

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.capture.classify import CapturedObservation
    from memlane.capture.helper import PrepareHelper
    from memlane.capture.transcript import ToolCall, Turn
    from memlane.capture.units import Unit
    from memlane.core import Core
    from memlane.privacy import CleanSource

TRANSCRIPT_SOURCE = "transcript"
HOOK_SOURCE = "hook"
# Turns parsed per write transaction: bounds memory use and lock hold time.
BATCH_TURNS = 400
# What one batch reads (transcript.ReadLimit), whatever it holds. A batch also ends at the
# first turn's end past BATCH_BYTES or BATCH_LINES (the 2.7 MB fixture is 155 turns in
# 1,863 lines; ~0.2 s to store), which changes nothing stored, and at the first line
# past them where no turn is open (200 MB of "1" lines hold no record: no turn ever
# ended, so the one batch read the whole file inside its transaction). Past
# BATCH_MAX_BYTES or BATCH_MAX_LINES it ends whatever: a turn open that long is cut as at
# the end of a file (real turns span < 150 kB). Lines count because a short one costs
# ~0.6 µs to read: 64k of them ~0.04 s, 512k ~0.3 s, each batch committing its offset.
BATCH_BYTES = 4 << 20
BATCH_LINES = 64_000
BATCH_MAX_BYTES = 32 << 20
BATCH_MAX_LINES = 512_000
# Unit indexes probed beyond a run's own in its one query (left by pruned rows).
PROBE_SLACK = 64
# Units inserted by one statement: the next run is cut and prepared meanwhile.
UNIT_RUN = 256
# Batches of at least this many bytes hand their last turns to the prepare helper
# (:mod:`memlane.capture.helper`) when a core is idle; a smaller one is quicker alone.
HELPER_MIN_BYTES = 128 * 1024
# The helper's share of such a batch, in bytes: this process parses and stores it all.
HELPER_SHARE = 0.5
# Prompts longer than this are cut before privacy filtering (the write path keeps 64k).
MAX_PROMPT_CHARS = 128_000
# What the agent's harness sends as a "prompt": counted, never stored as one.
HARNESS_PROMPTS = ("<task-notification>", "<local-command-", "<system-reminder>")


@dataclass(frozen=True, slots=True)
class PromptRecord:
    """The stored prompt: its number in the session and how the save went."""

    number: int
    saved: SaveResult | None


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What one incremental ingest did."""

    session_id: str
    path: str | None
    chunks: int = 0
    turns: int = 0
    corrupt_lines: int = 0
    start_offset: int = 0
    end_offset: int = 0
    # Chunks dropped because the transcript was rewritten shorter than the stored offset.
    replaced_chunks: int = 0
    # Stopped at its deadline with part of the transcript left for the next ingest.
    unfinished: bool = False
    # Why a transcript that is there was not read at all ('' when it was).
    unread: str = ""


# -- prompts and tool events ---------------------------------------------------


def record_prompt(
    core: Core,
    session_id: str,
    prompt: str,
    *,
    project: str,
    now: datetime | None = None,
    agent: str = UNKNOWN_AGENT,
    once: bool = False,
    turn: str | None = None,
) -> PromptRecord:
    """Count the prompt in its session and store it (empty after filtering: counted only);
    ``agent`` names a session that has none yet. ``once``: neither, when the session holds
    this prompt (its stored content) sent at ``now`` already, nor for a prompt that is
    never stored: a replay of a capture that may have been stored
    (:mod:`memlane.hooks.spool`); its record then has no ``saved``. ``turn``: the agent's
    id of the turn the prompt starts (kept with it); neither either when the session's
    latest prompt is this one in the same turn (:func:`_prompt_of_turn`)."""
    moment = now or core.now()
    with core.store.transaction():
        if once:
            found = _stored_prompt(core, session_id, prompt, moment)
            if found is not None:
                return PromptRecord(found, None)
        if turn:
            found = _prompt_of_turn(core, session_id, prompt, turn)
            if found is not None:
                return PromptRecord(found, None)
        session = memories.touch_session(
            core, session_id, project, now=moment, prompt=True, agent=agent
        )
        number = session.prompt_count
        if prompt.lstrip().startswith(HARNESS_PROMPTS):
            return PromptRecord(number, None)  # the harness talking, not the user
        draft = Draft(
            prompt[:MAX_PROMPT_CHARS],
            project=session.project,
            type="prompt",
            kind="prompt",
            derive_title=True,
            session_id=session_id,
            source=HOOK_SOURCE,
            source_id=prompt_source_id(session_id, number),
            created_at=moment,
            metadata={"number": number, "turn": turn} if turn else {"number": number},
        )
        try:
            return PromptRecord(number, memories.save(core, draft))
        except NothingToStore:
            return PromptRecord(number, None)


def _stored_prompt(core: Core, session_id: str, prompt: str, sent: datetime) -> int | None:
    """The number of the session's prompt stored with ``prompt``'s content (as
    :func:`memlane.memories.clean_content` makes it) at the time ``sent``, if there is one;
    0 for a prompt that is never stored (the harness's, or nothing left after filtering),
    which a replay cannot tell from one already counted and so leaves alone."""
    if prompt.lstrip().startswith(HARNESS_PROMPTS):
        return 0
    try:
        text = memories.clean_content(core, prompt[:MAX_PROMPT_CHARS])
    except NothingToStore:
        return 0
    flt = MemoryFilter(
        session_id=session_id,
        kinds=("prompt",),
        created_after=sent,
        created_before=sent + timedelta(milliseconds=1),
    )
    for found in core.store.list_memories(flt, limit=10):
        if found.content == text:
            number = found.metadata.get("number")
            return number if isinstance(number, int) else 0
    return None


def _prompt_of_turn(core: Core, session_id: str, prompt: str, turn: str) -> int | None:
    """The number of the session's latest stored prompt when it is ``prompt`` (its stored
    content), sent in the agent's turn ``turn``: one prompt that two hooks delivered
    (Cursor runs the hooks of ~/.claude/settings.json besides its own, both sending its
    generation id). The same turn with other words is a prompt of its own. One query of
    the memories (the session row is read by the touch that counts a new prompt)."""
    flt = MemoryFilter(session_id=session_id, kinds=("prompt",))
    latest = core.store.list_memories(flt, limit=1)
    if not latest or latest[0].metadata.get("turn") != turn:
        return None
    number = latest[0].metadata.get("number")
    try:
        text = memories.clean_content(core, prompt[:MAX_PROMPT_CHARS])
    except NothingToStore:
        return None
    return number if isinstance(number, int) and latest[0].content == text else None


def prompt_source_id(session_id: str, number: int) -> str:
    """The source id of a session's prompt number ``number`` (:func:`record_prompt`)."""
    return f"{session_id}:prompt:{number}"


def record_reply(
    core: Core,
    session_id: str,
    reply: str,
    *,
    project: str,
    key: str,
    agent: str,
    now: datetime | None = None,
) -> SaveResult:
    """Store a turn's final answer that no transcript holds (Codex, Gemini, Cursor,
    Windsurf), under the session's last prompt: a past prompt is shown with its answer,
    and the question's words find the answer that may not repeat them. ``now``: when the
    turn ended (default: now)."""
    draft = Draft(
        reply_text(_last_prompt(core, session_id), core.scrub(reply)),
        project=project,
        type="turn",
        kind="turn",
        session_id=session_id,
        source="transcript",
        source_id=f"{session_id}:reply:{key}",
        metadata={"role": "assistant", "agent": agent},
        created_at=now,
        agent=agent,
    )
    return memories.save(core, draft)


def _last_prompt(core: Core, session_id: str) -> str | None:
    """The text of the session's latest stored prompt (:func:`record_prompt`), if any."""
    session = core.store.get_session(session_id)
    if session is None or not session.prompt_count:
        return None
    found = core.store.find_memory(
        session.project,
        source=HOOK_SOURCE,
        source_id=prompt_source_id(session_id, session.prompt_count),
        kinds=("prompt",),
    )
    return found.content.strip() if found is not None else None


def _observation_draft(
    observation: CapturedObservation,
    metadata: dict[str, Any],
    *,
    project: str,
    session_id: str,
    source: str,
    source_id: str | None,
    created_at: datetime | None,
    dedup_window: timedelta | None = None,
    agent: str = UNKNOWN_AGENT,
) -> Draft:
    """The Draft of a classified tool call, the same from PostToolUse and from a transcript."""
    return Draft(
        observation.content,
        project=project,
        type=observation.type,
        kind="observation",
        title=observation.title,
        session_id=session_id,
        source=source,
        source_id=source_id,
        created_at=created_at,
        files=observation.files,
        tags=observation.tags,
        metadata=metadata,
        dedup_window=dedup_window,
        agent=agent,
    )


def record_tool_event(
    core: Core,
    session_id: str,
    tool_name: Any,
    tool_input: Any,
    tool_response: Any,
    *,
    cwd: str | None,
    project: str,
    now: datetime | None = None,
    tool_use_id: str | None = None,
    agent: str = UNKNOWN_AGENT,
) -> SaveResult | None:
    """Store one tool event as a typed observation; None when it is dropped (or when the
    transcript recorded the same call, ``tool_use_id``, first)."""
    from memlane.capture.classify import classify_tool_event, repeat_window_seconds

    source_id = tool_source_id(core, session_id, tool_use_id) if tool_use_id else None
    if source_id and _observed(core, project, source_id):
        return None

    # Scrub before classify cuts fields to 500 chars: a secret straddling the cut would
    # otherwise survive as a fragment the patterns no longer recognise.
    tool_input, tool_response = scrub_tool_payloads(
        core.scrub, tool_name, tool_input, tool_response
    )
    observation = classify_tool_event(tool_name, tool_input, tool_response, cwd)
    if observation is None:
        return None
    metadata = dict(observation.metadata)
    if tool_use_id:
        metadata[CALL_KEY] = tool_use_id
    if cwd:
        from memlane.filestate import file_state

        metadata["cwd"] = cwd
        if observation.files:
            metadata["file_state"] = file_state(observation.files, cwd)
    draft = _observation_draft(
        observation,
        metadata,
        project=project,
        session_id=session_id,
        source=HOOK_SOURCE,
        source_id=source_id,
        created_at=now,
        dedup_window=timedelta(seconds=repeat_window_seconds(observation.type)),
        agent=agent,
    )
    try:
        return memories.save(core, draft)
    except NothingToStore:
        return None


def tool_source_id(core: Core, session_id: str, key: str) -> str:
    """The ``source_id`` of the observation of one tool call (or derived item) of a session,
    the same whether PostToolUse or the transcript recorded it.

    The key comes from the agent's input, not from memlane: one the name rule refuses
    (``Core.plain_name``: a control character, a secret's shape, past its length) would
    stop the transcript's ingest at that record on every later Stop. Its digest stands
    in for it, the same on both paths.
    """
    try:
        return core.plain_name("source id", f"{session_id}:tool:{key}")
    except InvalidInput:
        from memlane.digest import sha256_hex

        digest = sha256_hex(key.encode("utf-8", "surrogatepass"))[:24]
        return f"{session_id}:tool:h{digest}"


def _observed(core: Core, project: str, source_id: str) -> bool:
    """Whether the tool call with this key is stored already (by the hook or the transcript)."""
    store = core.store
    return any(
        store.find_memory(project, source=source, source_id=source_id) is not None
        for source in (HOOK_SOURCE, TRANSCRIPT_SOURCE)
    )


# Longest tool text scrubbed whole; beyond it the text is cut first (at ~9 MB/s, 1 MB ≈ 0.1 s).
MAX_SCRUB_CHARS = 1_000_000


def as_read(scrub: Callable[[str], str]) -> Callable[[str], str]:
    """``scrub`` of a tool result as it reads: Read's line numbers (``  12→``) split the
    lines that the rules reading a line's start or several lines match (a .netrc
    password, a private key cut by the output limit), which then went unmasked."""

    def scrub_as_read(text: str) -> str:
        return scrub(without_line_numbers(text))

    return scrub_as_read


def scrub_tool_payloads(
    scrub: Callable[[str], str], tool_name: Any, tool_input: Any, tool_response: Any
) -> tuple[Any, Any]:
    """A tool call's input and result with every string privacy-filtered by ``scrub``
    (structure kept): the input first, then the result as the call reads it."""
    clean_input = _scrub_payload(scrub, tool_input)
    return clean_input, _scrub_payload(_reader(scrub, tool_name, clean_input), tool_response)


def _reader(
    scrub: Callable[[str], str], tool_name: str, tool_input: Any, launch: Any = None
) -> Callable[[str], str]:
    """How a tool call's result is filtered: as it reads (:func:`as_read`), or, when the
    call prints a secret (``pass show X``), or reads what printed one: the output of a
    background command (its ``launch``, :data:`memlane.capture.launches.LAUNCHED`: a
    ``TaskOutput`` of ``pass show X``), each text of it withheld whole. What a background
    command that shows a dotenv file printed (``cat .env``) has its values masked, as
    its own result would (the transcript's parse masks those)."""
    from memlane.privacy import REVEALED, mask_env_file, reveals_secret, shows_env_file

    launched = isinstance(launch, dict)
    if reveals_secret(tool_name, tool_input) or (launched and reveals_secret("Bash", launch)):
        return lambda text: REVEALED if text.strip() else text
    read = as_read(scrub)
    if launched and shows_env_file("Bash", launch):
        return lambda text: read(mask_env_file(text))
    return read


def _scrub_payload(scrub: Callable[[str], str], value: Any) -> Any:
    """Every string inside a tool payload, privacy-filtered by ``scrub`` (structure kept)."""
    if isinstance(value, str):
        return scrub(value[:MAX_SCRUB_CHARS])
    if isinstance(value, dict):
        return {key: _scrub_payload(scrub, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_payload(scrub, item) for item in value]
    return value


# -- transcripts ----------------------------------------------------------------


def ingest_transcript(
    core: Core,
    session_id: str,
    path: str | None = None,
    *,
    project: str | None = None,
    parent_session_id: str | None = None,
    batch_turns: int = BATCH_TURNS,
    deadline: float | None = None,
    count_prompts: bool = False,
) -> IngestReport:
    """Ingest the transcript of ``session_id`` from its stored byte offset.

    ``path`` defaults to the session's ``transcript_path``; a new path is
    recorded. A session unknown so far is created (a subagent's with its
    parent). Safe to call repeatedly and concurrently: see the module docstring.
    ``deadline`` (a ``time.monotonic()`` value): no batch begins after it but the
    first, the rest is left for the next call (``IngestReport.unfinished``).
    ``count_prompts``: the transcript's prompts (its user turns) count in the session's
    ``prompt_count`` when no prompt hook counted them (the session holds no prompt
    memory: :func:`record_prompt`): ``memlane recover``'s, reading sessions of the past.

    Turns are parsed and cut in this thread. When a core is idle
    (:func:`memlane.background.spare_core`), each run of units is inserted by one
    statement on a thread of its own (SQLite indexes it in C, without the GIL)
    while this thread cuts and prepares the next run: one hand-over per run, not
    per row (a thread per row measured slower: BENCHMARKS.md, "Stored ingest").
    When a core is idle even now (:func:`memlane.background.idle_core`), in a process
    with a prepare helper (the worker's, or ``memlane recover``'s), a batch of
    ``HELPER_MIN_BYTES`` or more has its last turns prepared by the helper while this
    thread prepares the first ones (:mod:`memlane.capture.helper`).
    """
    from memlane.background import idle_core, spare_core
    from memlane.capture.codex import is_codex_rollout
    from memlane.capture.lifecycle import begin_session

    store = core.store
    session = store.get_session(session_id)
    if session is None:
        session = begin_session(
            core,
            session_id,
            project=project,
            agent="codex" if path and is_codex_rollout(path) else "claude-code",
            transcript_path=path,
            parent_session_id=parent_session_id,
        )
    elif path and (kept := core.stored_path(path)) != session.transcript_path:
        store.update_session(session_id, {"transcript_path": kept})
    path = path or session.transcript_path
    report = IngestReport(session_id, path, start_offset=session.transcript_offset)
    if not path:
        return report
    try:
        info = os.stat(path)
    except FileNotFoundError:  # none yet (an agent without one), or a link to nothing
        return replace(report, unread="a link to nothing") if os.path.islink(path) else report
    except OSError as exc:
        return replace(report, unread=exc.strerror or type(exc).__name__)
    if not stat.S_ISREG(info.st_mode):  # a folder, a FIFO the reader would wait on, a device
        return replace(report, unread="not a regular file")
    size = info.st_size
    chunks = turns = corrupt = replaced = 0
    end = session.transcript_offset
    # The next chunk index and the offset it goes with: counting a long session's
    # chunks again for every batch would cost more than the batch.
    next_index: int | None = None
    committed = -1
    beside = spare_core()
    parse = _BatchReader(core, path, session_id, batch_turns, helper=beside and idle_core())
    parsed = 0
    unfinished = False
    while True:
        # Read and prepared outside the write lock (the read is what a crafted transcript
        # makes long), then stored if no other ingest moved the offset meanwhile.
        planned = store.get_session(session_id)
        if planned is None:
            break  # deleted meanwhile: nothing to attach chunks to
        seen = planned.transcript_offset
        if seen == size:
            end = seen
            break
        if parsed and deadline is not None and time.monotonic() >= deadline:
            unfinished = True
            break
        offset = 0 if seen > size else seen
        batch = parse.batch(offset, planned.project) if offset < size else None
        parsed += 1
        with store.transaction():
            current = store.get_session(session_id)
            if current is None:
                break
            if current.transcript_offset != seen or current.project != planned.project:
                continue  # another ingest stored this part: read on from where it got
            counting = count_prompts and _prompts_unhooked(core, session_id)
            prompts = current.prompt_count
            if seen > size:
                # Rewritten shorter (truncated, replaced): the stored chunks describe
                # a file that is gone. Drop them and start over, in the same
                # transaction as the first new batch, so a crash or a concurrent
                # ingest sees either the old chunks and offset or the new ones,
                # never both.
                replaced += _drop_transcript_chunks(core, session_id)
                restart: dict[str, Any] = {"transcript_offset": 0}
                if counting:  # counted from the file that is gone
                    prompts = restart["prompt_count"] = 0
                store.update_session(session_id, restart)
                next_index = None
            if batch is None:  # emptied
                end = offset
                break
            end = batch.end
            corrupt += batch.corrupt
            if batch.turns:
                if next_index is None or offset != committed:
                    # First batch, or another ingest moved the offset since ours.
                    next_index = store.count_memories(
                        MemoryFilter(session_id=session_id, kinds=("turn",))
                    )
                with memories.batch(core) as writer:
                    stored, next_index = _store_units(
                        core,
                        writer,
                        current.project,
                        session_id,
                        batch.parts,
                        next_index,
                        beside=beside,
                    )
                    # Prepared while the units' last run is inserted beside: one batch,
                    # so its end (the session's activity) does not wait for that run first.
                    observations = batch.observations()
                    _store_observations(
                        core, writer, current.project, session_id, observations, beside=beside
                    )
                chunks += stored
                turns += batch.turns
            if end <= offset:
                break
            read: dict[str, Any] = {"transcript_offset": end}
            if counting and batch.prompts:
                read["prompt_count"] = prompts + batch.prompts
            store.update_session(session_id, read)
            committed = end
        if not batch.full:
            break
    return IngestReport(
        session_id,
        path,
        chunks=chunks,
        turns=turns,
        corrupt_lines=corrupt,
        start_offset=report.start_offset,
        end_offset=end if replaced else max(end, report.start_offset),
        replaced_chunks=replaced,
        unfinished=unfinished,
    )


def _prompts_unhooked(core: Core, session_id: str) -> bool:
    """Whether no prompt hook counted the prompts of ``session_id``: it holds no prompt
    memory (:func:`record_prompt` stores each one it counts)."""
    return not core.store.has_memories(MemoryFilter(session_id=session_id, kinds=("prompt",)))


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A unit or derived observation ready to save: its draft and row (None: nothing
    left after the privacy filter). A unit's row carries a placeholder index."""

    draft: Draft
    row: NewMemory | None
    key: str = ""  # an observation's source_id


@dataclass(frozen=True, slots=True)
class _Batch:
    """One batch of turns read from ``start``: what to store, and where the next begins.

    ``parts`` give the units, cut and prepared as they are asked for (the caller stores
    each run while the next is prepared; a run ends with its part: the next part may
    be the prepare helper's, still coming); ``observations()`` prepares the rest once
    they are.
    """

    start: int
    end: int
    full: bool
    corrupt: int
    turns: int
    prompts: int  # the user's turns among them
    project: str
    parts: tuple[Iterator[_Prepared], ...]
    observations: Callable[[], list[_Prepared]]


class _BatchReader:
    """Reads a transcript in batches of turns and prepares what they store (nothing
    here reads or writes the store)."""

    def __init__(
        self, core: Core, path: str, session_id: str, batch_turns: int, *, helper: bool = False
    ) -> None:
        """``helper``: hand a large batch's last turns to the prepare helper, if any."""
        from memlane.capture.launches import Launches
        from memlane.capture.transcript import ReadLimit

        self.limit = ReadLimit(BATCH_BYTES, BATCH_LINES, BATCH_MAX_BYTES, BATCH_MAX_LINES)
        self.core = core
        self.path = path
        self.session_id = session_id
        self.batch_turns = batch_turns
        self.helper = helper
        self.launches = Launches(path)

    def batch(self, offset: int, project: str) -> _Batch:
        """The batch of turns starting at ``offset``, prepared for ``project``."""
        from memlane.capture.sources import iter_session_turns
        from memlane.capture.transcript import ParseStats

        stats = ParseStats()
        limit = self.limit
        generator = iter_session_turns(self.path, offset, stats, limit)
        turns: list[Turn] = []
        # Ends at a turn's end once it holds batch_turns turns or read past the soft
        # bound: where a batch ends then changes nothing of what is stored.
        at_turn = False
        for turn in generator:
            turns.append(turn)
            if len(turns) == self.batch_turns or limit.soft_reached(stats, offset):
                at_turn = True
                break
        if at_turn:
            # One record can end two turns (tool results, then a prompt): resuming
            # after the first would skip the second, so a batch takes in every turn
            # that ends where its last one does (the first other is parsed again).
            for extra in generator:
                if extra.end_offset != turns[-1].end_offset:
                    break
                turns.append(extra)
            else:
                at_turn = False  # end of the parse: resume after the last record consumed
        # A batch ended at a turn resumes after it; else after the last record consumed
        # (skipped records included), at the end of the file or where the limit stopped it.
        end = turns[-1].end_offset if at_turn else stats.end_offset
        full = at_turn or stats.stopped
        # Before the split and the filter: both halves see the launches, filtered as their own.
        turns = self.launches.named(turns, offset, end)
        # Scrubbed whole before units and observations cut them: a secret split by a
        # cut would no longer be recognised. Each turn's CleanSource vouches for the
        # units cut from it, so the write path does not filter them again.
        core, session_id = self.core, self.session_id
        split = len(turns)
        helped: _HelpedPart | None = None
        if self.helper and end - offset >= HELPER_MIN_BYTES:
            split = _helper_split(turns, offset, end)
            helped = _HelpedPart.ask(core, project, session_id, turns[split:])
            if helped is None:
                split = len(turns)
        scrubbed = [_scrubbed(core, turn) for turn in turns[:split]]
        clean = [turn for turn, _ in scrubbed]
        # A call's id and a turn's id are in the metadata of its units and observations.
        seen: memories.Seen = {}
        units = _prepared_units(core, project, session_id, scrubbed, seen)
        batch = partial(
            _Batch,
            start=offset,
            end=end,
            full=full,
            corrupt=stats.corrupt,
            turns=len(turns),
            prompts=sum(turn.role == "user" for turn in turns),
        )
        if helped is None:
            return batch(
                project=project,
                parts=(units,),
                observations=lambda: _prepared_observations(core, project, session_id, clean, seen),
            )
        mine: list[_Prepared] = []

        def my_units() -> Iterator[_Prepared]:
            yield from units
            # Its observations too, before the helper's part is waited for.
            mine.extend(_prepared_observations(core, project, session_id, clean, seen))

        return batch(
            project=project,
            parts=(my_units(), helped.units()),
            observations=lambda: [*mine, *helped.observations()],
        )


def _helper_split(turns: Sequence[Turn], start: int, end: int) -> int:
    """Where the helper's share (``HELPER_SHARE`` of the batch's bytes, its last turns)
    begins; at least one turn each side."""
    cut = end - (end - start) * HELPER_SHARE
    split = next((i for i, turn in enumerate(turns) if turn.end_offset >= cut), len(turns))
    return min(max(split, 1), len(turns) - 1)


def prepared_part(
    core: Core, project: str, session_id: str, turns: Sequence[Turn]
) -> tuple[list[_Prepared], list[_Prepared]]:
    """The units and observations of ``turns``, prepared as :meth:`_BatchReader.batch`
    prepares its own (the prepare helper's work)."""
    scrubbed = [_scrubbed(core, turn) for turn in turns]
    seen: memories.Seen = {}
    units = list(_prepared_units(core, project, session_id, scrubbed, seen))
    clean = [turn for turn, _ in scrubbed]
    return units, _prepared_observations(core, project, session_id, clean, seen)


_ROW_FIELDS = attrgetter(*(field.name for field in fields(NewMemory)))


@dataclass(frozen=True, slots=True)
class PreparedPart:
    """Prepared units and observations as the helper sends them: each row as the tuple
    of its fields (a pickled dataclass is rebuilt in Python, 3x slower), and one draft of
    each kind without its texts (a vouched text does not leave the process that vouched
    for it). Once a row is prepared the writer reads only the draft's flags
    (``Writer.save_many``), which are the same for every unit and for every observation.
    """

    unit_draft: Draft | None
    units: list[tuple[Any, ...]]
    observation_draft: Draft | None
    observations: list[tuple[str, tuple[Any, ...] | None]]  # (key, row)

    @classmethod
    def of(cls, units: Sequence[_Prepared], observations: Sequence[_Prepared]) -> PreparedPart:
        """Units with a row (the others store nothing) and every observation."""
        return cls(
            _flags(units[0].draft) if units else None,
            [_ROW_FIELDS(item.row) for item in units if item.row is not None],
            _flags(observations[0].draft) if observations else None,
            [
                (item.key, None if item.row is None else _ROW_FIELDS(item.row))
                for item in observations
            ],
        )

    def unpacked(self) -> tuple[list[_Prepared], list[_Prepared]]:
        """The units and observations as :func:`prepared_part` gave them (drafts aside)."""
        units = [_Prepared(self.unit_draft, NewMemory(*row)) for row in self.units]  # type: ignore[arg-type]
        observations = [
            _Prepared(self.observation_draft, None if row is None else NewMemory(*row), key)  # type: ignore[arg-type]
            for key, row in self.observations
        ]
        return units, observations


def _flags(draft: Draft) -> Draft:
    """``draft`` without what is particular to its item: its flags only."""
    return replace(
        draft,
        content="",
        title=None,
        source_id=None,
        created_at=None,
        files=(),
        tags=(),
        metadata=None if draft.metadata is None else {},
    )


class _HelpedPart:
    """The last turns of a batch, prepared by the helper; by this thread if it fails."""

    def __init__(
        self,
        core: Core,
        project: str,
        session_id: str,
        turns: Sequence[Turn],
        asked: tuple[PrepareHelper, int],
    ) -> None:
        self.core = core
        self.project = project
        self.session_id = session_id
        self.turns = turns
        self.asked = asked
        self._prepared: tuple[list[_Prepared], list[_Prepared]] | None = None

    @classmethod
    def ask(
        cls, core: Core, project: str, session_id: str, turns: Sequence[Turn]
    ) -> _HelpedPart | None:
        """``turns`` sent to the helper; None when there is none, or it cannot take them."""
        from memlane.capture import helper

        process = helper.current()
        if process is None:
            return None
        try:
            number = process.submit(core.settings, project, session_id, core.now(), list(turns))
        except helper.HelperFailed as exc:
            helper.failed(process, str(exc))
            return None
        if number is None:
            return None
        return cls(core, project, session_id, turns, (process, number))

    def prepared(self) -> tuple[list[_Prepared], list[_Prepared]]:
        """The helper's units and observations (waited for once), or the same prepared here."""
        if self._prepared is None:
            from memlane.capture import helper

            process, number = self.asked
            try:
                part = process.reply(number)
                if not isinstance(part, PreparedPart):
                    raise helper.HelperFailed(f"it answered a {type(part).__name__}")
                self._prepared = part.unpacked()
            except helper.HelperFailed as exc:
                helper.failed(process, str(exc))
                self._prepared = prepared_part(self.core, self.project, self.session_id, self.turns)
        return self._prepared

    def units(self) -> Iterator[_Prepared]:
        yield from self.prepared()[0]

    def observations(self) -> list[_Prepared]:
        return self.prepared()[1]


def _drop_transcript_chunks(core: Core, session_id: str) -> int:
    """Delete the session's chunks ingested from its transcript (inside the caller's
    transaction); turns imported from elsewhere stay."""
    store = core.store
    ids = store.memory_ids(MemoryFilter(session_id=session_id, kinds=("turn",)))
    ours = [m.id for m in store.get_memories(ids) if m.source == TRANSCRIPT_SOURCE]
    return store.delete_memories(ours) if ours else 0


def _scrubbed(core: Core, turn: Turn) -> tuple[Turn, CleanSource]:
    """``turn`` with every text block, tool input and tool result privacy-filtered, and
    the source that vouches for what is cut from them. An assistant turn's text,
    which nothing reads once it has blocks, is left empty."""
    from memlane.capture.launches import LAUNCHED
    from memlane.capture.transcript import ToolCall
    from memlane.capture.units import composed_lines, shown_path

    source = core.clean_source()
    scrub = source.scrub
    blocks: list[str | ToolCall] = []
    for block in turn.blocks:
        if isinstance(block, str):
            blocks.append(scrub(block))
            continue
        tool_input = _scrub_payload(scrub, block.input)
        launch = block.input.get(LAUNCHED) if isinstance(block.input, dict) else None
        reader = _reader(scrub, block.name, block.input, launch)
        result = "" if _unread_result(block) else _scrub_payload(reader, block.result)
        # replace(block, input=…, result=…), built directly (replace costs µs a call).
        call = ToolCall(block.name, tool_input, block.id, result, block.is_error, block.answered)
        blocks.append(call)
        if isinstance(tool_input, dict):
            # Its unit shows the file relative to the turn's directory, a piece of the
            # path the filter saw whole: filtered on its own too, the source vouches for it.
            path = shown_path(tool_input, turn.cwd)
            if path:
                scrub(path)
        # Lines its units make of strings filtered apart ("Output of $ cmd (what it
        # does)", "failed (exit code 1): …"): filtered whole too, so those units are
        # vouched for rather than filtered again by the write path.
        for line in composed_lines(call):
            scrub(line)
    if turn.role == "assistant" and blocks:
        # Units and observations read an assistant turn's blocks; its text repeats them
        # (joined and trimmed), so it is left out rather than filtered a second time.
        text = ""
    elif len(blocks) == 1 and isinstance(blocks[0], str) and turn.blocks[0] == turn.text:
        text = blocks[0]  # a prompt or summary: its one block, filtered already
    else:
        text = scrub(turn.text)
    return replace(turn, text=text, blocks=tuple(blocks)), source


def _unread_result(call: ToolCall) -> bool:
    """Whether nothing reads ``call``'s result, so it is dropped rather than filtered: a
    file write's or edit's (``classify.FILE_WRITE_TOOLS``, often the file again) that did
    not fail. Its unit and observation show its input; a failure is read from the result's
    start (``classify.call_failure``: ``<tool_use_error>``), which a result opening with a
    letter cannot become once filtered (blocks stripped open with a mark, a mask with ``[``)."""
    from memlane.capture.classify import FILE_WRITE_TOOLS

    if call.is_error or call.name not in FILE_WRITE_TOOLS or not isinstance(call.result, str):
        return False
    first = call.result.lstrip()[:1]
    return first.isascii() and first.isalpha()


def _prepared_units(
    core: Core,
    project: str,
    session_id: str,
    turns: Sequence[tuple[Turn, CleanSource]],
    seen: memories.Seen,
) -> Iterator[_Prepared]:
    """The units of scrubbed ``turns``, prepared as turn memories under a placeholder
    index; each unit's text vouched for by its turn's source (``seen``: the metadata
    strings the batch cleaned, :func:`memlane.memories.clean_metadata`)."""
    from memlane.capture.units import UnitShape, turn_units

    now = core.now()
    settings = core.settings
    shape = UnitShape(
        chars=settings.capture__unit_chars,
        head_lines=settings.capture__output_head_lines,
        tail_lines=settings.capture__output_tail_lines,
    )
    for turn, source in turns:
        for unit in turn_units(turn, shape):
            yield _prepared_unit(core, project, session_id, unit, source, now, seen)


def _prepared_unit(
    core: Core,
    project: str,
    session_id: str,
    unit: Unit,
    source: CleanSource,
    now: datetime,
    seen: memories.Seen,
) -> _Prepared:
    draft = Draft(
        source.vouch(unit.text),
        project=project,
        type=unit.kind,
        kind="turn",
        title=source.vouch(unit.title),
        session_id=session_id,
        source=TRANSCRIPT_SOURCE,
        source_id=_unit_source_id(session_id, 0),
        fresh_source_id=True,  # _store_units probes for a free index
        created_at=unit.timestamp or now,
        files=unit.files,
        tags=(unit.tool,) if unit.tool else (),
        metadata={
            "chunk_index": 0,
            "role": unit.role,
            "unit": unit.kind,
            "part": unit.part,
            "turn": unit.turn,
            "errors": list(unit.errors),
            "transcript_offset": unit.end_offset,
            **({CALL_KEY: unit.call} if unit.call else {}),
        },
    )
    return _Prepared(draft, _prepare_or_none(core, draft, seen))


def _prepare_or_none(core: Core, draft: Draft, seen: memories.Seen) -> NewMemory | None:
    """``draft``'s row (``seen``: the run's metadata strings cleaned before); None when
    nothing is left to store, or the write rule refuses it."""
    try:
        return memories.prepare(core, draft, seen=seen)
    except NothingToStore:
        return None  # all private: nothing is stored, no index taken
    except InvalidInput as exc:
        # One record the write rule refuses (a NaN in a tool's input, a name holding a
        # secret) is left out; raised, it would stop the ingest here on every later Stop,
        # and nothing after it in the transcript would ever be stored. The session and
        # its project were checked when the session began.
        import logging

        logging.getLogger("memlane.capture").warning("a transcript record left out: %s", exc)
        return None


def _unit_source_id(session_id: str, index: int) -> str:
    return f"{session_id}:{index}"


def _store_units(
    core: Core,
    writer: memories.Writer,
    project: str,
    session_id: str,
    parts: Iterable[Iterable[_Prepared]],
    index: int,
    *,
    beside: bool = False,
) -> tuple[int, int]:
    """Save the prepared units of ``parts`` through ``writer`` (a batch inside the
    caller's transaction), in order, as turn memories from unit ``index`` on, a run of
    ``UNIT_RUN`` at a time, a part's last run as soon as it ends; returns how many were
    stored and the next index. ``beside``: each run is inserted on another thread while
    the next is prepared (``Writer.save_many``)."""
    stored = 0
    for units in parts:
        run: list[_Prepared] = []
        for unit in units:
            if unit.row is not None:
                run.append(unit)
            if len(run) == UNIT_RUN:
                index = _store_run(core, writer, project, session_id, run, index, beside)
                stored += len(run)
                run = []
        if run:
            index = _store_run(core, writer, project, session_id, run, index, beside)
            stored += len(run)
    return stored, index


def _store_run(
    core: Core,
    writer: memories.Writer,
    project: str,
    session_id: str,
    run: Sequence[_Prepared],
    index: int,
    beside: bool,
) -> int:
    """Save one run of units (each with a row) from unit ``index`` on; the next index."""
    store = core.store
    # Indexes only grow; probing skips any left by a pruned or imported row. The
    # run's range is probed in one query, beyond it one index at a time.
    probed = range(index, index + len(run) + PROBE_SLACK)
    taken = store.present_keys(
        project,
        "source_id",
        [_unit_source_id(session_id, i) for i in probed],
        source=TRANSCRIPT_SOURCE,
    )
    items: list[tuple[Draft, NewMemory]] = []
    for unit in run:
        assert unit.row is not None
        while (
            _unit_source_id(session_id, index) in taken
            if index in probed
            else store.find_memory(
                project, source=TRANSCRIPT_SOURCE, source_id=_unit_source_id(session_id, index)
            )
        ):
            index += 1
        row = _indexed(unit.row, _unit_source_id(session_id, index), index)
        items.append((unit.draft, row))
        index += 1
    writer.save_many(items, beside=beside)
    return index


def _indexed(row: NewMemory, source_id: str, index: int) -> NewMemory:
    """``row`` as unit ``index`` of its session: ``dataclasses.replace(row, source_id=…,
    metadata={…, "chunk_index": index})``, built directly (replace takes 5 µs a row)."""
    return NewMemory(
        project=row.project,
        kind=row.kind,
        type=row.type,
        content=row.content,
        normalized_hash=row.normalized_hash,
        created_at=row.created_at,
        title=row.title,
        session_id=row.session_id,
        files=row.files,
        tags=row.tags,
        topic_key=row.topic_key,
        source=row.source,
        source_id=source_id,
        metadata={**row.metadata, "chunk_index": index},
    )


def _prepared_observations(
    core: Core, project: str, session_id: str, turns: Sequence[Turn], seen: memories.Seen
) -> list[_Prepared]:
    """The observations the transcript's tool pairs and compaction summaries hold, prepared
    (``seen``: as for :func:`_prepared_units`)."""
    from memlane.capture.observations import derived_observations

    prepared: list[_Prepared] = []
    for derived in derived_observations(list(turns)):
        source_id = tool_source_id(core, session_id, derived.key)
        observation = derived.observation
        metadata = dict(observation.metadata)
        if derived.call:
            metadata[CALL_KEY] = derived.call
        if derived.turn.cwd:
            metadata["cwd"] = derived.turn.cwd
        draft = _observation_draft(
            observation,
            metadata,
            project=project,
            session_id=session_id,
            source=TRANSCRIPT_SOURCE,
            source_id=source_id,
            created_at=derived.turn.timestamp or core.now(),
        )
        prepared.append(_Prepared(draft, _prepare_or_none(core, draft, seen), source_id))
    return prepared


def _store_observations(
    core: Core,
    writer: memories.Writer,
    project: str,
    session_id: str,
    observations: Sequence[_Prepared],
    *,
    beside: bool = False,
) -> int:
    """Save prepared observations through ``writer`` (a batch inside the caller's
    transaction), unless PostToolUse recorded the call already. ``beside``: see
    ``Writer.save_many``."""
    store = core.store
    keys = sorted({item.key for item in observations})
    # What _observed would find, asked once: stored by either source before the batch,
    # or created by it.
    hooked = store.present_keys(project, "source_id", keys, source=HOOK_SOURCE)
    observed = hooked | store.present_keys(project, "source_id", keys, source=TRANSCRIPT_SOURCE)
    coded = [  # calls the hook recorded whose transcript version tells the exit code
        item
        for item in observations
        if item.key in hooked and item.row is not None and "exit_code" in item.row.metadata
    ]
    stored = 0
    writer.expect(item.row for item in observations if item.row is not None)
    # Saved a run at a time; a key seen again first stores the run before it, whose
    # results say whether that call is observed now.
    run: list[tuple[Draft, NewMemory]] = []
    run_keys: dict[str, int] = {}  # key -> its place in the run
    for item in observations:
        if item.key in run_keys:
            results = writer.save_many(run)()
            observed.update(k for k, i in run_keys.items() if results[i].status == "created")
            run, run_keys = [], {}
        if item.key in observed or item.row is None:
            continue
        run_keys[item.key] = len(run)
        run.append((item.draft, item.row))
        stored += 1
    writer.save_many(run, beside=beside)
    for item in coded:
        _fill_exit_code(core, writer, project, item)
    return stored


def _fill_exit_code(core: Core, writer: memories.Writer, project: str, item: _Prepared) -> None:
    """A command the hook recorded without its exit code (Codex's hook sends a command's
    bare output: a failed one was stored as run fine) takes the transcript's reading of
    the same call: its exit code, and the failure, title and errors that go with it. The
    record keeps its id, time and hook source; a record that has an exit code stays."""
    recorded = core.store.find_memory(project, source=HOOK_SOURCE, source_id=item.key)
    if recorded is None or item.row is None or recorded.type != item.row.type:
        return
    if recorded.type != "command" or "exit_code" in recorded.metadata:
        return
    draft = replace(item.draft, source=HOOK_SOURCE, activity=False)
    writer.save(draft, replace(item.row, source=HOOK_SOURCE))


def transcript_pending(core: Core, session_id: str) -> bool:
    """True when the session's transcript has bytes not ingested yet (a cheap stat)."""
    session = core.store.get_session(session_id)
    if session is None or not session.transcript_path:
        return False
    try:
        return os.path.getsize(session.transcript_path) > session.transcript_offset
    except OSError:
        return False
