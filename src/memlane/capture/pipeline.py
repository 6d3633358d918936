"""Capture pipeline: what the hooks store, written through the one write path.

The facade's capture methods (``Memory.record_prompt``, ``record_tool_event``,
``ingest_transcript``, ``select_recall``) call these functions, which combine
the pure capture modules (classify, transcript, chunker) with
:mod:`memlane.memories` (session starts, summaries and checkpoints are
:mod:`memlane.capture.lifecycle`'s part):

* a prompt is stored as a ``prompt`` memory numbered in its session
  (``source_id`` ``<session>:prompt:<n>``);
* a tool event becomes a typed observation; an identical one inside its type's
  repeat window is skipped;
* a transcript is ingested incrementally from the session's stored byte offset,
  in batches. Each batch runs in one write transaction that re-reads the offset,
  inserts the batch's chunks and moves the offset, so two hooks ingesting the
  same session at once (Stop and the SessionEnd tail) never store a chunk twice,
  and a crash leaves either the whole batch or none of it. Chunks are ``turn``
  memories with ``source_id`` ``<session>:<chunk index>`` (unique per project),
  indexes counting up per session. Chunks are saved through one
  :func:`memlane.memories.batch` per transaction (scrubbed, clipped with a mark
  and hashed like any memory). Memory stays bounded by the batch size
  whatever the transcript's size. A transcript rewritten shorter than the stored
  offset replaces the chunks ingested from it (dropped in the first new batch's
  transaction), so ingesting it stays idempotent.

``select_recall`` decides what of a recall result is worth injecting: never the
current session's own memories (the agent has them), never more than the limit,
nothing below ``min_relevance_score`` (search scores are absolute, 0..1), and
nothing for a prompt made only of stop words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice

from memlane import memories
from memlane.errors import NothingToStore
from memlane.memories import Draft
from memlane.models import MemoryFilter, SaveResult, SearchHit
from memlane.text import PROMPT_STOPWORDS, has_cjk

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any

    from memlane.capture.chunker import Chunk
    from memlane.core import Core

TRANSCRIPT_SOURCE = "transcript"
HOOK_SOURCE = "hook"
# Turns parsed per write transaction: bounds memory use and lock hold time.
BATCH_TURNS = 400
# Prompts longer than this are cut before privacy filtering (the write path keeps 64k).
MAX_PROMPT_CHARS = 128_000

# Word and CJK character patterns (re caches them); not compiled at import: every hook
# imports this module, only prompts use them.
_WORD = r"[^\W_]{3,}"
_CJK = r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"


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


# -- prompts and tool events ---------------------------------------------------


def record_prompt(
    core: Core,
    session_id: str,
    prompt: str,
    *,
    project: str,
    now: datetime | None = None,
) -> PromptRecord:
    """Count the prompt in its session and store it (empty after filtering: counted only)."""
    moment = now or core.now()
    with core.store.transaction():
        session = memories.touch_session(core, session_id, project, now=moment, prompt=True)
        number = session.prompt_count
        draft = Draft(
            prompt[:MAX_PROMPT_CHARS],
            project=session.project,
            type="prompt",
            kind="prompt",
            derive_title=True,
            session_id=session_id,
            source=HOOK_SOURCE,
            source_id=f"{session_id}:prompt:{number}",
            created_at=moment,
            metadata={"number": number},
        )
        try:
            return PromptRecord(number, memories.save(core, draft))
        except NothingToStore:
            return PromptRecord(number, None)


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
) -> SaveResult | None:
    """Store one tool event as a typed observation; None when it is dropped."""
    from memlane.capture.classify import classify_tool_event, repeat_window_seconds

    # Scrub before classify cuts fields to 500 chars: a secret straddling the cut would
    # otherwise survive as a fragment the patterns no longer recognise.
    tool_input = _scrub_payload(core, tool_input)
    tool_response = _scrub_payload(core, tool_response)
    observation = classify_tool_event(tool_name, tool_input, tool_response, cwd)
    if observation is None:
        return None
    metadata = dict(observation.metadata)
    if cwd:
        from memlane.filestate import file_state

        metadata["cwd"] = cwd
        if observation.files:
            metadata["file_state"] = file_state(observation.files, cwd)
    draft = Draft(
        observation.content,
        project=project,
        type=observation.type,
        kind="observation",
        title=observation.title,
        session_id=session_id,
        source=HOOK_SOURCE,
        created_at=now,
        files=observation.files,
        tags=observation.tags,
        metadata=metadata,
        dedup_window=timedelta(seconds=repeat_window_seconds(observation.type)),
    )
    try:
        return memories.save(core, draft)
    except NothingToStore:
        return None


# Longest tool text scrubbed whole; beyond it the text is cut first (at ~9 MB/s, 1 MB ≈ 0.1 s).
MAX_SCRUB_CHARS = 1_000_000


def _scrub_payload(core: Core, value: Any) -> Any:
    """Every string inside a tool payload, privacy-filtered (structure kept)."""
    if isinstance(value, str):
        return core.scrub(value[:MAX_SCRUB_CHARS])
    if isinstance(value, dict):
        return {key: _scrub_payload(core, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_payload(core, item) for item in value]
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
) -> IngestReport:
    """Ingest the transcript of ``session_id`` from its stored byte offset.

    ``path`` defaults to the session's ``transcript_path``; a new path is
    recorded. A session unknown so far is created (a subagent's with its
    parent). Safe to call repeatedly and concurrently: see the module docstring.
    """
    from memlane.capture.chunker import chunk_turns
    from memlane.capture.lifecycle import begin_session
    from memlane.capture.transcript import ParseStats, iter_turns

    store = core.store
    session = store.get_session(session_id)
    if session is None:
        session = begin_session(
            core,
            session_id,
            project=project,
            agent="claude-code",
            transcript_path=path,
            parent_session_id=parent_session_id,
        )
    elif path and path != session.transcript_path:
        store.update_session(session_id, {"transcript_path": path})
    path = path or session.transcript_path
    report = IngestReport(session_id, path, start_offset=session.transcript_offset)
    if not path or not os.path.isfile(path):
        return report
    size = os.path.getsize(path)
    chunks = turns = corrupt = replaced = 0
    end = session.transcript_offset
    # The next chunk index and the offset it goes with: counting a long session's
    # chunks again for every batch would cost more than the batch.
    next_index: int | None = None
    committed = -1
    while True:
        with store.transaction():
            current = store.get_session(session_id)
            if current is None:
                break  # deleted meanwhile: nothing to attach chunks to
            offset = current.transcript_offset
            if offset > size:
                # Rewritten shorter (truncated, replaced): the stored chunks describe a
                # file that is gone. Drop them and start over, in the same transaction
                # as the first new batch, so a crash or a concurrent ingest sees either
                # the old chunks and offset or the new ones, never both.
                replaced += _drop_transcript_chunks(core, session_id)
                store.update_session(session_id, {"transcript_offset": 0})
                offset = 0
                next_index = None
            if offset >= size:
                end = offset
                break
            stats = ParseStats()
            generator = iter_turns(path, offset, stats)
            batch = list(islice(generator, batch_turns))
            full = len(batch) == batch_turns
            if full:
                # One record can end two turns (tool results, then a prompt): resuming
                # after the first would skip the second, so a batch takes in every turn
                # that ends where its last one does (the first other is parsed again).
                for extra in generator:
                    if extra.end_offset != batch[-1].end_offset:
                        break
                    batch.append(extra)
                else:
                    full = False  # end of file: resume after the last record consumed
            # A full batch resumes after its last turn; at end of file, after the
            # last record consumed (skipped records included).
            end = batch[-1].end_offset if full else stats.end_offset
            corrupt += stats.corrupt
            if batch:
                if next_index is None or offset != committed:
                    # First batch, or another ingest moved the offset since ours.
                    next_index = store.count_memories(
                        MemoryFilter(session_id=session_id, kinds=("turn",))
                    )
                stored, next_index = _store_chunks(
                    core, current.project, session_id, chunk_turns(batch), next_index
                )
                chunks += stored
                turns += len(batch)
            if end <= offset:
                break
            store.update_session(session_id, {"transcript_offset": end})
            committed = end
        if not full:
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
    )


def _drop_transcript_chunks(core: Core, session_id: str) -> int:
    """Delete the session's chunks ingested from its transcript (inside the caller's
    transaction); turns imported from elsewhere stay."""
    store = core.store
    ids = store.memory_ids(MemoryFilter(session_id=session_id, kinds=("turn",)))
    ours = [m.id for m in store.get_memories(ids) if m.source == TRANSCRIPT_SOURCE]
    return store.delete_memories(ours) if ours else 0


def _store_chunks(
    core: Core, project: str, session_id: str, chunks: Sequence[Chunk], index: int
) -> tuple[int, int]:
    """Save ``chunks`` as turn memories from chunk ``index`` on (inside the caller's
    transaction); returns how many were stored and the next index."""
    store = core.store
    now = core.now()
    stored = 0
    with memories.batch(core) as writer:
        for chunk in chunks:
            # Indexes only grow; probing skips any left by a pruned or imported row.
            while store.find_memory(
                project, source=TRANSCRIPT_SOURCE, source_id=f"{session_id}:{index}"
            ):
                index += 1
            draft = Draft(
                chunk.text,
                project=project,
                type="turn",
                kind="turn",
                derive_title=True,
                session_id=session_id,
                source=TRANSCRIPT_SOURCE,
                source_id=f"{session_id}:{index}",
                fresh_source_id=True,  # the probe above found it free
                created_at=chunk.timestamp or now,
                files=chunk.files,
                tags=chunk.tool_names,
                metadata={
                    "chunk_index": index,
                    "role": chunk.role,
                    "errors": list(chunk.errors),
                    "transcript_offset": chunk.end_offset,
                    "tokens": chunk.token_estimate,
                },
            )
            try:
                writer.save(draft)
            except NothingToStore:
                continue  # all private: the index stays free for the next chunk
            index += 1
            stored += 1
    return stored, index


def transcript_pending(core: Core, session_id: str) -> bool:
    """True when the session's transcript has bytes not ingested yet (a cheap stat)."""
    session = core.store.get_session(session_id)
    if session is None or not session.transcript_path:
        return False
    try:
        return os.path.getsize(session.transcript_path) > session.transcript_offset
    except OSError:
        return False


# -- recall selection --------------------------------------------------------------


def content_words(text: str) -> set[str]:
    """Lower-cased words of three letters or more that are not stopwords, plus CJK chars."""
    lowered = text.lower()
    words = {w for w in re.findall(_WORD, lowered) if w not in PROMPT_STOPWORDS}
    if has_cjk(text):
        words.update(re.findall(_CJK, text))
    return words


def select_recall(
    prompt: str,
    hits: Sequence[SearchHit],
    *,
    session_id: str | None,
    limit: int,
    min_score: float = 0.0,
) -> list[SearchHit]:
    """The hits worth injecting for ``prompt`` (see the module docstring)."""
    if limit <= 0 or not content_words(prompt):
        return []
    chosen: list[SearchHit] = []
    for hit in hits:
        if session_id is not None and hit.session_id == session_id:
            continue
        if hit.score < min_score:
            continue
        chosen.append(hit)
        if len(chosen) >= limit:
            break
    return chosen
