"""The injection log's storage (``InjectionLog``), the same on SQLite and PostgreSQL.

Real stores: a SQLite file in tmp_path, a fresh PostgreSQL schema (skipped
without ``MEMLANE_TEST_PG_DSN``, failed under CI).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memlane.models import Feedback, InjectedMemory, NewInjection, NewMemory, Session
from memlane.store.base import Store

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def memory(store: Store, text: str, project: str = "p", session: str = "s1") -> int:
    return store.insert_memory(
        NewMemory(
            project=project,
            kind="knowledge",
            type="decision",
            content=text,
            normalized_hash=text,
            created_at=T0,
            session_id=session,
        )
    )


def entry(
    session: str = "s1",
    *,
    project: str = "p",
    event: str = "user-prompt-submit",
    at: datetime = T0,
    tokens: int = 10,
    text: str = "recalled text",
    prompt: str = "why the retry",
    number: int | None = 1,
    shown: tuple[tuple[int, float | None], ...] = (),
) -> NewInjection:
    return NewInjection(
        session_id=session,
        project=project,
        event=event,
        created_at=at,
        mode="keyword",
        relayed=False,
        hook_ms=12.5,
        chars=tokens * 4,
        tokens=tokens,
        text=text,
        prompt=prompt,
        prompt_number=number,
        memories=tuple(
            InjectedMemory(mid, rank, score) for rank, (mid, score) in enumerate(shown, 1)
        ),
    )


def test_insert_then_list_round_trips_every_field(store: Store) -> None:
    a, b = memory(store, "alpha"), memory(store, "beta")
    first = store.insert_injection(entry(shown=((a, 0.81), (b, None))))
    second = store.insert_injection(
        entry("s2", event="session-start", number=None, prompt="", at=T0 + timedelta(minutes=1))
    )
    assert second > first
    newest, oldest = store.list_injections()
    assert (newest.id, oldest.id) == (second, first)
    assert oldest.session_id == "s1" and oldest.project == "p"
    assert oldest.event == "user-prompt-submit" and oldest.prompt_number == 1
    assert oldest.created_at == T0 and oldest.mode == "keyword" and oldest.relayed is False
    assert (oldest.hook_ms, oldest.chars, oldest.tokens) == (12.5, 40, 10)
    assert (oldest.prompt, oldest.text, oldest.cleared) == ("why the retry", "recalled text", False)
    assert [(m.memory_id, m.rank, m.feedback) for m in oldest.memories] == [
        (a, 1, None),
        (b, 2, None),
    ]
    assert oldest.memories[0].score == pytest.approx(0.81)
    assert oldest.memories[1].score is None
    assert newest.prompt_number is None and newest.memories == ()


def test_list_filters(store: Store) -> None:
    a = memory(store, "alpha")
    one = store.insert_injection(entry("s1", shown=((a, 0.5),)))
    two = store.insert_injection(entry("s2", project="q", event="session-start", number=None))
    three = store.insert_injection(entry("s1", number=2))
    ids = lambda found: [e.id for e in found]  # noqa: E731
    assert ids(store.list_injections(session_id="s1")) == [three, one]
    assert ids(store.list_injections(projects=("q",))) == [two]
    assert ids(store.list_injections(projects=())) == []
    assert ids(store.list_injections(memory_id=a)) == [one]
    assert ids(store.list_injections(event="session-start")) == [two]
    assert ids(store.list_injections(ids=(one, two))) == [two, one]
    assert ids(store.list_injections(ids=())) == []
    assert ids(store.list_injections(limit=1)) == [three]


def test_an_injection_of_a_memory_deleted_meanwhile_keeps_no_text(store: Store) -> None:
    a = memory(store, "kept")
    gone = memory(store, "gone")
    store.delete_memories([gone])
    made = store.insert_injection(entry(text="quotes gone", shown=((a, 0.9), (gone, 0.8))))
    (found,) = store.list_injections(ids=(made,))
    assert found.cleared and found.text == "" and found.prompt == ""
    assert [m.memory_id for m in found.memories] == [a]
    assert found.tokens == 10  # the meter still counts what the agent received


def test_deleting_a_memory_clears_every_entry_that_showed_it(store: Store) -> None:
    a, b = memory(store, "alpha"), memory(store, "beta")
    showed_a = store.insert_injection(entry(text="alpha text", shown=((a, 0.9), (b, 0.5))))
    only_b = store.insert_injection(entry(number=2, text="beta text", shown=((b, 0.7),)))
    store.delete_memories([a])
    by_id = {e.id: e for e in store.list_injections()}
    assert by_id[showed_a].cleared and by_id[showed_a].text == ""
    assert [m.memory_id for m in by_id[showed_a].memories] == [b]
    assert not by_id[only_b].cleared and by_id[only_b].text == "beta text"
    assert store.list_injections(memory_id=a) == []


def test_deleting_a_session_drops_its_log(store: Store) -> None:
    for sid in ("s1", "s2"):
        store.upsert_session(
            Session(id=sid, project="p", status="active", started_at=T0, last_activity_at=T0)
        )
        store.insert_injection(entry(sid))
        store.count_quiet_hook(sid, "p", "user-prompt-submit", "2026-03-02")
    store.delete_sessions(["s1"])
    assert [e.session_id for e in store.list_injections()] == ["s2"]
    totals = store.injection_totals(None, T0 - timedelta(days=1))
    assert set(totals.session_tokens) == {"s2"}
    assert totals.quiet == {"user-prompt-submit": 1}


def test_totals_count_entries_quiet_hooks_days_and_marks(store: Store) -> None:
    a = memory(store, "alpha")
    other = memory(store, "other project", project="q")
    first = store.insert_injection(entry("s1", tokens=100, shown=((a, 0.9),)))
    store.insert_injection(entry("s1", tokens=50, number=2, at=T0 + timedelta(days=1)))
    store.insert_injection(entry("s2", event="session-start", number=None, tokens=300))
    store.insert_injection(entry("s9", project="q", tokens=7, shown=((other, 0.5),)))
    for _ in range(3):
        store.count_quiet_hook("s1", "p", "user-prompt-submit", "2026-03-02")
    store.count_quiet_hook("s3", "p", "session-start", "2026-03-02")
    store.put_feedback(Feedback(a, "noise", "why the retry", T0, first))
    totals = store.injection_totals(("p",), T0 + timedelta(hours=1))
    assert totals.session_tokens == {"s1": 150, "s2": 300, "s3": 0}
    assert totals.injected == {"user-prompt-submit": 2, "session-start": 1}
    assert totals.quiet == {"user-prompt-submit": 3, "session-start": 1}
    assert totals.day_tokens == {"2026-03-03": 50}  # the day before `since` is left out
    assert totals.marks == {"noise": 1}
    everything = store.injection_totals(None, T0 - timedelta(days=1))
    assert everything.session_tokens["s9"] == 7
    assert everything.day_tokens == {"2026-03-02": 407, "2026-03-03": 50}
    assert store.injection_totals((), T0).session_tokens == {}


def test_feedback_replaces_per_entry_and_follows_the_memory(store: Store) -> None:
    store.upsert_session(
        Session(id="s1", project="p", status="active", started_at=T0, last_activity_at=T0)
    )
    a, b = memory(store, "alpha"), memory(store, "beta")
    made = store.insert_injection(entry(shown=((a, 0.9), (b, 0.4))))
    store.put_feedback(Feedback(a, "noise", "why the retry", T0, made))
    store.put_feedback(Feedback(a, "useful", "why the retry", T0 + timedelta(seconds=1), made))
    store.put_feedback(Feedback(b, "noise", "why the retry", T0, made))
    marks = store.feedback_for([a, b])
    assert [(f.memory_id, f.mark, f.injection_id) for f in marks] == [
        (a, "useful", made),
        (b, "noise", made),
    ]
    assert marks[0].prompt == "why the retry" and marks[0].created_at == T0 + timedelta(seconds=1)
    (found,) = store.list_injections()
    assert [(m.memory_id, m.feedback) for m in found.memories] == [(a, "useful"), (b, "noise")]
    store.delete_memories([b])
    assert [f.memory_id for f in store.feedback_for([a, b])] == [a]
    store.delete_sessions(["s1"])  # the entry goes; the mark stays with its memory
    (kept,) = store.feedback_for([a])
    assert kept.mark == "useful" and kept.injection_id is None


def test_prune_by_age(store: Store) -> None:
    store.insert_injection(entry(at=T0 - timedelta(days=100)))
    recent = store.insert_injection(entry(at=T0))
    store.count_quiet_hook("s1", "p", "user-prompt-submit", "2025-11-01")
    store.count_quiet_hook("s1", "p", "user-prompt-submit", "2026-03-02")
    cutoff = T0 - timedelta(days=90)
    assert store.count_injections_before(cutoff) == 1
    assert store.prune_injections(cutoff) == 1
    assert [e.id for e in store.list_injections()] == [recent]
    assert store.injection_totals(None, cutoff).quiet == {"user-prompt-submit": 1}
    assert store.count_injections_before(cutoff) == 0


def test_text_sizes_and_clearing(store: Store) -> None:
    old = store.insert_injection(entry(text="x" * 100, prompt="ünï"))
    new = store.insert_injection(entry(number=2, text="y" * 10, prompt=""))
    assert store.injection_text_sizes() == [(old, 100 + len("ünï".encode())), (new, 10)]
    assert store.clear_injection_text([old]) == 1
    assert store.injection_text_sizes() == [(new, 10)]
    cleared = store.list_injections(ids=(old,))[0]
    assert cleared.cleared and (cleared.text, cleared.prompt) == ("", "")
    assert cleared.tokens == 10
    assert store.clear_injection_text([]) == 0


def test_forgetting_a_text_clears_entries_and_marks_that_hold_it(store: Store) -> None:
    a = memory(store, "alpha")
    b = memory(store, "beta", project="q")
    hit = store.insert_injection(entry(text="the Secret Plan is here", shown=((a, 0.9),)))
    asked = store.insert_injection(entry(number=2, prompt="tell me the SECRET plan", text="t"))
    other_project = store.insert_injection(entry(project="q", text="secret plan", shown=((b, 1),)))
    literal = store.insert_injection(entry(number=3, text="100% done_now"))
    store.put_feedback(Feedback(a, "noise", "what is the secret plan", T0, hit))
    store.put_feedback(Feedback(b, "noise", "the secret plan again", T0, other_project))
    assert store.forget_injection_text("secret plan", ("p",)) == 2
    by_id = {e.id: e for e in store.list_injections()}
    assert by_id[hit].cleared and by_id[asked].cleared
    assert not by_id[other_project].cleared and not by_id[literal].cleared
    assert [f.memory_id for f in store.feedback_for([a, b])] == [b]
    assert store.forget_injection_text("0% d", None) == 1  # % and _ are literal
    assert store.forget_injection_text("%", None) == 0
    assert store.forget_injection_text("secret plan", ()) == 0
    assert store.forget_injection_text("secret plan", None) == 1


def test_nul_and_unicode_text_survive(store: Store) -> None:
    made = store.insert_injection(entry(text="東京 😀 a\x00b", prompt="プロンプト"))
    (found,) = store.list_injections(ids=(made,))
    assert found.text in ("東京 😀 a\x00b", "東京 😀 a\ufffdb")
    assert found.prompt == "プロンプト"
