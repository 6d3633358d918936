"""``memlane`` as a user runs it, for the benchmarks that time the CLI as typed."""

from __future__ import annotations

import sys
from pathlib import Path


def memlane_command() -> list[str]:
    """The console script next to this interpreter (what a user runs), else ``-m memlane``."""
    script = Path(sys.executable).with_name("memlane")
    return [str(script)] if script.exists() else [sys.executable, "-m", "memlane"]
