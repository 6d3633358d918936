"""Maintenance: prune, merge, size cap, staleness, forget, the whole run and its schedule.

Every destructive operation is checked twice: its dry run lists exactly what
the real run then removes, and the rows really are gone (FTS index and vectors
included) while everything else stays.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane import maintenance as mt
from memlane.config import load_settings
from memlane.errors import InvalidInput, NotFound
from memlane.models import MemoryFilter, utcnow
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env
from tests.process_gate import gate

P = "proj"


@pytest.fixture
def mem(memory: Memory) -> Memory:
    """The test memory with maintenance enabled (conftest turns it off for hooks)."""
    memory.settings = replace(memory.settings, maintenance__enabled=True)
    return memory


def all_ids(memory: Memory) -> set[int]:
    return set(memory.store.memory_ids(MemoryFilter()))


def backdate(memory: Memory, memory_id: int, days: float) -> None:
    moment = utcnow() - timedelta(days=days)
    memory.store.update_memory(memory_id, {"created_at": moment, "updated_at": moment})


def raw(memory: Memory) -> sqlite3.Connection:
    return sqlite3.connect(memory.store.location)


def log_rows(memory: Memory, kind: str | None = None) -> int:
    with raw(memory) as conn:
        if kind is None:
            return int(conn.execute("SELECT count(*) FROM maintenance_log").fetchone()[0])
        sql = "SELECT count(*) FROM maintenance_log WHERE kind = ?"
        return int(conn.execute(sql, (kind,)).fetchone()[0])


# -- prune ------------------------------------------------------------------------------


def test_prune_removes_old_rows_but_keeps_knowledge_summaries_and_recent_touches(
    mem: Memory,
) -> None:
    old_note = mem.save("an old note about the staging database", project=P).id
    old_obs = mem.save("ran pytest -q", project=P, type="command").id
    old_decision = mem.save("we chose SQLite over Postgres", project=P, type="decision").id
    old_summary = mem.save("summary of an old session", project=P, type="summary").id
    recalled = mem.save("old but recalled last week", project=P).id
    fresh = mem.save("a fresh note", project=P).id
    for memory_id in (old_note, old_obs, old_decision, old_summary, recalled):
        backdate(mem, memory_id, 120)
    mem.store.record_access([recalled], utcnow() - timedelta(days=7))

    dry = mem.prune_old(dry_run=True)
    assert set(dry.removed) == {old_note, old_obs}
    assert all_ids(mem) >= {old_note, old_obs}  # a dry run writes nothing
    real = mem.prune_old()
    assert real.removed == dry.removed
    assert all_ids(mem) == {old_decision, old_summary, recalled, fresh}
    assert log_rows(mem, "prune") == 1


def test_prune_age_counts_from_the_last_write_not_creation(mem: Memory) -> None:
    """An imported history keeps its dates but is not wiped the day it arrives."""
    imported = mem.save("imported from 2023", project=P, created_at=utcnow() - timedelta(days=700))
    assert mem.prune_old(dry_run=True).removed == ()
    assert mem.get(imported.id).created_at < utcnow() - timedelta(days=600)


def test_prune_rejects_a_nonsense_age(mem: Memory) -> None:
    with pytest.raises(InvalidInput):
        mem.prune_old(max_age_days=0)


# -- merge ------------------------------------------------------------------------------


def test_trigram_jaccard_basics() -> None:
    a = mt.trigrams("Hello   World")
    assert a == mt.trigrams("hello world")
    assert mt.jaccard(a, a) == 1.0
    assert mt.jaccard(a, mt.trigrams("something else entirely")) < 0.1
    assert mt.trigrams("") == frozenset()
    assert mt.trigrams("ab") == frozenset({"ab"})


def _brute(sets: dict[int, frozenset[str]], threshold: float) -> dict[tuple[int, int], float]:
    return {
        (i, j): mt.jaccard(sets[i], sets[j])
        for i, j in combinations(sorted(sets), 2)
        if sets[i] and sets[j] and mt.jaccard(sets[i], sets[j]) >= threshold
    }


@settings(max_examples=80, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="abcde ", min_size=0, max_size=24), min_size=2, max_size=18),
    threshold=st.sampled_from([0.3, 0.5, 0.6, 0.8, 1.0]),
    probe=st.none() | st.sets(st.integers(0, 17), max_size=5),
)
def test_similar_pairs_are_verified_and_never_miss_close_ones(
    texts: list[str], threshold: float, probe: set[int] | None
) -> None:
    """Every pair returned is above the threshold; pairs at J >= 0.9 are always found."""
    sets = {i: mt.trigrams(t) for i, t in enumerate(texts)}
    found = mt.similar_pairs(sets, threshold, probe)
    got = {(i, j) for i, others in found.items() for j in others if i < j}
    expected = {
        pair
        for pair in _brute(sets, threshold)
        if probe is None or pair[0] in probe or pair[1] in probe
    }
    assert got <= expected
    close = {pair for pair in expected if mt.jaccard(sets[pair[0]], sets[pair[1]]) >= 0.9}
    assert close <= got
    for i, j in got:
        assert found[i][j] == found[j][i] == mt.jaccard(sets[i], sets[j])


def test_similar_pairs_recall_on_real_text_at_the_default_threshold() -> None:
    """On chunks of this repository's source, LSH finds (nearly) every brute-force pair."""
    root = Path(__file__).resolve().parents[1] / "src" / "memlane"
    chunks: list[str] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        chunks.extend(text[i : i + 300] for i in range(0, len(text), 300))
    chunks = chunks[:700]
    # Near-duplicates on purpose: every 8th chunk again with a few edits.
    chunks.extend(c.replace("e", "E", 4) + " (edited)" for c in chunks[::8])
    sets = {i: mt.trigrams(c) for i, c in enumerate(chunks)}
    expected = set(_brute(sets, 0.6))
    found = mt.similar_pairs(sets, 0.6)
    got = {(i, j) for i, others in found.items() for j in others if i < j}
    assert got <= expected
    assert len(expected) > 50
    assert len(got) >= 0.97 * len(expected)


