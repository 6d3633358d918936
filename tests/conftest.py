"""Shared fixtures: every test gets its own MEMLANE_HOME with a real SQLite file."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane.config import Settings, load_settings
from memlane.service import Memory, open as open_memory

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures" / "claude-code-transcripts"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private MEMLANE_HOME for the test; the worker is never auto-started."""
    root = tmp_path / "memlane-home"
    monkeypatch.setenv("MEMLANE_HOME", str(root))
    monkeypatch.setenv("MEMLANE_WORKER_AUTOSTART", "false")
    monkeypatch.setenv("MEMLANE_MAINTENANCE_ENABLED", "false")
    monkeypatch.delenv("MEMLANE_DB", raising=False)
    monkeypatch.delenv("MEMLANE_DISABLED", raising=False)
    return root


@pytest.fixture
def settings(home: Path) -> Settings:
    loaded, warnings = load_settings()
    assert not warnings
    return loaded


@pytest.fixture
def memory(settings: Settings) -> Iterator[Memory]:
    mem = open_memory(settings=settings)
    yield mem
    mem.close()


def run_env(home: Path) -> dict[str, str]:
    """Environment for subprocesses of the real `memlane` command."""
    env = dict(os.environ)
    env.update(
        MEMLANE_HOME=str(home),
        MEMLANE_WORKER_AUTOSTART="false",
        MEMLANE_MAINTENANCE_ENABLED="false",
    )
    env.pop("MEMLANE_DB", None)
    return env


MEMLANE_CMD = [sys.executable, "-m", "memlane"]
