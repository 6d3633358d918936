"""Hold a detached child process at its start until the test opens a gate.

"The caller did not wait for the background work" is then a fact the test can check
(nothing of that work is done yet) instead of a wall-clock guess. Every Python process
that gets ``Gate.env`` imports the ``sitecustomize`` written here first; the ones whose
command line contains all the given words wait until ``Gate.open()`` (or two minutes,
so a failing test leaves nothing behind for long).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GATE_VAR = "MEMLANE_TEST_GATE"
WORDS_VAR = "MEMLANE_TEST_GATE_WORDS"
MAX_HOLD_S = 120

SITECUSTOMIZE = f"""
import json, os, sys, time
_words = json.loads(os.environ.get("{WORDS_VAR}", "[]"))
if _words and all(word in sys.orig_argv for word in _words):
    _deadline = time.monotonic() + {MAX_HOLD_S}
    while not os.path.exists(os.environ["{GATE_VAR}"]) and time.monotonic() < _deadline:
        time.sleep(0.05)
"""


@dataclass(frozen=True)
class Gate:
    """Environment that makes matching processes wait, and the file that releases them."""

    path: Path
    env: dict[str, str]

    def open(self) -> None:
        self.path.touch()


def gate(directory: Path, *words: str) -> Gate:
    """A closed gate for processes whose argv holds every one of ``words``."""
    site = directory / "gate-site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    path = directory / "gate-open"
    env = {"PYTHONPATH": str(site), GATE_VAR: str(path), WORDS_VAR: json.dumps(list(words))}
    return Gate(path=path, env=env)
