"""The shared ranking signals and the two distinct score types (invariants 3 and 5)."""

from __future__ import annotations

import ast
import math
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.filestate import FILE_STATE_KEY
from memlane.models import Memory, from_epoch
from memlane.search import scoring
from memlane.search.scoring import (
    MTIME_SLACK_S,
    ContextScore,
    ContextWeights,
    SearchScore,
    SearchWeights,
    Signals,
    compute_signals,
    context_score,
    frequency,
    linked_files_changed,
    recency,
    recency_anchor,
    search_score,
    similarity,
    staleness_penalty,
)

DAY = 86_400.0


def test_recency_is_one_at_age_zero_and_half_after_one_half_life() -> None:
    assert recency(0, 30) == 1.0
    assert recency(30 * DAY, 30) == pytest.approx(0.5)
    assert recency(60 * DAY, 30) == pytest.approx(0.25)
    assert recency(-5 * DAY, 30) == 1.0  # clock skew counts as new
    assert recency(10**9, math.inf) == 1.0


def test_recency_half_life_is_configurable() -> None:
    assert recency(7 * DAY, 7) == pytest.approx(0.5)
    assert recency(7 * DAY, 70) > recency(7 * DAY, 7)
    with pytest.raises(ValueError, match="half_life_days"):
        recency(1, 0)


@given(
    st.floats(min_value=0, max_value=1e10),
    st.floats(min_value=0, max_value=1e10),
    st.floats(min_value=0.01, max_value=1e4),
)
def test_recency_never_increases_with_age(a: float, b: float, half_life: float) -> None:
    young, old = sorted((a, b))
    assert 0.0 <= recency(old, half_life) <= recency(young, half_life) <= 1.0


def test_frequency_saturates() -> None:
    assert frequency(0) == 0.0
    assert 0 < frequency(1) < frequency(5) < frequency(19) < 1.0
    assert frequency(20) == 1.0
    assert frequency(10_000) == 1.0
    assert frequency(-3) == 0.0


def test_similarity_clamps_and_handles_missing() -> None:
    assert similarity(None) == 0.0
    assert similarity(float("nan")) == 0.0
    assert similarity(-0.4) == 0.0
    assert similarity(0.42) == pytest.approx(0.42)
    assert similarity(1.0000001) == 1.0


def test_staleness_penalty_is_a_multiplier() -> None:
    assert staleness_penalty(False) == 1.0
    assert staleness_penalty(True) == 0.5
    assert staleness_penalty(True, 0.2) == 0.2
    with pytest.raises(ValueError):
        staleness_penalty(True, 0.0)


def test_search_score_prefers_recent_when_relevance_ties() -> None:
    new = compute_signals(age_seconds=1 * DAY)
    old = compute_signals(age_seconds=200 * DAY)
    assert search_score(0.8, new) > search_score(0.8, old)
    # ... and among near-ties: 10 % more relevance does not make up five months.
    assert search_score(0.8, new) > search_score(0.88, old)
    # ... but relevance decides: an old fact that answers well beats newer weak ones.
    assert search_score(0.9, old) > search_score(0.65, new)
    # Signals decide a share of relevance: they never lift an irrelevant memory.
    assert search_score(0.0, new).value == 0.0
    assert search_score(0.5, new).value <= 0.5


def test_search_results_sorted_by_score_come_out_in_recency_order() -> None:
    ages = [40 * DAY, 1 * DAY, 400 * DAY, 10 * DAY]
    scored = [(age, search_score(0.5, compute_signals(age_seconds=age))) for age in ages]
    ordered = [age for age, _ in sorted(scored, key=lambda pair: pair[1], reverse=True)]
    assert ordered == sorted(ages)


def test_staleness_demotes_in_both_scores() -> None:
    fresh = compute_signals(age_seconds=DAY, access_count=3)
    stale = compute_signals(age_seconds=DAY, access_count=3, stale=True)
    assert search_score(0.9, stale) < search_score(0.9, fresh)
    assert context_score(stale) < context_score(fresh)
    # A stale but far more relevant memory is demoted, not hidden.
    weak = compute_signals(age_seconds=DAY)
    assert search_score(1.0, stale).value > search_score(0.1, weak).value


def test_recency_counts_back_from_the_newest_memory_ranked() -> None:
    now = 1_000 * DAY
    assert recency_anchor([10 * DAY, 400 * DAY], now) == 400 * DAY
    assert recency_anchor([10 * DAY, 2_000 * DAY], now) == now  # never after now / as_of
    assert recency_anchor([], now) == now


def test_frequency_raises_context_priority() -> None:
    unused = compute_signals(age_seconds=DAY, access_count=0)
    used = compute_signals(age_seconds=DAY, access_count=12)
    assert context_score(used) > context_score(unused)


def test_scores_follow_the_documented_formulas() -> None:
    signals = Signals(recency=0.5, frequency=0.25, similarity=0.8, stale=True)
    sw = SearchWeights(recency=0.3, frequency=0.2, similarity=0.1, stale_factor=0.4)
    expected = 0.6 * (0.4 + 0.3 * 0.5 + 0.2 * 0.25 + 0.1 * 0.8) * 0.4
    assert search_score(0.6, signals, sw).value == pytest.approx(expected)
    with pytest.raises(ValueError, match="sum to at most 1"):
        SearchWeights(recency=0.7, frequency=0.5)
    cw = ContextWeights(recency=1.0, frequency=0.5, similarity=0.25, stale_factor=0.5)
    assert context_score(signals, cw).value == pytest.approx((0.5 + 0.125 + 0.2) * 0.5)