def test_merge_candidates_are_bounded_on_one_template() -> None:
    """Records of one template share every bucket; each memory is still verified against
    a bounded number of others (main verified every pair: quadratic time and memory)."""
    from memlane.maintenance.candidates import (
        LARGE_BUCKET,
        MINHASH_SIZE,
        WINDOW,
        CandidateIndex,
        set_keys,
    )

    n = 3000
    sets = {i: mt.trigrams(f"write {i} " + "abc def " * 60) for i in range(n)}
    index = CandidateIndex({i: set_keys(s) for i, s in sets.items()}, 0.6)
    found = 0
    for i in range(n):
        index.close(i)
        found += len(index.similar(i))
    bands = MINHASH_SIZE // 4
    assert index.pairs_verified <= n * bands * max(LARGE_BUCKET, 2 * WINDOW) // 8
    assert index.pairs_verified < n * (n - 1) // 4
    assert found > n  # the near-duplicates are still found


def test_the_signature_estimate_skips_exact_checks_without_changing_a_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Candidates whose MinHash signatures agree on fewer than threshold - 0.2 of their
    hashes are not verified exactly: the same matches (here: short texts of one
    vocabulary, many sharing a bucket, and near-copies around the threshold), fewer checks."""
    import random

    from memlane.maintenance import candidates

    rng = random.Random(7)
    words = [f"w{k}" for k in range(120)]
    texts = [" ".join(rng.choices(words, k=15)) for _ in range(600)]
    for base in texts[:60]:  # a near-copy of each: some words replaced
        copy = base.split()
        for k in rng.sample(range(len(copy)), rng.randint(1, 3)):
            copy[k] = rng.choice(words)
        texts.append(" ".join(copy))
    sets = {i: candidates.trigram_keys(text) for i, text in enumerate(texts)}

    def matches(margin: float) -> tuple[set[tuple[int, int]], int]:
        monkeypatch.setattr(candidates, "ESTIMATE_MARGIN", margin)
        index = candidates.CandidateIndex(sets, 0.6)
        found = {(i, j) for i in sets for j, _score in index.similar(i)}
        return found, index.pairs_verified

    margin = candidates.ESTIMATE_MARGIN
    every_candidate, checked_all = matches(1.0)  # no estimate: every candidate checked
    estimated, checked = matches(margin)
    assert estimated == every_candidate and len(every_candidate) > 60
    assert checked < checked_all / 10


def test_similar_pairs_finds_every_copy_in_a_large_bucket() -> None:
    """Copies of one text fill every bucket past its size limit; each is still paired."""
    from memlane.maintenance.candidates import LARGE_BUCKET, WINDOW

    sets = {i: mt.trigrams("pytest -q passed: 42 tests in 1.3 s") for i in range(LARGE_BUCKET + 88)}
    found = mt.similar_pairs(sets, 0.6)
    assert set(found) == set(sets)
    assert all(len(others) <= 2 * WINDOW for others in found.values())


def test_similar_pairs_rejects_a_bad_threshold() -> None:
    with pytest.raises(InvalidInput):
        mt.similar_pairs({1: frozenset({"abc"})}, 0.0)


def test_merge_keeps_the_newest_memory_and_inherits_links(mem: Memory) -> None:
    base = "Deploys go through scripts/deploy.sh which rsyncs build/ to the web host"
    short = mem.save(base, project=P, type="decision", files=["scripts/deploy.sh"], tags=["ops"])
    rich = mem.save(
        base + " quickly.",
        project=P,
        type="decision",
        files=["docs/deploy.md"],
        tags=["deploy"],
    )
    other = mem.save("Tests run with pytest -q in CI on every push", project=P, type="decision")
    note = mem.save(base, project=P, type="note")  # another kind: never merged across
    mem.store.record_access([short.id, short.id], utcnow())
    mem.store.record_access([short.id], utcnow())

    dry = mem.merge(project=P, dry_run=True)
    assert [(g.keep, g.remove) for g in dry.groups] == [(rich.id, (short.id,))]
    assert dry.groups[0].similarity >= 0.6
    real = mem.merge(project=P)
    assert real.groups == dry.groups
    assert all_ids(mem) == {rich.id, other.id, note.id}
    kept = mem.get(rich.id)
    assert kept.content.endswith("quickly.")
    assert set(kept.files) == {"docs/deploy.md", "scripts/deploy.sh"}
    assert set(kept.tags) == {"deploy", "ops"}
    assert kept.access_count == 2
    assert kept.metadata["merged_from"] == [short.id]
    assert log_rows(mem, "merge") == 1


def test_merge_transfers_a_topic_key_but_keeps_two_topics_apart(mem: Memory) -> None:
    text = "The API rate limit is 100 requests per minute per token"
    keyed = mem.save(text, project=P, type="constraint", topic_key="api/rate-limit")
    richer = mem.save(text.lower() + ".", project=P, type="constraint")
    report = mem.merge(project=P)
    assert [(g.keep, g.remove) for g in report.groups] == [(richer.id, (keyed.id,))]
    assert mem.get(richer.id).topic_key == "api/rate-limit"
    # The topic key still upserts into the survivor.
    again = mem.save(
        text + " (burst 30).", project=P, type="constraint", topic_key="api/rate-limit"
    )
    assert again.status == "updated" and again.id == richer.id

    a = mem.save("Cache TTL for users is 60 seconds here", project=P, type="lesson", topic_key="a")
    b = mem.save("Cache TTL for users is 90 seconds here", project=P, type="lesson", topic_key="b")
    assert mem.merge(project=P, dry_run=True).groups == ()
    assert {a.id, b.id} <= all_ids(mem)


def test_merge_respects_projects_and_threshold(mem: Memory) -> None:
    text = "Run make lint before committing: ruff and mypy strict"
    a1 = mem.save(text, project="a", type="lesson").id
    a2 = mem.save(text + "!", project="a", type="lesson").id
    b1 = mem.save(text, project="b", type="lesson").id
    b2 = mem.save(text + "?", project="b", type="lesson").id
    assert mem.merge(project="a", threshold=1.0, dry_run=True).groups == ()
    only_a = mem.merge(project="a", dry_run=True)
    assert {g.keep for g in only_a.groups} | set(only_a.removed) == {a1, a2}
    both = mem.merge(all_projects=True)
    assert len(both.groups) == 2
    assert len(all_ids(mem) & {a1, a2}) == 1 and len(all_ids(mem) & {b1, b2}) == 1


def test_merge_never_touches_summaries_or_checkpoints(mem: Memory) -> None:
    for n in range(3):
        mem.save(
            "Session summary: fixed the login bug",
            project=P,
            type="summary",
            topic_key=f"session-summary:s{n}",
        )
    assert mem.merge(project=P, dry_run=True).groups == ()


def test_merge_keeps_the_survivor_searchable(mem: Memory) -> None:
    text = "zanzibar migration plan for the billing service"
    mem.save(text, project=P, type="decision")
    mem.save(text.capitalize() + ".", project=P, type="decision")
    mem.merge(project=P)
    hits = mem.search("zanzibar", project=P, scope="project")
    assert len(hits) == 1


# Pairs the probe of round s27 saw merged (trigram J 0.72-0.91): one word apart, two facts.
LONG_TAIL = (
    "the dashboard team owns the rollout, the runbook lives in docs/ops/cache.md, alerts"
    " page the payments rotation, metrics go to grafana under billing latency panels,"
    " and the feature flag service tracks tenants through the admin console settings page"
)
DISTINCT_PAIRS = [
    (
        "Never deploy the billing service on Fridays.",
        "Always deploy the billing service on Fridays.",
    ),
    (
        "Retry payments 3 times with exponential backoff before giving up.",
        "Retry emails 30 times with exponential backoff before giving up.",
    ),
    (
        "Do NOT run migrations on the primary database during business hours.",
        "Do run migrations on the primary database during business hours.",
    ),
    (
        "Use PostgreSQL 16 for the analytics database; MySQL was rejected.",
        "Use MySQL 8 for the analytics database; PostgreSQL was rejected.",
    ),
    # No number left to tell them apart: the names moved.
    (
        "Use PostgreSQL for the analytics database; MySQL was rejected.",
        "Use MySQL for the analytics database; PostgreSQL was rejected.",
    ),
    (
        "Retry payments with exponential backoff before giving up.",
        "Retry emails with exponential backoff before giving up.",
    ),
    ("Check that the flag x != 0 before the call", "Check that the flag x == 0 before the call"),
    ("Don't squash commits on the release branch", "Do squash commits on the release branch"),
    # An inflected polarity word in a text long enough that one swapped word is a small
    # edit (review: these merged).
    (
        f"Keep enabling the query cache on the staging cluster; {LONG_TAIL}",
        f"Keep disabling the query cache on the staging cluster; {LONG_TAIL}",
    ),
    (
        f"The billing integration tests are failing on CI; {LONG_TAIL}",
        f"The billing integration tests are passing on CI; {LONG_TAIL}",
    ),
    # A negation in another language, in a text long enough that one added word is a
    # small edit (these merged).
    (
        f"Die Migrationen laufen während der Geschäftszeiten auf dem Primärserver; {LONG_TAIL}",
        f"Die Migrationen laufen nicht während der Geschäftszeiten auf dem Primärserver;"
        f" {LONG_TAIL}",
    ),
    (
        f"Desplegar la facturación los viernes por la tarde está permitido; {LONG_TAIL}",
        f"Nunca desplegar la facturación los viernes por la tarde está permitido; {LONG_TAIL}",
    ),
]


@pytest.mark.parametrize(("first", "second"), DISTINCT_PAIRS)
def test_the_wording_rule_tells_distinct_facts_apart(first: str, second: str) -> None:
    from memlane.maintenance.wording import meaning_differs, same_text

    assert meaning_differs(first, second) and meaning_differs(second, first)
    assert not same_text(first, second)


def test_the_wording_rule_lets_trivial_edits_through() -> None:
    from memlane.maintenance.wording import meaning_differs, same_text

    text = "Always run ruff before pushing code"
    assert same_text(text, "always  run RUFF before pushing code!")
    assert not meaning_differs(text, "Always run ruff before pushing the code.")
    long = " ".join(f"word{chr(97 + k % 26)}{chr(97 + k // 26)}" for k in range(40))
    assert not meaning_differs(long, long + " indeed")  # 1 edit in 40 content words
    assert meaning_differs(long, long + " indeed and truly more")  # 3 edits, and "more"


@pytest.mark.parametrize("run", ["merge", "maintain"])
def test_merge_never_joins_facts_that_differ_in_a_meaning_bearing_word(
    mem: Memory, run: str
) -> None:
    """The probe's pairs, saved as decisions: neither `merge` nor the automatic run joins
    them (main merged four of the five pairs and kept the older text of a reversal)."""
    saved = [mem.save(t, project=P, type="decision").id for pair in DISTINCT_PAIRS for t in pair]
    if run == "merge":
        report = mem.merge(project=P)
    else:
        merged = mem.maintain().merge
        assert merged is not None
        report = merged
    assert report.groups == ()
    assert all_ids(mem) >= set(saved)


def test_the_automatic_run_merges_saved_knowledge_only_when_the_text_is_the_same(
    mem: Memory,
) -> None:
    """`memlane merge` may join a lesson with a copy one function word apart; the
    automatic run joins only copies that differ in case, blanks and punctuation."""
    first = mem.save("Use uv to set up the dev env for this repo", project=P, type="lesson").id
    edited = mem.save("Use uv to set up a dev env for this repo", project=P, type="lesson").id
    copy1 = mem.save("Always run make lint before pushing", project=P, type="constraint").id
    copy2 = mem.save("always run make lint before pushing!", project=P, type="constraint").id
    auto = mem.maintain(dry_run=True).merge
    assert auto is not None
    assert [(g.keep, g.remove) for g in auto.groups] == [(copy2, (copy1,))]
    explicit = mem.merge(project=P, dry_run=True)
    assert [(g.keep, g.remove) for g in explicit.groups] == [
        (edited, (first,)),
        (copy2, (copy1,)),
    ]


def test_a_command_run_again_is_one_memory_whatever_its_timing(mem: Memory) -> None:
    """Captured runs of one command that differ in a duration or a count merge, in the
    automatic run too, the newest kept: the wording rule is for what was saved on purpose
    (with it, repeated tool runs were never merged and a template of 10,000 took 73 s)."""
    ids = []
    for run, (passed, seconds) in enumerate([(412, "8.02"), (412, "7.95"), (413, "8.31")]):
        result = mem.record_tool_event(
            f"s{run}",
            "Bash",
            {"command": "pytest -q tests/test_billing.py tests/test_invoices.py"},
            {"stdout": f"{passed} passed, 3 skipped, 2 warnings in {seconds}s", "stderr": ""},
            project=P,
        )
        assert result is not None
        ids.append(result.id)
        backdate(mem, result.id, 3 - run)  # oldest first
    auto = mem.maintain(dry_run=True).merge
    assert auto is not None
    assert [(g.keep, set(g.remove)) for g in auto.groups] == [(ids[2], {ids[0], ids[1]})]


def test_merge_keeps_the_newest_text_not_the_longest(mem: Memory) -> None:
    """A trivially edited copy saved later wins over an older, longer one."""
    text = (
        "The build cache lives in ~/.cache/proj and is shared by every worktree of the repository"
    )
    old = mem.save(
        text + " here",
        project=P,
        type="command",
    ).id
    new = mem.save(
        text,
        project=P,
        type="command",
    ).id
    report = mem.maintain().merge
    assert report is not None
    assert [(g.keep, g.remove) for g in report.groups] == [(new, (old,))]
    assert mem.get(new).content.endswith("the repository")


def test_merge_checks_are_bounded_per_memory() -> None:
    """Texts crafted just under the threshold (pairwise J ~ 0.5) passed the signature
    estimate and were verified pair by pair; each memory now takes part in at most
    ``max_checks`` checks, and keeps no trigram set between them."""
    import random

    from memlane.maintenance.candidates import CandidateIndex, TextKeys

    rng = random.Random(1)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    base = "".join(rng.choice(alphabet) for _ in range(400))
    texts = {i: base + "".join(rng.choice(alphabet) for _ in range(200)) for i in range(300)}
    index = CandidateIndex(TextKeys(texts), 0.6, max_checks=16)
    for i in texts:
        index.close(i)
        assert index.similar(i) == []
    assert index.pairs_verified <= 16 * len(texts) // 2
    assert index.pairs_skipped > 0
    probe = {0, 1, 2}
    index = CandidateIndex(TextKeys(texts), 0.6, max_checks=16)
    for i in texts:
        index.close(i)
        index.similar(i, None if i in probe else probe)
    assert index.pairs_verified <= 16 * len(probe)


# -- size cap ---------------------------------------------------------------------------


def _fill(memory: Memory, count: int, size: int = 1500, kind_every: int = 0) -> list[int]:
    ids = []
    for n in range(count):
        body = f"row {n} " + " ".join(f"w{(n * 7919 + k) % 100_003:x}" for k in range(size // 7))
        type_ = "decision" if kind_every and n % kind_every == 0 else "command"
        ids.append(memory.save(body, project=P, type=type_).id)
    return ids


def test_size_cap_removes_oldest_non_knowledge_first_and_dry_run_matches(mem: Memory) -> None:
    ids = _fill(mem, 900, kind_every=10)
    knowledge = {i for n, i in enumerate(ids) if n % 10 == 0}
    before = mem.store.stats().db_bytes
    cap_mb = 1.0
    assert before > cap_mb * 1_048_576

    dry = mem.enforce_size_cap(max_mb=cap_mb, dry_run=True)
    assert dry.removed and not knowledge & set(dry.removed)
    # Oldest first: what stays of the non-knowledge rows is the newest.
    kept_plain = [i for i in ids if i not in knowledge and i not in set(dry.removed)]
    assert kept_plain == sorted(kept_plain) and min(kept_plain) > max(dry.removed)
    real = mem.enforce_size_cap(max_mb=cap_mb)
    assert real.removed == dry.removed
    assert real.extra_removed == ()
    assert real.vacuumed
    assert real.size_after is not None and real.size_after <= cap_mb * 1_048_576
    assert mem.store.stats().db_bytes <= cap_mb * 1_048_576
    assert knowledge <= all_ids(mem)


def test_size_cap_does_nothing_under_the_trigger(mem: Memory) -> None:
    _fill(mem, 20)
    report = mem.enforce_size_cap(max_mb=50)
    assert report.removed == () and report.extra_removed == ()


def test_size_cap_reaches_knowledge_only_when_nothing_else_is_left(mem: Memory) -> None:
    ids = [
        mem.save(f"decision {n} " + "x" * 3000 + f" {n}", project=P, type="decision").id
        for n in range(400)
    ]
    plain = mem.save("one small note", project=P).id
    report = mem.enforce_size_cap(max_mb=0.5, dry_run=True)
    assert report.removed[0] == plain
    assert set(report.removed[1:]) <= set(ids)


# -- staleness --------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "util.py").write_text("X = 1\n")
    return root


def _future(path: Path, seconds: float = 3600) -> None:
    moment = time.time() + seconds
    os.utime(path, (moment, moment))


def test_staleness_by_mtime_against_capture_time(mem: Memory, repo: Path) -> None:
    m = mem.save(
        "Edited src/app.py to print hi",
        project=P,
        type="file-write",
        files=["src/app.py"],
        metadata={"cwd": str(repo)},
    ).id
    untouched = mem.save(
        "Read src/util.py",
        project=P,
        type="file-read",
        files=["src/util.py"],
        metadata={"cwd": str(repo)},
    ).id
    nofile = mem.save("a note without files", project=P).id
    assert mem.refresh_staleness(project=P).marked == ()
    _future(repo / "src" / "app.py")
    dry = mem.refresh_staleness(project=P, dry_run=True)
    assert dry.marked == (m,) and not mem.get(m).stale
    real = mem.refresh_staleness(project=P)
    assert real.marked == (m,) and real.checked == 2
    assert mem.get(m).stale and not mem.get(untouched).stale and not mem.get(nofile).stale
    assert [s.id for s in mem.stale_memories(project=P)] == [m]
    hits = mem.search("print hi", project=P, scope="project")
    assert hits and hits[0].id == m and hits[0].stale


def test_staleness_with_recorded_file_state_detects_change_and_recovery(
    mem: Memory, repo: Path
) -> None:
    path = repo / "src" / "app.py"
    state = mt.file_state(["src/app.py", "src/missing.py"], str(repo))
    assert set(state) == {"src/app.py"}
    m = mem.save(
        "Wrote src/app.py",
        project=P,
        type="file-write",
        files=["src/app.py"],
        metadata={"cwd": str(repo), mt.FILE_STATE_KEY: state},
    ).id
    original = path.stat()
    path.write_text("print('changed, longer')\n")
    os.utime(path, (original.st_atime, original.st_mtime))  # same mtime, other size
    assert mem.refresh_staleness(project=P).marked == (m,)
    path.write_text("print('hi')\n")
    os.utime(path, (original.st_atime, original.st_mtime))
    assert mem.refresh_staleness(project=P).cleared == (m,)
    path.unlink()
    assert mem.refresh_staleness(project=P).marked == (m,)


def test_staleness_resolves_relative_paths_against_the_project_root(
    mem: Memory, repo: Path
) -> None:
    m = mem.save("Edited src/app.py", project="repo", type="file-write", files=["src/app.py"]).id
    lost = mem.save(
        "Edited src/gone.py", project="repo", type="file-write", files=["src/gone.py"]
    ).id
    _future(repo / "src" / "app.py")
    # No root known for the project: undecidable, nothing changes.
    unknown = mem.refresh_staleness(project="repo", dry_run=True)
    assert unknown.marked == () and unknown.unknown == 2
    report = mt.refresh_staleness(mem.core, project="repo", roots={"repo": repo})
    assert report.marked == (m,) and report.unknown == 1  # a missing unrecorded file
    assert not mem.get(lost).stale
    # The cwd of the process names the root too (what the CLI and the scheduler use).
    (repo / ".git").mkdir()
    assert mt.project_roots(str(repo / "src")) == {"repo": repo.resolve()}


def test_stale_cli_refresh_and_list(home: Path, repo: Path) -> None:
    env = run_env(home)
    (repo / ".git").mkdir()
    cmd = [
        *MEMLANE_CMD,
        "save",
        "Edited src/app.py",
        "--type",
        "file-write",
        "--file",
        "src/app.py",
    ]
    assert subprocess.run(cmd, cwd=repo, env=env, capture_output=True).returncode == 0
    _future(repo / "src" / "app.py")
    out = subprocess.run(
        [*MEMLANE_CMD, "stale", "--refresh"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "1 newly stale" in out.stderr and "src/app.py" in out.stdout


# -- forget -----------------------------------------------------------------------------


def _embed(memory: Memory, ids: list[int]) -> None:
    vector = bytes(4 * 8)
    memory.store.put_embeddings("toy", 8, [(i, vector) for i in ids])


def _fts_ids(memory: Memory, word: str) -> set[int]:
    with raw(memory) as conn:
        rows = conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (word,))
        return {int(r[0]) for r in rows}


def test_forget_query_removes_rows_fts_and_vectors(mem: Memory) -> None:
    a = mem.save("The Quokka service password rotates monthly", project=P).id
    b = mem.save("quokka deploy notes", project=P, type="decision").id
    c = mem.save("unrelated memory about pelicans", project=P).id
    d = mem.save("quokka in another project", project="other").id
    _embed(mem, [a, b, c, d])
    assert _fts_ids(mem, "quokka") == {a, b, d}

    dry = mem.forget("QUOKKA", project=P, dry_run=True)
    assert dry.removed == (a, b) and dry.selector == "query"
    assert all_ids(mem) == {a, b, c, d}
    real = mem.forget("QUOKKA", project=P)
    assert real.removed == dry.removed
    assert all_ids(mem) == {c, d}
    assert _fts_ids(mem, "quokka") == {d}
    with raw(mem) as conn:
        left = {r[0] for r in conn.execute("SELECT memory_id FROM embeddings")}
    assert left == {c, d}
    assert log_rows(mem, "forget") == 1
    with raw(mem) as conn:
        details = conn.execute("SELECT details FROM maintenance_log WHERE kind='forget'").fetchone()
    assert "quokka" not in details[0].lower()  # the log never keeps what was forgotten


def test_forget_by_id_session_and_file(
    mem: Memory, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s1 = [mem.save(f"step {n} of session one", project=P, session_id="s1").id for n in range(3)]
    keep = mem.save("session two", project=P, session_id="s2").id
    report = mem.forget(session_id="s1")
    assert report.removed == tuple(s1) and report.sessions == ("s1",)
    assert mem.store.get_session("s1") is None and mem.store.get_session("s2") is not None

    one = mem.save("forget me by id", project=P).id
    assert mem.forget(id=one).removed == (one,)
    with pytest.raises(NotFound):
        mem.forget(id=one)

    (repo / ".git").mkdir()
    monkeypatch.chdir(repo / "src")
    linked = mem.save("Edited app", project="repo", files=["src/app.py"]).id
    absolute = mem.save("Read app", project="repo", files=[str(repo / "src" / "app.py")]).id
    mem.save("Edited util", project="repo", files=["src/util.py"])
    gone = mem.forget(file="app.py", project="repo")  # relative to the cwd
    assert set(gone.removed) == {linked, absolute}
    assert keep in all_ids(mem)


def test_forget_needs_exactly_one_selector(mem: Memory) -> None:
    with pytest.raises(InvalidInput):
        mem.forget()
    with pytest.raises(InvalidInput):
        mem.forget("x", id=3)
    with pytest.raises(InvalidInput):
        mem.forget("   ")


def test_forget_refuses_a_blank_file_or_query_by_the_one_blank_rule(mem: Memory) -> None:
    """arguments.required_text, not ``str.strip``: a NUL-only or control-only file or query
    passed as something to look for (and found nothing) instead of being refused."""
    mem.save("Edited src/app.py", project=P, files=["src/app.py"])
    for blank in ("", " ", "\u0000", "\u0001\u001b"):
        with pytest.raises(InvalidInput, match=r"^the file path is empty"):
            mem.forget(file=blank, project=P)
        with pytest.raises(InvalidInput, match=r"^the query is empty"):
            mem.forget(blank, project=P)
    assert len(all_ids(mem)) == 1


def test_forget_cli_dry_run_lists_what_then_goes(home: Path, tmp_path: Path) -> None:
    env = run_env(home)
    work = tmp_path / "work"
    work.mkdir()
    for text in ("the walrus key is in vault", "walrus deploy", "penguin"):
        subprocess.run(
            [*MEMLANE_CMD, "save", text], cwd=work, env=env, check=True, capture_output=True
        )
    dry = subprocess.run(
        [*MEMLANE_CMD, "forget", "walrus", "--dry-run"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0 and "would forget 2 memories" in dry.stdout
    refused = subprocess.run(
        [*MEMLANE_CMD, "forget", "walrus"],
        cwd=work,
        env=env,
        input="n\n",
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    real = subprocess.run(
        [*MEMLANE_CMD, "forget", "walrus", "--yes"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert real.returncode == 0
    assert dry.stdout.splitlines()[1:] == real.stdout.splitlines()[1:]
    left = subprocess.run(
        [*MEMLANE_CMD, "search", "walrus"], cwd=work, env=env, capture_output=True, text=True
    )
    assert "walrus" not in left.stdout


# -- the whole run ----------------------------------------------------------------------


def _messy(memory: Memory) -> dict[str, int]:
    ids = {
        "old": memory.save("an old observation", project=P, type="command").id,
        "old_knowledge": memory.save("an old lesson", project=P, type="lesson").id,
        "dup1": memory.save(
            "Use uv pip install -e . to set up the dev env", project=P, type="lesson"
        ).id,
        "dup2": memory.save(
            "Use uv pip install -e . to set up the dev env.", project=P, type="lesson"
        ).id,
        "fresh": memory.save("fresh note", project=P).id,
    }
    backdate(memory, ids["old"], 200)
    backdate(memory, ids["old_knowledge"], 200)
    memory.session_start("idle", project=P, now=utcnow() - timedelta(hours=30))
    memory.save(
        "ran the build",
        project=P,
        type="command",
        session_id="idle",
        created_at=utcnow() - timedelta(hours=30),
    )
    return ids


def test_maintain_dry_run_matches_the_real_run_and_logs_one_row(mem: Memory) -> None:
    ids = _messy(mem)
    dry = mem.maintain(dry_run=True)
    assert dry.prune is not None and dry.prune.removed == (ids["old"],)
    assert dry.merge is not None and dry.merge.removed == (ids["dup1"],)
    assert dry.closed_sessions == ("idle",)
    assert log_rows(mem) == 0
    real = mem.maintain()
    assert real.removed == dry.removed
    assert real.closed_sessions == dry.closed_sessions
    assert mem.get_session("idle").status == "auto_closed"
    assert log_rows(mem) == 1 and log_rows(mem, "maintain") == 1
    assert ids["old_knowledge"] in all_ids(mem) and ids["fresh"] in all_ids(mem)
    assert mem.store.last_maintenance("maintain") is not None
    again = mem.maintain(dry_run=True)
    assert again.removed == () and again.closed_sessions == ()


def test_maintain_indexes_the_identifier_words_of_memories_written_before_migration_7(
    mem: Memory,
) -> None:
    old = mem.save("the TranscriptRenderer keeps five lines", project=P).id
    mem.save("plain words", project=P)
    with sqlite3.connect(mem.store.location) as conn:  # as an upgraded database holds them
        conn.execute("UPDATE memories SET cjk_terms = ''")
        conn.execute("INSERT INTO index_backfill SELECT MIN(id), MAX(id) FROM memories")
    assert [h.id for h in mem.search("transcript renderer", project=P, mode="keyword")] == []
    assert mem.maintain(dry_run=True).reindexed == 0  # a dry run changes nothing
    assert [h.id for h in mem.search("transcript renderer", project=P, mode="keyword")] == []
    report = mem.maintain()
    assert report.reindexed == 2 and report.details()["reindexed"] == 2
    assert [h.id for h in mem.search("transcript renderer", project=P, mode="keyword")] == [old]
    assert mem.maintain().reindexed == 0


def test_maintain_runs_when_called_even_with_automatic_maintenance_off(memory: Memory) -> None:
    """`maintenance.enabled = false` turns off the automatic runs ("run maintenance
    automatically"); a pass the user asks for runs (it printed "maintenance skipped")."""
    assert not memory.settings.maintenance__enabled
    _messy(memory)
    assert not memory.maintenance_due()  # nothing starts it by itself
    planned = memory.maintain(dry_run=True).removed
    assert planned and log_rows(memory) == 0
    assert memory.maintain().removed == planned
    assert log_rows(memory) == 1


def test_maintain_cli_dry_run_then_real(home: Path, tmp_path: Path) -> None:
    env = run_env(home)
    work = tmp_path / "w"
    work.mkdir()
    for text in ("Always run ruff before pushing code", "Always run ruff before pushing code!"):
        subprocess.run(
            [*MEMLANE_CMD, "save", text, "--type", "lesson"],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
        )
    assert env["MEMLANE_MAINTENANCE_ENABLED"] == "false"  # automatic runs off: this one runs
    scheduled = subprocess.run(  # what capture starts: nothing while automatic runs are off
        [*MEMLANE_CMD, "maintain", "--background"], cwd=work, env=env, capture_output=True
    )
    assert scheduled.returncode == 0 and scheduled.stdout == b""
    dry = subprocess.run(
        [*MEMLANE_CMD, "maintain", "--dry-run"], cwd=work, env=env, capture_output=True, text=True
    )
    assert "would merge 1 memory into 1 kept memory" in dry.stdout, dry.stdout + dry.stderr
    real = subprocess.run(
        [*MEMLANE_CMD, "maintain", "--json"], cwd=work, env=env, capture_output=True, text=True
    )
    assert real.returncode == 0, real.stderr
    assert '"merged": 1' in real.stdout
    again = subprocess.run(  # --force, once needed with maintenance off, is still accepted
        [*MEMLANE_CMD, "maintain", "--dry-run", "--force"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "nothing to merge (threshold" in again.stdout, again.stdout + again.stderr


# -- scheduling -------------------------------------------------------------------------


def test_maintenance_due() -> None:
    settings, _ = load_settings(environ={"MEMLANE_HOME": "/nonexistent"})
    now = utcnow()
    assert mt.maintenance_due(settings, None, now)
    assert not mt.maintenance_due(settings, now - timedelta(hours=1), now)
    assert mt.maintenance_due(settings, now - timedelta(hours=25), now)
    # A run stamped by a clock that was ahead: due now, not in months.
    assert mt.maintenance_due(settings, now + timedelta(days=180), now)
    off = replace(settings, maintenance__enabled=False)
    assert not mt.maintenance_due(off, None, now)


class _CallLog:
    """A store that records the names of the methods called on it."""

    def __init__(self, store: object) -> None:
        self._store = store
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> object:
        self.calls.append(name)
        return getattr(self._store, name)


def test_maybe_schedule_spawns_a_detached_run_once(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_MAINTENANCE_ENABLED", "true")
    held = gate(home.parent, "maintain", "--background")
    for name, value in held.env.items():
        monkeypatch.setenv(name, value)
    settings, _ = load_settings()
    with _open(settings) as memory:
        memory.save("something to maintain", project=P)
        store = _CallLog(memory.store)
        assert mt.maybe_schedule_maintenance(settings, store)
        # Cheap enough for the Stop hook: one store query, and the run is not waited
        # for (it is still held at the gate).
        assert store.calls == ["last_maintenance"]
        assert memory.store.last_maintenance("maintain") is None
        # The spawn stamp stops a second spawn while the first one runs.
        assert not mt.maybe_schedule_maintenance(settings, memory.store)
        held.open()
        deadline = time.monotonic() + 60
        while memory.store.last_maintenance("maintain") is None:
            assert time.monotonic() < deadline, (settings.paths.log_dir / mt.LOG_FILE).read_text()
            time.sleep(0.2)
        # Done and recent: not due again.
        (settings.paths.runtime_dir / mt.SPAWN_STAMP).unlink()
        assert not mt.maybe_schedule_maintenance(settings, memory.store)
    assert mt.maybe_schedule_maintenance(settings) is False  # opens its own store


def test_maybe_schedule_does_nothing_when_disabled(settings: object) -> None:
    from memlane.config import Settings

    assert isinstance(settings, Settings)
    assert not mt.maybe_schedule_maintenance(settings)
    assert not (settings.paths.runtime_dir / mt.SPAWN_STAMP).exists()


def test_background_run_skips_when_locked(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_MAINTENANCE_ENABLED", "true")
    settings, _ = load_settings()
    with mt.maintenance_lock(settings) as first:
        assert first
        out = subprocess.run(
            [*MEMLANE_CMD, "maintain", "--background"],
            env=run_env(home) | {"MEMLANE_MAINTENANCE_ENABLED": "true"},
            capture_output=True,
        )
        assert out.returncode == 0
        with _open(settings) as memory:
            assert memory.store.last_maintenance("maintain") is None
        fg = subprocess.run(
            [*MEMLANE_CMD, "maintain"],
            env=run_env(home) | {"MEMLANE_MAINTENANCE_ENABLED": "true"},
            capture_output=True,
            text=True,
        )
        assert fg.returncode == 6 and "already running" in fg.stderr


def _open(settings: object) -> Memory:
    from memlane.config import Settings
    from memlane.service import open as open_memory

    assert isinstance(settings, Settings)
    return open_memory(settings=settings)


def test_over_the_size_cap_schedules_at_once(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_MAINTENANCE_ENABLED", "true")
    monkeypatch.setenv("MEMLANE_MAINTENANCE_MAX_DB_SIZE_MB", "5")
    settings, _ = load_settings()
    with _open(settings) as memory:
        memory.save("small", project=P)
        memory.store.log_maintenance("maintain", datetime.now(UTC), {})  # just ran: not due
        assert not mt.maybe_schedule_maintenance(settings, memory.store)
        for i in range(90):
            memory.save(f"{i} " + "x" * 60_000, project=P, type="command")
        assert mt._file_bytes(settings.database) > 0.9 * 5 * 1024 * 1024
        assert mt.due_reason(settings, memory.store.last_maintenance("maintain"), utcnow()) == (
            "size"
        )
        assert mt.maybe_schedule_maintenance(settings, memory.store)


def test_the_run_spawned_over_the_size_cap_runs_before_the_interval(home: Path) -> None:
    """The scheduled run re-checks the rule that spawned it: over the size trigger it runs
    (it re-checked the interval alone, so it did nothing until the interval passed)."""
    env = run_env(home) | {
        "MEMLANE_MAINTENANCE_ENABLED": "true",
        "MEMLANE_MAINTENANCE_MAX_DB_SIZE_MB": "5",
    }
    settings, _ = load_settings(environ=env)
    trigger = mt.SIZE_TRIGGER * 5 * 1024 * 1024
    with _open(settings) as memory:
        memory.store.log_maintenance("maintain", datetime.now(UTC), {})  # just ran
        for i in range(90):
            memory.save(f"{i} " + "x" * 60_000, project=P, type="command")
        assert mt._file_bytes(settings.database) > trigger
    run = subprocess.run(
        [*MEMLANE_CMD, "maintain", "--background"], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    with _open(settings) as memory:
        assert log_rows(memory, "maintain") == 2
        assert mt._file_bytes(settings.database) <= trigger
        # Under the trigger and just run: neither rule makes it due.
        assert not memory.maintenance_due()


def test_maintenance_never_merges_a_prompt_into_another_session(home: Path, project: Path) -> None:
    """A Gemini and a Codex session asked the same thing: both keep their prompt."""
    from tests.test_hooks import hook, ok, payload, rows

    asks = [
        ("codex:session-start", "codex_session_start", "cx-1"),
        ("gemini:session-start", "codex_session_start", "gm-1"),  # same shape
        ("codex:user-prompt-submit", "codex_user_prompt_submit", "cx-1"),
        ("codex:user-prompt-submit", "codex_user_prompt_submit", "cx-1"),  # asked twice
        ("gemini:user-prompt-submit", "gemini_before_agent", "gm-1"),
    ]
    for number, (event, name, session) in enumerate(asks):
        sent = payload(name, session=session, cwd=str(project))
        if number == 3:  # asked again in a later turn (the same turn's is not stored twice)
            sent = sent.replace(b'"turn-2"', b'"turn-3"')
        ok(hook(home, event, sent, cwd=project))
    env = {**run_env(home), "MEMLANE_MAINTENANCE_ENABLED": "true"}
    done = subprocess.run(
        [*MEMLANE_CMD, "maintain", "--json"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert '"merged": 1' in done.stdout  # the repeat inside the Codex session, nothing else
    prompts = rows(home, "SELECT session_id, metadata FROM memories WHERE kind = 'prompt'")
    assert sorted(session for session, _ in prompts) == ["cx-1", "gm-1"]
    sessions = dict(rows(home, "SELECT id, agent FROM sessions"))
    assert sessions == {"cx-1": "codex", "gm-1": "gemini"}
    # Every prompt a session counts is still there, kept or absorbed by a prompt of its own.
    for session_id, count in rows(home, "SELECT id, prompt_count FROM sessions"):
        numbers: list[int] = []
        for owner, metadata in prompts:
            if owner == session_id:
                data = json.loads(metadata)
                numbers += [data["number"], *data.get("merged_numbers", [])]
        assert sorted(numbers) == list(range(1, count + 1)), session_id


def test_a_retention_setting_out_of_range_never_deletes(home: Path, tmp_path: Path) -> None:
    # MEMLANE_MAINTENANCE_MAX_AGE_DAYS=0 was clamped to 1 day: `maintain` (and the scheduled
    # run after capture) pruned every memory older than a day, with one warning on stderr.
    settings, _ = load_settings()
    with _open(settings) as memory:
        for text in ("ran the billing migration", "rotated the signing keys", "pinned numpy 2"):
            memory.save(text, project=P, type="command")
    db = sqlite3.connect(settings.database)
    days_ago = (datetime.now(UTC) - timedelta(days=5)).timestamp()
    db.execute("update memories set created_at=?, updated_at=?", (days_ago, days_ago))
    db.commit()
    db.close()

    def count() -> int:
        with _open(settings) as memory:
            return memory.stats().memories

    base = run_env(home) | {"MEMLANE_MAINTENANCE_ENABLED": "true"}
    for env in (
        {"MEMLANE_MAINTENANCE_MAX_AGE_DAYS": "0"},
        {"MEMLANE_MAINTENANCE_MAX_DB_SIZE_MB": "-1"},
    ):
        refused = subprocess.run(
            [*MEMLANE_CMD, "maintain"], env=base | env, capture_output=True, text=True
        )
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1 and "is outside" in refused.stderr
        assert "config set" in refused.stderr
        assert count() == 3
        background = subprocess.run(
            [*MEMLANE_CMD, "maintain", "--background"],
            env=base | env,
            capture_output=True,
            text=True,
        )
        # Not run, as a person's: the default may delete what the value keeps (clamped to
        # 1 day, as before, it pruned all three).
        assert background.returncode == 2, background.stderr
        assert "not run:" in background.stderr and "is outside" in background.stderr
        assert count() == 3
    (home / "config.toml").write_text("[maintenance]\nmax_age_days = 0\n", encoding="utf-8")
    from_file = subprocess.run(
        [*MEMLANE_CMD, "maintain", "--dry-run"], env=base, capture_output=True, text=True
    )
    assert from_file.returncode == 2 and "config.toml is outside" in from_file.stderr
    fixed = subprocess.run(
        [*MEMLANE_CMD, "config", "set", "maintenance.max_age_days", "30"],
        env=base,
        capture_output=True,
        text=True,
    )
    assert fixed.returncode == 0, fixed.stderr  # `config` stays usable to fix the value
    assert count() == 3


def test_scheduled_maintenance_says_in_one_line_why_a_database_setting_stops_it(
    home: Path,
) -> None:
    """A MEMLANE_DB whose folder does not exist: `memlane maintain` exits 2 with one line;
    the scheduled run logged a traceback ("maintenance failed") instead of that line."""
    env = run_env(home) | {
        "MEMLANE_MAINTENANCE_ENABLED": "true",
        "MEMLANE_DB": str(home / "no such folder" / "team.db"),
    }
    person = subprocess.run([*MEMLANE_CMD, "maintain"], env=env, capture_output=True, text=True)
    assert person.returncode == 2 and person.stderr.count("\n") == 1, person.stderr
    said = person.stderr.removeprefix("error: ").strip()
    assert "no such folder" in said
    background = subprocess.run(
        [*MEMLANE_CMD, "maintain", "--background"], env=env, capture_output=True, text=True
    )
    assert background.returncode == 2, background.stderr
    assert background.stderr.count("\n") == 1, background.stderr
    assert background.stderr.rstrip("\n").endswith(f" not run: {said}"), background.stderr
    assert not (home / "no such folder").exists()
