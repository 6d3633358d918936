"""The injection log: what memlane put into each prompt, what it cost, and the user's marks.

A memory that writes into every prompt must be inspectable. The hooks hand
every SessionStart and UserPromptSubmit answer to :func:`record` *after* the
agent has it (the worker writes after replying; a hook process after printing):

* an answer with text becomes one entry: session, prompt number, event, the
  memories shown with their scores, the characters the agent received and their
  token estimate (:func:`memlane.text.estimate_tokens`, the context budget's
  chars/4), the recall mode, whether the worker answered (relayed) or the hook's
  own process, and the hook's wall time. Text and prompt go through the privacy
  filter (:meth:`Core.scrub`) like any stored text; memlane's own markers around
  the text are not stored (they are the same on every entry);
* an answer without text is only counted, per session, UTC day and event.

:func:`entries` reads the log back in time order, :func:`stats` sums it (the
per-session token meter, the share of prompts that got anything, tokens per
day), and :func:`mark` records a user's ``useful`` / ``noise`` mark on an
injected memory for the prompt it was injected for — the ranking signal of
:mod:`memlane.search.feedback`.

Retention (the store keeps these rules for every deletion path): deleting a
memory clears the text of every entry that showed it and drops its marks;
deleting a session drops its entries and counts; maintenance prunes entries
by age and clears the oldest entries' text first when the database is over its
size cap; forgetting by a query clears the entries that contain it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from memlane import arguments, memories
from memlane.errors import Conflict, InvalidInput, NotFound
from memlane.models import (
    FEEDBACK_MARKS,
    INJECTING_EVENTS,
    Feedback,
    InjectedMemory,
    Injection,
    InjectionStats,
    NewInjection,
    possible_id,
)
from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from memlane.text import estimate_tokens

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Sequence

    from memlane.core import Core

# The prompt an entry keeps (what recall searched for: the hook cuts it to 2,000).
MAX_PROMPT_CHARS = 2_000
# Days of injected tokens per day in the stats.
STATS_DAYS = 30
# The mode of a SessionStart entry: the context pack, not a search.
CONTEXT_MODE = "context"
PROMPT_EVENT = "user-prompt-submit"


@dataclass(frozen=True, slots=True)
class Injected:
    """What one hook answered, as the hook hands it to :func:`record`.

    ``text``: exactly what the agent received ('' when nothing); ``memories``:
    ``(memory id, score)`` in the order shown; ``hook_ms``: from the hook's start
    to its answer.
    """

    session_id: str
    project: str
    event: str
    text: str
    mode: str
    relayed: bool
    hook_ms: float
    prompt: str = ""
    prompt_number: int | None = None
    memories: tuple[tuple[int, float | None], ...] = ()


def record(core: Core, injected: Injected) -> int | None:
    """Log one hook answer: an entry (its id) when it injected text, else a count (None)."""
    if injected.event not in INJECTING_EVENTS:
        raise InvalidInput(
            f"only {' and '.join(INJECTING_EVENTS)} inject text, not {injected.event!r}"
        )
    now = core.now()
    text = injected.text.strip()
    if not text:
        core.store.count_quiet_hook(
            injected.session_id, injected.project, injected.event, now.strftime("%Y-%m-%d")
        )
        return None
    entry = NewInjection(
        session_id=injected.session_id,
        project=injected.project,
        event=injected.event,
        created_at=now,
        mode=injected.mode,
        relayed=injected.relayed,
        hook_ms=round(max(injected.hook_ms, 0.0), 2),
        chars=len(text),
        tokens=estimate_tokens(text),
        text=core.scrub(unwrap(text)),
        prompt=core.scrub(injected.prompt[:MAX_PROMPT_CHARS]).strip(),
        prompt_number=injected.prompt_number,
        memories=tuple(
            InjectedMemory(memory_id, rank, score)
            for rank, (memory_id, score) in enumerate(injected.memories, 1)
        ),
    )
    return core.store.insert_injection(entry)


def unwrap(text: str) -> str:
    """The injected text without memlane's markers around it (the privacy filter would
    remove everything between them: they mark memlane's own context)."""
    body = text.strip()
    if body.startswith(INJECTED_OPEN) and body.endswith(INJECTED_CLOSE):
        body = body[len(INJECTED_OPEN) : -len(INJECTED_CLOSE)]
    return body.strip()