def test_search_and_context_scores_cannot_be_compared() -> None:
    s = SearchScore(0.5)
    c = ContextScore(0.5)
    with pytest.raises(TypeError):
        _ = s < c  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = c >= s  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = s == c
    with pytest.raises(TypeError):
        _ = s == 0.5  # a bare float is no score either
    with pytest.raises(TypeError):
        sorted([s, c])


def test_scores_compare_within_their_own_type() -> None:
    assert SearchScore(0.2) < SearchScore(0.3)
    assert ContextScore(0.3) == ContextScore(0.3)
    assert float(SearchScore(0.25)) == 0.25
    assert sorted([ContextScore(2), ContextScore(1)]) == [ContextScore(1), ContextScore(2)]
    with pytest.raises(AttributeError):
        SearchScore(1).value = 2


def test_mypy_rejects_comparing_search_and_context_scores(tmp_path: Path) -> None:
    snippet = tmp_path / "mix.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from memlane.search.scoring import ContextScore, SearchScore
            ok = SearchScore(1.0) < SearchScore(2.0)
            bad = SearchScore(1.0) < ContextScore(2.0)
            """
        )
    )
    src = Path(scoring.__file__).resolve().parents[2]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-incremental",
            str(snippet),
        ],
        capture_output=True,
        text=True,
        env={"MYPYPATH": str(src), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "mix.py:4:" in result.stdout and "operator" in result.stdout, result.stdout
    assert "mix.py:3:" not in result.stdout


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            names.add(module if module.startswith("memlane") else module.split(".")[0])
    return names


@pytest.mark.parametrize("module", ["scoring", "fusion", "rerank", "context", "framing"])
def test_hook_path_modules_import_only_the_stdlib(module: str) -> None:
    path = Path(scoring.__file__).with_name(f"{module}.py")
    # Each of these imports only the standard library itself (framing is one of the modules
    # this test checks).
    allowed_internal = {
        "memlane.models",
        "memlane.text",
        "memlane.filestate",
        "memlane.outcomes",
        "memlane.search.framing",
        "memlane.search.scoring",
    }
    for name in _imported_modules(path):
        if name.startswith("memlane"):
            assert name in allowed_internal, f"{module}.py imports {name}"
        else:
            assert name in sys.stdlib_module_names, f"{module}.py imports {name}"


# -- linked files: the one staleness rule -----------------------------------------------


def _linked(files: tuple[str, ...], captured: float, **fields: Any) -> Memory:
    moment = from_epoch(captured)
    values: dict[str, Any] = {"created_at": moment, "updated_at": moment, **fields}
    return Memory(id=1, project="repo", kind="observation", type="file-write", content="x",
                  files=files, **values)  # fmt: skip


def _touch(path: Path, mtime: float) -> None:
    os.utime(path, (mtime, mtime))


def test_linked_files_changed_by_mtime_against_the_capture_time(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("v1")
    captured = time.time() - 3600
    _touch(path, captured - 10)
    memory = _linked((str(path),), captured)
    assert linked_files_changed(memory) is False
    _touch(path, captured + MTIME_SLACK_S / 2)  # within the clock slack
    assert linked_files_changed(memory) is False
    _touch(path, captured + 60)
    assert linked_files_changed(memory) is True
    # A revision rewrote the text later: the file is as the memory now describes it.
    revised = replace(memory, updated_at=from_epoch(captured + 120), revision_count=1)
    assert linked_files_changed(revised) is False
    # Never captured as revised: a later updated_at (an import, a merge) changes nothing.
    assert linked_files_changed(replace(memory, updated_at=from_epoch(captured + 120))) is True


def test_linked_files_changed_by_recorded_state(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("v1")
    st = path.stat()
    state = {"app.py": {"mtime": st.st_mtime, "size": float(st.st_size)}}
    memory = _linked(("app.py",), st.st_mtime + 3600, metadata={"cwd": str(tmp_path),
                     FILE_STATE_KEY: state})  # fmt: skip
    assert linked_files_changed(memory) is False
    path.write_text("longer text")
    _touch(path, st.st_mtime)  # same mtime, another size
    assert linked_files_changed(memory) is True
    path.unlink()  # a recorded file that is gone changed
    assert linked_files_changed(memory) is True


def test_linked_files_that_cannot_be_checked_say_nothing(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a")
    old = time.time() - 3600
    relative = _linked(("src/a.py", "src/missing.py"), old)
    assert linked_files_changed(relative) is None  # no root known
    assert linked_files_changed(relative, roots={"repo": tmp_path}) is True
    assert linked_files_changed(_linked((), old)) is None
    junk = {FILE_STATE_KEY: {"src/a.py": {"mtime": "yesterday"}}, "project_root": "relative/dir"}
    assert linked_files_changed(_linked(("src/a.py",), old, metadata=junk)) is None
    cache: dict[str, os.stat_result | None] = {}
    assert linked_files_changed(relative, roots={"repo": tmp_path}, stat=cache) is True
    assert str(tmp_path / "src" / "a.py") in cache
