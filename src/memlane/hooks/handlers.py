"""One handler per hook event: parse the normalized event, call the facade, format.

Handlers return the context to inject (or None); the dispatcher prints it in
the agent's format. They never catch their own errors: the dispatcher logs any
failure and exits 0 silently. What each event does (DESIGN §5):

* SessionStart — idempotent session start, then the context pack within
  ``context_token_budget``; starts the worker in the background when configured
  and not running (never waits for it).
* UserPromptSubmit — stores the prompt; for a meaningful one (not a slash
  command, not "ok") and an agent that takes context, recalls and injects what is
  relevant — each memory by its passage that matches the prompt, within
  ``recall_max_chars``: hybrid when the worker runs the hook (relayed, its model
  warm), keyword in a hook process.
* PostToolUse — one typed observation.
* Stop / SubagentStop — incremental transcript ingest, up to the hook's deadline (the
  rest waits for the next Stop); then, once answered, summary and checkpoint. With the
  worker up they run there, off the prompts' thread.
* PreCompact — checkpoint.
* SessionEnd — marks the session ended and hands the transcript tail to a
  detached process (Claude Code gives all SessionEnd hooks 1.5 s together), or, in
  the worker, ingests it after the answer.

Every event's write names its session's agent when the session has none (the agent
comes from the hook command): Kiro, Cursor and Windsurf send no SessionStart. The name
travels with the session's touch (``agent=``), which reads the row anyway: no query
of its own, and a known agent is never replaced.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from memlane.capture.pipeline import IngestReport
    from memlane.config import Settings
    from memlane.hooks.agents import HookEvent
    from memlane.models import SaveResult, SearchHit, SearchResult
    from memlane.service import Memory


class Injecting:
    """What a handler injects, for the injection log (filled in while the hook runs)."""

    __slots__ = ("memories", "mode", "prompt", "prompt_number")

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.prompt = ""
        self.prompt_number: int | None = None
        self.memories: tuple[tuple[int, float | None], ...] = ()


class HookContext:
    """Settings, project and a Memory for one hook run.

    In a hook process the Memory is opened on first use and closed at the end.
    In the worker (``memory`` given, ``deferred`` a list) the worker's own Memory
    is used and writes are deferred: the worker answers first and then runs
    ``deferred``, so the agent never waits for a write (see memlane.worker.relay_server).
    ``after`` (a hook process): actions the process runs once it printed its answer.
    ``deadline``: see :attr:`deadline`.
    """

    def __init__(
        self,
        event: HookEvent,
        settings: Settings,
        project: str,
        *,
        memory: Memory | None = None,
        deferred: list[Callable[[], object]] | None = None,
        after: list[Callable[[], object]] | None = None,
        deadline: float | None = None,
    ) -> None:
        self.event = event
        # When (time.monotonic()) a transcript ingest stops beginning batches: what is
        # left waits for the next Stop, which resumes from the stored offset.
        self.deadline = deadline
        self.settings = settings
        self.project = project
        self.db = settings.db_target
        self._memory = memory
        self._owned = memory is None
        self.deferred = deferred
        self.after = after
        self.injecting: Injecting | None = None
        # When the hook's capture happened (epoch seconds): a reply's key without a turn
        # id, and the time the spool keeps (memlane.hooks.spool) when the hook gives up.
        self.started_at = time.time()
        # Set once what only this hook's input holds is stored (the dispatcher spools it
        # when the hook gives up before: memlane.hooks.spool).
        self.captured = False
        # Set when Stop stores the turn's reply (no transcript read): then it is spooled.
        self.keeps_reply = False
        # Set when a bounded replay before this hook's capture left captures in the spool:
        # keeps the capture there after them, True when it did (store_own_capture). A slot,
        # not a flag: it holds dispatch.keep_behind, and the dispatcher and the spool import
        # this module (no import circle: tests/test_architecture.py).
        self.spool_first: Callable[[HookContext], bool] | None = None

    @property
    def in_worker(self) -> bool:
        return self.deferred is not None

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            from memlane.service import Memory
            from memlane.store import open_configured

            self._memory = Memory(open_configured(self.settings), self.settings)
        return self._memory

    def write(self, action: Callable[[], object]) -> None:
        """Run ``action`` now, or after the answer when the worker handles the hook."""
        if self.deferred is None:
            action()
        else:
            self.deferred.append(action)

    def after_answer(self, action: Callable[[], object]) -> None:
        """Run ``action`` once the agent has the answer: after the worker replied, or
        after this process printed it (now when neither applies)."""
        if self.deferred is not None:
            self.deferred.append(action)
        elif self.after is not None:
            self.after.append(action)
        else:
            action()

    def close(self) -> None:
        """Close the Memory this hook opened (after the pending ``after`` actions)."""
        if self.after:
            self.after.append(self._close_now)
        else:
            self._close_now()

    def _close_now(self) -> None:
        if self._memory is not None and self._owned:
            self._memory.close()
            self._memory = None


def session_start(ctx: HookContext) -> str | None:
    from memlane.hooks.render import context_block

    event = ctx.event
    memory = ctx.memory
    ctx.write(
        lambda: memory.session_start(
            event.session_id,
            project=ctx.project,
            agent=event.agent,
            transcript_path=event.transcript_path,
        )
    )
    if ctx.settings.worker__autostart and not ctx.in_worker:
        start_worker(ctx)
    if not event.injects:
        return None
    from memlane.project import current_branch

    branch = current_branch(event.cwd) if event.cwd else None
    ctx.injecting = Injecting("context")
    pack = memory.context(project=ctx.project, branch=branch)
    return context_block(pack)


def recall_for_prompt(
    memory: Memory,
    settings: Settings,
    query: str,
    *,
    project: str | None,
    session_id: str | None,
    mode: str | None,
) -> tuple[SearchResult, list[SearchHit], str]:
    """What the prompt hook injects for ``query``: the recalled candidates, the hits
    chosen from them, and the framed block ('' for none). ``mode``: None for the
    configured search mode, "keyword" in a hook process."""
    from memlane.hooks.render import recall_block
    from memlane.search.passages import asks_for_amount, prompt_terms

    hits, chosen = memory.prompt_recall(query, project=project, session_id=session_id, mode=mode)
    block = recall_block(
        chosen,
        prompt_terms(query),
        settings.recall_max_chars,
        amounts=asks_for_amount(query),
    )
    return hits, chosen, block


def user_prompt_submit(ctx: HookContext) -> str | None:
    event = ctx.event
    prompt = event.prompt or ""
    memory = ctx.memory
    injecting = Injecting("keyword")
    if event.injects:  # the injection log: what an agent that takes context received
        ctx.injecting = injecting

    def store_prompt() -> None:
        injecting.prompt_number = store_own_capture(ctx, "prompt")

    ctx.write(store_prompt)
    query = memory.recall_query(prompt)  # the one rule of Memory.prompt_recall
    if not query:
        return None
    if not ctx.in_worker and ctx.settings.worker__autostart:
        start_worker(ctx)  # it died or never started: the next prompts are relayed again
    if not event.injects:
        return None  # Cursor, Windsurf: nothing to recall for
    # The worker's search mode once its model and vectors are loaded (never wait for a
    # load on a prompt: the hook would time out); keyword until then and in a hook process.
    warm = ctx.in_worker and memory.search_engine.semantic_ready()
    mode = None if warm else "keyword"
    hits, chosen, block = recall_for_prompt(
        memory, ctx.settings, query, project=ctx.project, session_id=event.session_id, mode=mode
    )
    injecting.mode = hits.mode or injecting.mode
    injecting.prompt = query
    injecting.memories = tuple((hit.id, hit.score) for hit in chosen)
    return block or None


def post_tool_use(ctx: HookContext) -> str | None:
    from memlane.capture.classify import never_recorded

    if never_recorded(ctx.event.tool_name, ctx.event.tool_input):
        return None  # neither stored nor spooled (a task's output: maybe what `pass show` printed)
    ctx.write(lambda: store_own_capture(ctx, "tool"))
    return None


def stop(ctx: HookContext) -> str | None:
    event = ctx.event
    memory = ctx.memory
    memory.touch_session(event.session_id, ctx.project, agent=event.agent)
    read = 0
    if event.transcript_path:
        report = _ingest(ctx, event.session_id, event.transcript_path)
        read = report.end_offset
        _ingest_subagents(ctx, event.transcript_path)
    if not read and reply_to_keep(event):
        ctx.keeps_reply = True
        store_own_capture(ctx, "reply")  # no transcript to read: keep at least the answer

    def wrap_up() -> None:
        memory.refresh_summary(event.session_id)
        memory.refresh_checkpoint(event.session_id, event.last_assistant_message)
        # Stop is async in Claude Code; the check is one indexed query, the run is detached.
        memory.schedule_maintenance()

    # Built from what is stored: the answer (the worker's "stored") does not wait for it.
    ctx.after_answer(wrap_up)
    return None


def _ingest_subagents(ctx: HookContext, transcript_path: str) -> None:
    """The session's subagent transcripts next to its own, from their stored offsets: what
    SubagentStop ingests when it fires (it does not when the hooks were installed after the
    subagent ran, or a replayed or restored session has only its files)."""
    from memlane.capture.sources import subagent_files
    from memlane.capture.transcript import subagent_session_id

    session_id = ctx.event.session_id
    for agent_id, path in subagent_files(transcript_path):
        _ingest(ctx, subagent_session_id(session_id, agent_id), path, parent=session_id)


def _ingest(
    ctx: HookContext, session_id: str, path: str, parent: str | None = None
) -> IngestReport:
    """Ingest a transcript the hook names; one line in the hook log when it is there but
    cannot be read (a folder, a FIFO, a device, a dangling link): the hook stays silent.
    A transcript not written yet is nothing to report."""
    report = ctx.memory.ingest_transcript(
        session_id,
        path,
        project=ctx.project,
        parent_session_id=parent,
        deadline=ctx.deadline,
        summarize=False,  # Stop's wrap-up does, after the answer
    )
    if report.unread:
        from memlane.hooks.log import log_note

        log_note(ctx.event.event, f"transcript {path} not read: {report.unread}")
    return report


def subagent_stop(ctx: HookContext) -> str | None:
    from memlane.capture.transcript import is_compaction_agent, subagent_session_id

    event = ctx.event
    if event.agent_transcript_path and event.agent_id and not is_compaction_agent(event.agent_id):
        subagent = subagent_session_id(event.session_id, event.agent_id)
        _ingest(ctx, subagent, event.agent_transcript_path, parent=event.session_id)
    else:
        ctx.memory.touch_session(event.session_id, ctx.project, agent=event.agent)
    return None


def pre_compact(ctx: HookContext) -> str | None:
    memory = ctx.memory
    event = ctx.event

    def checkpoint() -> None:
        memory.touch_session(event.session_id, ctx.project, agent=event.agent)
        memory.refresh_checkpoint(event.session_id, event.last_assistant_message)

    ctx.write(checkpoint)
    return None


def session_end(ctx: HookContext) -> str | None:
    event = ctx.event
    memory = ctx.memory
    # Only a session no event has seen yet is created (and named): session_end's own
    # update stamps the activity, so a touch would be one more write in a tight budget.
    if memory.find_session(event.session_id) is None:
        memory.touch_session(event.session_id, ctx.project, agent=event.agent)
    if event.transcript_path:
        memory.session_start(
            event.session_id, project=ctx.project, transcript_path=event.transcript_path
        )
    memory.session_end(event.session_id, summarize=False)  # Stop or the tail summarizes
    if memory.transcript_pending(event.session_id):
        if ctx.in_worker:  # its ingest thread, once answered: no process to start
            from memlane.hooks.tail import finish_session

            session_id = event.session_id
            ctx.after_answer(lambda: finish_session(memory, session_id))
        else:
            spawn_detached(ctx, ["-m", "memlane.hooks.tail", event.session_id])
    return None


HANDLERS: dict[str, Callable[[HookContext], str | None]] = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "post-tool-use": post_tool_use,
    "stop": stop,
    "subagent-stop": subagent_stop,
    "pre-compact": pre_compact,
    "session-end": session_end,
}


# -- helpers -----------------------------------------------------------------------


def log_injection(ctx: HookContext, text: str, started: float) -> None:
    """Hand what this hook injected (``text``: what the agent receives) to the injection
    log, once the agent has its answer; ``started``: the hook's ``perf_counter`` start."""
    injecting = ctx.injecting
    if injecting is None:
        return
    hook_ms = (time.perf_counter() - started) * 1000
    memory, event = ctx.memory, ctx.event

    def write() -> None:
        from memlane.injections import Injected

        memory.record_injection(
            Injected(
                session_id=event.session_id,
                project=ctx.project,
                event=event.event,
                text=text,
                mode=injecting.mode,
                relayed=ctx.in_worker,
                hook_ms=hook_ms,
                prompt=injecting.prompt,
                prompt_number=injecting.prompt_number,
                memories=injecting.memories,
            )
        )

    ctx.after_answer(write)


