"""The injection log through the facade: recording, reading, stats, marks as a ranking
signal, and retention (deletion, forget, maintenance). Real stores, no mocks."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from memlane.errors import Conflict, InvalidInput, NotFound
from memlane.injections import Injected, percentile
from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from memlane.search.feedback import USEFUL_LIFT
from memlane.service import Memory
from memlane.text import estimate_tokens

RETRY = "Payment retries reuse the idempotency key when the Stripe webhook times out"
ASKED = "why does the stripe webhook retry reuse the idempotency key"
SIMILAR = "does the stripe retry reuse an idempotency key on timeouts"  # 5 of 6 words shared
OTHER = "stripe webhook timeouts in production"  # shares 2 of 4 words: similar, s = 0.5
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def wrapped(body: str) -> str:
    return f"{INJECTED_OPEN}\n{body}\n{INJECTED_CLOSE}"


def inject(
    memory: Memory,
    *,
    session: str = "s1",
    project: str = "billing",
    prompt: str = ASKED,
    text: str = "recalled: " + RETRY,
    shown: tuple[tuple[int, float | None], ...] = (),
    number: int | None = 1,
    event: str = "user-prompt-submit",
) -> int | None:
    return memory.record_injection(
        Injected(
            session_id=session,
            project=project,
            event=event,
            text=wrapped(text) if text else "",
            mode="keyword",
            relayed=False,
            hook_ms=42.0,
            prompt=prompt,
            prompt_number=number,
            memories=shown,
        )
    )


def test_an_answer_is_logged_scrubbed_and_measured_as_received(any_memory: Memory) -> None:
    memory = any_memory
    mid = memory.save(RETRY, project="billing", type="decision").id
    text = f"recalled #{mid}: {RETRY}\nkey {AWS_KEY} <private>hidden</private>"
    entry_id = inject(memory, text=text, prompt=f"use {AWS_KEY} for {ASKED}", shown=((mid, 0.8),))
    assert entry_id is not None
    (entry,) = memory.injection_log(project="billing")
    received = wrapped(text)
    assert entry.chars == len(received)
    assert entry.tokens == estimate_tokens(received)  # the context budget's estimate
    assert entry.text.startswith(f"recalled #{mid}: {RETRY}")
    assert AWS_KEY not in entry.text and "hidden" not in entry.text
    assert INJECTED_OPEN not in entry.text  # the markers are not stored
    assert AWS_KEY not in entry.prompt and "idempotency" in entry.prompt
    assert (entry.session_id, entry.prompt_number, entry.event) == ("s1", 1, "user-prompt-submit")
    assert [(m.memory_id, m.rank) for m in entry.memories] == [(mid, 1)]


def test_nothing_injected_is_only_counted(any_memory: Memory) -> None:
    memory = any_memory
    assert inject(memory, text="") is None
    assert inject(memory, text="", event="session-start", number=None) is None
    assert memory.injection_log(all_projects=True) == []
    stats = memory.stats().injections
    assert (stats.prompts, stats.prompts_injected) == (1, 0)
    assert (stats.session_starts, stats.session_starts_injected) == (1, 0)
    assert stats.sessions == 1 and stats.tokens_total == 0
    with pytest.raises(InvalidInput, match="post-tool-use"):
        inject(memory, event="post-tool-use")


def test_log_order_scope_and_limit(any_memory: Memory) -> None:
    memory = any_memory
    ids = [inject(memory, number=n) for n in (1, 2, 3)]
    other = inject(memory, project="web", session="s2")
    assert [e.id for e in memory.injection_log(project="billing")] == ids
    assert [e.id for e in memory.injection_log(project="billing", limit=2)] == ids[1:]
    assert [e.id for e in memory.injection_log(session_id="s2")] == [other]
    assert len(memory.injection_log(all_projects=True)) == 4
    with pytest.raises(InvalidInput):
        memory.injection_log(limit=0)
    with pytest.raises(InvalidInput):
        memory.injection_log(session_id=" ")


def test_stats_meter_per_session_and_share_of_prompts(any_memory: Memory) -> None:
    memory = any_memory
    # Three sessions: 100 + 60 tokens, 20 tokens, and one whose prompts got nothing.
    frame = len(wrapped(""))  # the markers count: the agent receives them
    inject(memory, session="a", text="x" * (400 - frame))  # 400 chars = 100 tokens
    inject(memory, session="a", text="x" * (240 - frame), number=2)  # 60 tokens
    inject(memory, session="b", text="x" * (80 - frame))  # 20 tokens
    inject(memory, session="c", text="")
    inject(memory, session="c", text="", number=2)
    stats = memory.stats(project="billing").injections
    assert (stats.prompts, stats.prompts_injected) == (5, 3)
    assert stats.injected_share == pytest.approx(0.6)
    assert (stats.sessions, stats.tokens_total) == (3, 180)
    assert stats.tokens_per_session_median == 20
    assert stats.tokens_per_session_p95 == 160
    assert sum(stats.per_day.values()) == 180
    assert memory.stats(project="nothing-here").injections.prompts == 0


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 21))
    assert percentile(values, 0.95) == 19
    assert percentile(values, 0.5) == 10
    assert percentile([7], 0.95) == 7
    assert percentile([], 0.95) == 0


def test_marks_name_the_prompt_and_refuse_what_cannot_be_marked(any_memory: Memory) -> None:
    memory = any_memory
    mid = memory.save(RETRY, project="billing", type="decision").id
    never = memory.save("never shown", project="billing", type="note").id
    start = inject(memory, event="session-start", number=None, prompt="", shown=((never, None),))
    first = inject(memory, shown=((mid, 0.8),))
    second = inject(
        memory, prompt="later prompt about stripe retries", number=2, shown=((mid, 0.7),)
    )
    marked = memory.feedback(mid, "noise")
    assert (marked.injection_id, marked.prompt) == (second, "later prompt about stripe retries")
    again = memory.feedback(mid, "useful", injection_id=first)
    assert (again.injection_id, again.prompt) == (first, ASKED)
    by_id = {e.id: e for e in memory.injection_log(project="billing")}
    assert by_id[first].memories[0].feedback == "useful"
    assert by_id[second].memories[0].feedback == "noise"
    assert memory.stats().injections.marked_noise == 1
    with pytest.raises(NotFound, match="no memory with id 999"):
        memory.feedback(999, "noise")
    with pytest.raises(Conflict, match="never recalled for a prompt"):
        memory.feedback(never, "noise")
    with pytest.raises(InvalidInput, match="session-start"):
        memory.feedback(never, "noise", injection_id=start)
    with pytest.raises(InvalidInput, match="did not show"):
        memory.feedback(never, "noise", injection_id=first)
    with pytest.raises(NotFound, match="no injection with id 12345"):
        memory.feedback(mid, "noise", injection_id=12345)
    with pytest.raises(InvalidInput, match="useful or noise"):
        memory.feedback(mid, "meh")


def _score(memory: Memory, prompt: str, mid: int) -> float | None:
    hits = memory.recall(prompt, project="billing", mode="keyword", min_score=0.0)
    return next((hit.score for hit in hits if hit.id == mid), None)


def test_noise_demotes_for_similar_prompts_only(any_memory: Memory) -> None:
    memory = any_memory
    mid = memory.save(RETRY, project="billing", type="decision").id
    memory.save("The dashboard deploys to production with the web pipeline", project="billing")
    before = {p: _score(memory, p, mid) for p in (ASKED, SIMILAR, OTHER)}
    assert all(score is not None and score > 0 for score in before.values()), before
    unrelated = "deploy the dashboard to production"
    before_unrelated = memory.recall(unrelated, project="billing", mode="keyword", min_score=0.0)
    inject(memory, shown=((mid, before[ASKED]),))
    memory.feedback(mid, "noise")
    assert _score(memory, ASKED, mid) is None  # the same words: not injected again
    assert _score(memory, SIMILAR, mid) == pytest.approx(before[SIMILAR] * (1 - 5 / 6))
    assert _score(memory, OTHER, mid) == pytest.approx(before[OTHER] * 0.5)
    after_unrelated = memory.recall(unrelated, project="billing", mode="keyword", min_score=0.0)
    assert [(h.id, h.score) for h in after_unrelated] == [(h.id, h.score) for h in before_unrelated]
    # Under the floor a demoted hit is not recalled at all.
    floor = before[SIMILAR] * 0.5
    assert memory.recall(SIMILAR, project="billing", mode="keyword", min_score=floor) == []


def test_useful_lifts_a_little_and_reorders(any_memory: Memory) -> None:
    memory = any_memory
    mid = memory.save(RETRY, project="billing", type="decision").id
    rival = memory.save(
        "Stripe webhook retry: reuse the same idempotency key, the retry must be idempotent",
        project="billing",
        type="decision",
    ).id
    hits = memory.recall(ASKED, project="billing", mode="keyword", min_score=0.0)
    scores = {hit.id: hit.score for hit in hits}
    inject(memory, shown=((mid, scores[mid]), (rival, scores[rival])))
    memory.feedback(mid, "useful")
    lifted = memory.recall(ASKED, project="billing", mode="keyword", min_score=0.0)
    new = {hit.id: hit.score for hit in lifted}
    assert new[mid] == pytest.approx(min(1.0, scores[mid] * (1 + USEFUL_LIFT)))
    assert new[rival] == pytest.approx(scores[rival])
    assert [hit.score for hit in lifted] == sorted((hit.score for hit in lifted), reverse=True)


def test_deleting_or_forgetting_a_memory_removes_what_the_log_quoted(any_memory: Memory) -> None:
    memory = any_memory
    keep = memory.save("Use WAL mode for the SQLite store", project="billing").id
    gone = memory.save(RETRY, project="billing").id
    quoted = inject(memory, text=RETRY, shown=((gone, 0.9),))
    mixed = inject(memory, text="both", number=2, shown=((keep, 0.5), (gone, 0.4)))
    other = inject(memory, text="Use WAL mode", number=3, shown=((keep, 0.6),))
    typed = inject(memory, text="nothing secret", number=4, prompt="the launch code is tango")
    memory.feedback(gone, "noise")
    memory.delete(id=gone)
    by_id = {e.id: e for e in memory.injection_log(project="billing")}
    assert by_id[quoted].cleared and by_id[quoted].text == ""
    assert by_id[mixed].cleared and [m.memory_id for m in by_id[mixed].memories] == [keep]
    assert not by_id[other].cleared
    assert by_id[quoted].tokens > 0  # the meter keeps counting what was received
    report = memory.forget("launch code", project="billing")
    assert report.log_cleared == 1
    assert memory.injection_log(project="billing")[-1].id == typed
    assert memory.injection_log(project="billing")[-1].prompt == ""


def test_forgetting_a_session_drops_its_log(any_memory: Memory) -> None:
    memory = any_memory
    memory.session_start("s1", project="billing")
    memory.session_start("s2", project="billing")
    inject(memory, session="s1")
    inject(memory, session="s1", text="", number=2)
    kept = inject(memory, session="s2")
    memory.forget(session_id="s1")
    assert [e.id for e in memory.injection_log(project="billing")] == [kept]
    assert memory.stats().injections.prompts == 1


def test_prune_and_maintenance_drop_entries_past_the_age(memory: Memory) -> None:
    real = memory.core.clock
    memory.core.clock = lambda: real() - timedelta(days=10)
    inject(memory)
    inject(memory, text="", number=2)  # a quiet prompt, counted on that day
    memory.core.clock = real
    fresh = inject(memory, number=3)
    plan = memory.prune_old(max_age_days=5, dry_run=True)
    assert plan.log_entries == 1
    assert len(memory.injection_log(project="billing")) == 2
    report = memory.prune_old(max_age_days=5)
    assert report.log_entries == 1
    assert [e.id for e in memory.injection_log(project="billing")] == [fresh]
    assert memory.stats().injections.prompts == 1  # the old quiet count went too
    memory.core.clock = lambda: real() - timedelta(days=100)
    inject(memory, number=4)
    memory.core.clock = real
    done = memory.maintain()
    assert done.prune is not None and done.prune.log_entries == 1
    assert done.details()["log_pruned"] == 1
    assert [e.id for e in memory.injection_log(project="billing")] == [fresh]


def test_size_cap_clears_the_oldest_log_texts_first(memory: Memory, tmp_path: Path) -> None:
    mid = memory.save(RETRY, project="billing").id
    entries = [inject(memory, number=n, text="z" * 20_000, shown=((mid, 0.5),)) for n in range(60)]
    in_use, _ = memory.core.store.storage_bytes()
    cap_mb = in_use / 0.95 / 1_048_576  # over the trigger (0.9 × cap); the log alone fixes it
    plan = memory.enforce_size_cap(max_mb=cap_mb, dry_run=True)
    assert plan.log_cleared > 0 and plan.removed == ()
    report = memory.enforce_size_cap(max_mb=cap_mb)
    assert report.log_cleared == plan.log_cleared and report.removed == ()
    log = memory.injection_log(project="billing", limit=100)
    cleared = [e.id for e in log if e.cleared]
    assert cleared == entries[: len(cleared)]  # the oldest first
    assert memory.get(mid).content == RETRY
