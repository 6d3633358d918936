"""Which of a session's outcome lines a person lists first.

An outcome line is what a run printed to say what it achieved
(``memlane.capture.metadata.extract_outcomes``): a commit (``[main 1a2b3c4] feat: …``),
test totals (``87 tests, 0 failures``, ``12 passed``), a push (``1a2b..3c4d  main ->
main``), a check mark (``✓ Closed x: reason``, ``✓ Exported 12 issues``). A long
session prints dozens; its summary and the SessionStart pack show a few, chosen by
:func:`most_telling`. Standard library only: the SessionStart hook uses it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_COMMIT = re.compile(r"\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,40}\] ")
_PUSH = re.compile(r"[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}\s|\* \[new (?:branch|tag)\]")
_CHECK_MARK = re.compile(r"[\u2713\u2714]\s*")
_FINISHED = re.compile(r"(?i)(?:closed|completed|done|resolved|merged|released|published)\b")
# How a person ranks what a session achieved: the commits (what it delivered), where the
# tests stood at the end, the items it closed, that the work was pushed, then the rest (a
# status set, an export, a sync) while room is left.
COMMITTED, TESTED, CLOSED, PUSHED, OTHER = range(5)
# Only the last line of these kinds says where the session ended.
_LAST_ONLY = (TESTED, PUSHED)


def _outcome_kind(line: str) -> int:
    if _COMMIT.match(line):
        return COMMITTED
    mark = _CHECK_MARK.match(line)
    if mark is not None:
        return CLOSED if _FINISHED.match(line, mark.end()) else OTHER
    return PUSHED if _PUSH.match(line) else TESTED


def most_telling(lines: Sequence[str], limit: int) -> tuple[str, ...]:
    """At most ``limit`` of the outcome ``lines``, in their order: the commits, the last
    test totals, the items closed (the latest first when they do not all fit), the
    last push, then other lines (a status set, an export) while room is left."""
    kinds = [_outcome_kind(line) for line in lines]
    latest = {kind: index for index, kind in enumerate(kinds)}
    wanted = [i for i, kind in enumerate(kinds) if kind not in _LAST_ONLY or latest[kind] == i]
    chosen = sorted(wanted, key=lambda i: (kinds[i], -i))[:limit]
    return tuple(lines[i] for i in sorted(chosen))
