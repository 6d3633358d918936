"""DESIGN §10 invariants 1–5, one dedicated test (or group) each."""

from __future__ import annotations

import ast
import dataclasses
import sqlite3
from pathlib import Path

import pytest

from memlane import privacy
from memlane.models import Summary, utcnow
from memlane.service import Memory
from memlane.sessions import SUMMARY_TOPIC, summary_from_memory

SRC = Path(__file__).resolve().parents[1] / "src" / "memlane"
P = "inv"
SECRET = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


def _rows(memory: Memory) -> list[tuple[str, str]]:
    with sqlite3.connect(memory.store.location) as conn:
        return [(r[0], r[1]) for r in conn.execute("SELECT content, normalized_hash FROM memories")]


# -- 1. the normalized hash is computed after <private> and secret removal ---------------


def test_invariant_1_hash_is_over_the_scrubbed_content(memory: Memory) -> None:
    raw = f"Deploy uses token={SECRET} <private>the staging password is hunter2</private> ok"
    saved = memory.save(raw, project=P, type="lesson")
    stored = memory.get(saved.id)
    assert SECRET not in stored.content and "hunter2" not in stored.content
    assert stored.normalized_hash == privacy.normalized_hash(stored.content)
    # Other private text and another secret give the same hash: a duplicate.
    other = raw.replace(SECRET, "ghp_" + "Z" * 36).replace("hunter2", "letmein")
    assert memory.save(other, project=P, type="lesson").status == "deduplicated"
    # An edit re-hashes the scrubbed text too.
    edited = memory.update(saved.id, content=f"new token={SECRET} <private>x</private>")
    assert edited.normalized_hash == privacy.normalized_hash(edited.content)
    assert SECRET not in edited.content


def test_invariant_1_holds_for_every_row_of_every_capture_path(
    memory: Memory, tmp_path: Path
) -> None:
    memory.record_prompt("s", f"use {SECRET} <private>my secret plan</private> please", project=P)
    memory.record_tool_event(
        "s", "Bash", {"command": f"curl -H 'Authorization: Bearer {SECRET}' x"},
        {"stdout": "<private>hidden</private> 200 OK"}, cwd=str(tmp_path), project=P,
    )  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        '{"type":"user","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user",'
        f'"content":"export GITHUB_TOKEN={SECRET} <private>never</private>"}}}}\n'
        '{"type":"assistant","timestamp":"2025-01-01T00:00:05Z","message":{"role":"assistant",'
        '"content":[{"type":"text","text":"Done, the token is set."}]}}\n',
        encoding="utf-8",
    )
    memory.ingest_transcript("s", str(transcript), project=P)
    memory.refresh_summary("s")
    rows = _rows(memory)
    assert len(rows) >= 3
    for content, digest in rows:
        assert SECRET not in content and "<private>" not in content
        assert digest == privacy.normalized_hash(content), content


# -- 2. every summary says whether it is auto-generated ------------------------------------


def test_invariant_2_every_summary_says_whether_it_is_auto_generated(memory: Memory) -> None:
    field = {f.name: f for f in dataclasses.fields(Summary)}["is_auto_generated"]
    assert field.default is dataclasses.MISSING  # no silent default: the writer must say
    memory.save("Fix the flaky test", project=P, type="prompt", kind="prompt", session_id="a")
    memory.save("Edited tests/test_x.py", project=P, type="file-write", session_id="a")
    auto = memory.refresh_summary("a")
    assert auto is not None and auto.is_auto_generated is True
    memory.session_start("b", project=P)
    memory.save_summary(
        Summary(session_id="b", project=P, is_auto_generated=False, request="written by agent")
    )
    # An auto-closed idle session gets an auto summary too.
    memory.session_start("c", project=P, now=utcnow().replace(year=2020))
    memory.save("ran make", project=P, type="command", session_id="c",
                created_at=utcnow().replace(year=2020))  # fmt: skip
    memory.session_start("d", project=P)
    summaries = memory.list_memories(project=P, kinds=["summary"])
    assert {s.session_id for s in summaries} == {"a", "b", "c"}
    for row in summaries:
        flag = row.metadata["summary"]["is_auto_generated"]
        assert isinstance(flag, bool)
        assert summary_from_memory(row).is_auto_generated is flag
        assert flag is (row.session_id != "b")
    assert memory.get_summary("b") is not None
    assert memory.store.find_memory(P, topic_key=SUMMARY_TOPIC + "c") is not None


def test_invariant_2_wire_summaries_carry_the_flag() -> None:
    from memlane.schemas import SummaryOut

    assert SummaryOut.model_fields["is_auto_generated"].is_required()


# -- 3. signals are defined once, in search/scoring.py ---------------------------------------

SIGNALS = {"recency", "frequency", "similarity", "staleness_penalty"}


def _defined_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def test_invariant_3_signals_live_in_scoring_only() -> None:
    scoring = SRC / "search" / "scoring.py"
    assert _defined_functions(scoring) >= SIGNALS
    offenders = {
        str(path.relative_to(SRC)): sorted(SIGNALS & _defined_functions(path))
        for path in SRC.rglob("*.py")
        if path != scoring and SIGNALS & _defined_functions(path)
    }
    assert offenders == {}, f"signals redefined outside search/scoring.py: {offenders}"


# -- 4. an upsert that updates a memory moves it to the current session -----------------------


def test_invariant_4_topic_upsert_moves_the_memory_to_the_current_session(
    memory: Memory,
) -> None:
    first = memory.save("API base URL is /v1", project=P, type="decision",
                        topic_key="api/base", session_id="old")  # fmt: skip
    assert memory.get(first.id).session_id == "old"
    result = memory.save("API base URL is /v2", project=P, type="decision",
                         topic_key="api/base", session_id="current")  # fmt: skip
    assert result.status == "updated" and result.id == first.id
    assert memory.get(first.id).session_id == "current"


def test_invariant_4_source_id_upsert_moves_the_memory_too(memory: Memory) -> None:
    first = memory.save("imported v1", project=P, source="jsonl", source_id="rec-1",
                        session_id="import-old")  # fmt: skip
    result = memory.save("imported v2", project=P, source="jsonl", source_id="rec-1",
                         session_id="import-new")  # fmt: skip
    assert result.status == "updated" and result.id == first.id
    stored = memory.get(first.id)
    assert stored.session_id == "import-new" and stored.content == "imported v2"


# -- 5. search scores and context scores are different types ----------------------------------


def test_invariant_5_search_and_context_scores_never_compare() -> None:
    from memlane.search.scoring import (
        ContextScore,
        SearchScore,
        compute_signals,
        context_score,
        search_score,
    )

    assert not issubclass(SearchScore, ContextScore) and not issubclass(ContextScore, SearchScore)
    signals = compute_signals(age_seconds=3600.0)
    s = search_score(0.8, signals)
    c = context_score(signals)
    assert type(s) is SearchScore and type(c) is ContextScore
    assert s == search_score(0.8, signals)
    with pytest.raises(TypeError):
        _ = s < c  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = s == c
