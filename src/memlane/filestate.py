"""What capture records about linked files, so staleness can be judged exactly later.

Stdlib only: the PostToolUse hook calls it for every file an observation links.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

# The metadata key capture records the state under; staleness reads it (search/scoring.py).
FILE_STATE_KEY = "file_state"


def file_state(files: Sequence[str], base: str | None) -> dict[str, dict[str, float]]:
    """``{path: {"mtime": s, "size": n}}`` of the files that exist; others are left out."""
    state: dict[str, dict[str, float]] = {}
    for name in files:
        path = os.path.expanduser(name)
        if not os.path.isabs(path):
            if not base:
                continue
            path = os.path.join(base, path)
        try:
            st = os.stat(path)
        except OSError:
            continue
        state[name] = {"mtime": st.st_mtime, "size": float(st.st_size)}
    return state