def reply_to_keep(event: HookEvent) -> bool:
    """Whether Stop keeps the turn's final answer when it read no transcript (Claude
    Code's is always in its transcript)."""
    return bool(event.last_assistant_message) and event.agent != "claude-code"


def reply_key(event: HookEvent, at: float) -> str:
    """The key of a reply kept without a transcript (its source id): the agent's turn id,
    else the hook's time ``at`` (epoch seconds, :attr:`HookContext.started_at`)."""
    return event.turn_id or str(int(at * 1000))


def store_own_capture(ctx: HookContext, kind: str) -> int | None:
    """Store the hook's capture of ``kind`` (a prompt: its number; a reply, of agents
    without a parsable transcript: a turn chunk under the prompt it answers), and mark it
    captured; unless ``ctx.spool_first`` keeps it in the spool after the captures a
    bounded replay left there, so a session's captures keep their order."""
    if ctx.spool_first is not None and ctx.spool_first(ctx):
        ctx.captured = True
        return None
    _saved, number = store_capture(
        ctx.memory, capture(kind, ctx.event, ctx.project, ctx.started_at)
    )
    ctx.captured = True
    return number


def capture(kind: str, event: HookEvent, project: str, at: float) -> dict[str, Any]:
    """What a capture of ``kind`` ("prompt", "tool", "reply") of ``event`` stores, as
    :func:`store_capture` takes it and the spool keeps it (memlane.hooks.spool): its
    session, project and agent, and the prompt and its turn id; the tool call; or the
    reply and its key (:func:`reply_key`, ``at`` the hook's time)."""
    fields: dict[str, Any] = {
        "kind": kind,
        "session_id": event.session_id,
        "project": project,
        "agent": event.agent,
    }
    if kind == "prompt":
        fields.update(prompt=event.prompt or "", turn=event.turn_id)
    elif kind == "tool":
        fields.update(
            tool_name=event.tool_name,
            tool_input=event.tool_input,
            tool_response=event.tool_response,
            cwd=event.tool_cwd or event.cwd or None,
            tool_use_id=event.tool_use_id,
        )
    else:
        fields.update(reply=event.last_assistant_message or "", key=reply_key(event, at))
    return fields


