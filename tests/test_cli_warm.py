"""`memlane search` through the running worker's warm engine, else in-process (real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane.config import load_settings
from memlane.worker.server import wait_until_ready
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sockets")

NOTES = [
    "webhook retries use jittered exponential backoff",
    "the invoice job runs nightly at 02:00 UTC",
    "payments go through the stripe adapter, never directly",
]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = run_env(home)
    env.update(MEMLANE_EMBEDDER="toy", **extra)
    return env


def memlane(
    home: Path, *args: str, importtime: bool = False, **extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), *MEMLANE_CMD[1:]]
    return subprocess.run(
        [*argv, *args],
        env=_env(home, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def loaded(done: subprocess.CompletedProcess[str]) -> set[str]:
    """Modules the process imported (from its -X importtime report)."""
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.fixture
def warm(home: Path, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    for note in NOTES:
        assert memlane(home, "save", note, "--project", "billing").returncode == 0
    assert memlane(home, "embed", "--backfill").returncode == 0
    with (tmp_path / "serve.out").open("ab") as out:
        proc = subprocess.Popen(
            [*MEMLANE_CMD, "serve", "--port", str(free_port())],
            env=_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    settings, _ = load_settings(environ=_env(home))
    assert wait_until_ready(settings, timeout=120).healthy, (tmp_path / "serve.out").read_text()
    yield proc
    proc.terminate()
    proc.wait(30)


def test_search_is_answered_by_the_worker_like_in_process(
    home: Path, warm: subprocess.Popen[bytes]
) -> None:
    args = ("search", "webhook backoff", "--project", "billing", "--mode", "hybrid", "--json")
    through_worker = memlane(home, *args, importtime=True)
    assert through_worker.returncode == 0, through_worker.stderr
    modules = loaded(through_worker)
    assert "memlane.cli" in modules  # the report is complete
    # The worker searched: this process loaded no engine, no numpy, not even the store.
    assert not {"numpy", "memlane.search.engine", "memlane.store.sqlite"} & modules
    in_process = memlane(home, *args, importtime=True, MEMLANE_RELAY="0")
    assert in_process.returncode == 0, in_process.stderr
    assert "memlane.search.engine" in loaded(in_process)
    ours, theirs = json.loads(through_worker.stdout), json.loads(in_process.stdout)
    assert [hit["id"] for hit in ours] == [hit["id"] for hit in theirs]
    assert ours[0]["content"] == NOTES[0]
    assert set(ours[0]) == set(theirs[0])  # the same wire model either way


def test_table_output_through_the_worker(home: Path, warm: subprocess.Popen[bytes]) -> None:
    done = memlane(home, "search", "invoice nightly", "--project", "billing")
    assert done.returncode == 0, done.stderr
    assert "invoice job runs nightly" in done.stdout
    nothing = memlane(home, "search", "helm chart", "--project", "nowhere", "--scope", "project")
    assert nothing.returncode == 0
    assert "no memories match" in nothing.stderr


def test_another_database_is_searched_in_process(
    home: Path, tmp_path: Path, warm: subprocess.Popen[bytes]
) -> None:
    other = tmp_path / "other.db"
    assert memlane(home, "--db", str(other), "save", "only in the other file").returncode == 0
    done = memlane(home, "--db", str(other), "search", "other file", "--json", importtime=True)
    assert done.returncode == 0, done.stderr
    assert "memlane.store.sqlite" in loaded(done)  # refused by the worker: run here
    assert [hit["content"] for hit in json.loads(done.stdout)] == ["only in the other file"]


def test_bad_arguments_fail_the_same_way_through_the_worker(
    home: Path, warm: subprocess.Popen[bytes]
) -> None:
    done = memlane(home, "search", "   ", "--project", "billing")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: the search query is empty"


def test_another_config_file_is_searched_in_process(
    home: Path, tmp_path: Path, warm: subprocess.Popen[bytes]
) -> None:
    """The worker runs with the default config: --config PATH must not get its answer."""
    config = tmp_path / "strict.toml"
    config.write_text('scope = "project"\n', encoding="utf-8")
    args = ("search", "webhook backoff", "--project", "shop", "--mode", "keyword", "--json")
    assert json.loads(memlane(home, *args).stdout)  # tiered: billing's note, from the worker
    done = memlane(home, "--config", str(config), *args, importtime=True)
    assert done.returncode == 0, done.stderr
    assert "memlane.store.sqlite" in loaded(done)  # refused by the worker: run here
    assert json.loads(done.stdout) == []  # that file's scope: only project shop


def test_fusion_and_syntax_reach_the_worker(home: Path, warm: subprocess.Popen[bytes]) -> None:
    args = ("search", "webhook payments", "--project", "billing", "--mode", "hybrid", "--json")

    def scores(*extra: str, **env: str) -> list[tuple[int, float]]:
        done = memlane(home, *args, *extra, **env)
        assert done.returncode == 0, done.stderr
        return [(hit["id"], hit["score"]) for hit in json.loads(done.stdout)]

    # Each search counts an access (a small share of the score): compare within a margin
    # far below the gap between the two fusions.
    rrf, here = scores("--fusion", "rrf"), scores("--fusion", "rrf", MEMLANE_RELAY="0")
    calibrated = scores("--fusion", "calibrated")
    assert [i for i, _ in rrf] == [i for i, _ in here] == [i for i, _ in calibrated]
    for (_, a), (_, b), (_, c) in zip(rrf, here, calibrated, strict=True):
        assert a == pytest.approx(b, abs=0.02)
    assert rrf[0][1] - calibrated[0][1] > 0.1
    narrowed = memlane(home, *args[:1], "webhook -stripe", *args[2:])
    assert narrowed.returncode == 0, narrowed.stderr
    found = [hit["content"] for hit in json.loads(narrowed.stdout)]
    assert found[0] == NOTES[0] and NOTES[2] not in found  # "-stripe" excludes the adapter
    bad = memlane(home, "search", '"webhook', "--project", "billing")
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error: search syntax: the quote at column 1")
    assert len(bad.stderr.strip().splitlines()) == 1