def entries(
    core: Core,
    *,
    session_id: str | None = None,
    project: str | None = None,
    all_projects: bool = False,
    limit: int = 20,
) -> list[Injection]:
    """The last ``limit`` entries, oldest first: of one session (any project), else of
    ``project`` (default: the current one) or every project."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, got {limit}")
    session_id = arguments.optional_text("the session id", session_id)
    projects = None if session_id is not None else core.projects_for(project, all_projects)
    found = core.store.list_injections(session_id=session_id, projects=projects, limit=limit)
    return found[::-1]


def stats(core: Core, project: str | None = None) -> InjectionStats:
    """The log's sums for ``project`` (None: every project)."""
    since = core.now() - timedelta(days=STATS_DAYS - 1)
    since = since.replace(hour=0, minute=0, second=0, microsecond=0)
    totals = core.store.injection_totals(None if project is None else (project,), since)
    prompts_injected = totals.injected.get(PROMPT_EVENT, 0)
    starts_injected = totals.injected.get("session-start", 0)
    per_session = sorted(totals.session_tokens.values())
    return InjectionStats(
        prompts=prompts_injected + totals.quiet.get(PROMPT_EVENT, 0),
        prompts_injected=prompts_injected,
        session_starts=starts_injected + totals.quiet.get("session-start", 0),
        session_starts_injected=starts_injected,
        sessions=len(per_session),
        tokens_total=sum(per_session),
        tokens_per_session_median=median(per_session),
        tokens_per_session_p95=percentile(per_session, 0.95),
        per_day=totals.day_tokens,
        marked_useful=totals.marks.get("useful", 0),
        marked_noise=totals.marks.get("noise", 0),
    )


def median(values: Sequence[int]) -> float:
    """The median of sorted ``values`` (0 for none)."""
    if not values:
        return 0.0
    middle = len(values) // 2
    if len(values) % 2:
        return float(values[middle])
    return (values[middle - 1] + values[middle]) / 2


def percentile(values: Sequence[int], share: float) -> float:
    """The nearest-rank percentile of sorted ``values``: the smallest value at or above
    ``share`` of them (0 for none)."""
    if not values:
        return 0.0
    rank = max(1, -(-round(share * 1000) * len(values) // 1000))  # ceil, in integers
    return float(values[min(rank, len(values)) - 1])


def mark(core: Core, memory_id: int, value: str, *, injection_id: int | None = None) -> Feedback:
    """Mark memory ``memory_id`` ``useful`` or ``noise`` for the prompt it was injected for.

    The prompt is that of entry ``injection_id``, else of the memory's latest
    prompt injection. A new mark on the same entry replaces the earlier one.
    """
    if value not in FEEDBACK_MARKS:
        raise InvalidInput(f"a mark is {' or '.join(FEEDBACK_MARKS)}, not {value!r}")
    if not memories.get_many(core, [memory_id]):
        raise NotFound(f"no memory with id {memory_id} (the injection log lists what was shown)")
    if injection_id is not None:
        valid = possible_id(injection_id)
        found = core.store.list_injections(ids=(injection_id,), limit=1) if valid else []
        if not found:
            raise NotFound(f"no injection with id {injection_id} in the log")
        entry = found[0]
        if memory_id not in {m.memory_id for m in entry.memories}:
            raise InvalidInput(f"injection {injection_id} did not show memory {memory_id}")
    else:
        found = core.store.list_injections(memory_id=memory_id, event=PROMPT_EVENT, limit=1)
        if not found:
            raise Conflict(
                f"memory {memory_id} was never recalled for a prompt: a mark says whether it"
                " helped the prompt it was injected for (see `memlane log`)"
            )
        entry = found[0]
    if entry.event != PROMPT_EVENT:
        raise InvalidInput(
            f"injection {entry.id} is a session-start context pack: marks are for memories"
            " recalled for a prompt"
        )
    if not entry.prompt:
        raise Conflict(
            f"the prompt of injection {entry.id} was removed (a memory it showed was"
            " deleted or forgotten): nothing to relate the mark to"
        )
    feedback = Feedback(memory_id, value, entry.prompt, core.now(), entry.id)
    core.store.put_feedback(feedback)
    return feedback