def store_capture(
    memory: Memory, fields: dict[str, Any], *, now: datetime | None = None, once: bool = False
) -> tuple[SaveResult | None, int | None]:
    """Store a :func:`capture`: the memory saved (None when none was) and, for a prompt,
    its number in the session. ``now``: when it happened (default: now); ``once``: a
    prompt the session holds already, sent at ``now``, is not stored again (a replay)."""
    session, project, agent = fields["session_id"], fields["project"], fields["agent"]
    if fields["kind"] == "prompt":
        prompt = memory.record_prompt(
            session,
            fields["prompt"],
            project=project,
            agent=agent,
            now=now,
            once=once,
            turn=fields.get("turn"),
        )
        return prompt.saved, prompt.number
    if fields["kind"] == "tool":
        saved = memory.record_tool_event(
            session,
            fields["tool_name"],
            fields.get("tool_input"),
            fields.get("tool_response"),
            cwd=fields["cwd"],
            project=project,
            tool_use_id=fields["tool_use_id"],
            agent=agent,
            now=now,
        )
        return saved, None
    saved = memory.record_reply(
        session, fields["reply"], key=fields["key"], agent=agent, project=project, now=now
    )
    return saved, None


def start_worker(ctx: HookContext) -> bool:
    """Spawn the worker in the background unless it runs or was tried moments ago."""
    from memlane.runtime import spawn_worker_detached

    return spawn_worker_detached(ctx.settings.paths, db=ctx.db) is not None


def spawn_detached(ctx: HookContext, args: list[str]) -> None:
    """Start ``python <args>`` detached on this hook's database (given in its environment,
    never on its command line: :func:`memlane.runtime.spawn_detached`), output to the hook
    log; never wait."""
    from memlane.hooks.log import log_path
    from memlane.runtime import spawn_detached as spawn

    spawn([sys.executable, *args], log_path(ctx.settings.paths.log_dir), db=ctx.db)
