"""``python -m memlane.hooks.tail SESSION_ID``: finish a session's ingest.

SessionEnd has 1.5 s for every hook together, too little to ingest a long
transcript tail, so it marks the session ended and starts this module detached
(the worker, when it runs the hook, calls :func:`finish_session` after answering).
It ingests what is left of the transcript from the stored offset, for
``TAIL_BUDGET_S`` at most (a crafted transcript of 200 MB of lines holding no record
kept it reading for 60-100 s; in the worker, its ingest thread, which every relayed
Stop waits for), then refreshes the summary and checkpoint. What is left is logged; the
next Stop of the session, or ``memlane recover``, reads it. Like a hook it exits 0 and
logs failures to the hook log; its stdout and stderr already go there. The hook
names its database in the environment (``MEMLANE_DB``), not with ``--db``, which
would show a PostgreSQL password to every local user (:func:`memlane.runtime.spawn_detached`).
"""

from __future__ import annotations

import sys
import time

# A live session's tail is what its last Stop left (milliseconds); a first ingest of a
# long session at ~10 MB/s takes seconds.
TAIL_BUDGET_S = 30.0

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from memlane.service import Memory


def finish_session(memory: Memory, session_id: str, budget: float = TAIL_BUDGET_S) -> None:
    """Ingest what is left of the session's transcript (for ``budget`` seconds at most;
    what is left then is logged), then refresh its summary and checkpoint (nothing for a
    session ``memory`` does not know)."""
    if memory.find_session(session_id) is None:
        return
    report = memory.ingest_transcript(
        session_id, deadline=time.monotonic() + budget, summarize=False
    )
    if report.unfinished:
        from memlane.hooks.log import log_line

        log_line(
            memory.settings.paths.log_dir,
            f"tail {session_id}: stopped after {budget:.0f} s at byte {report.end_offset:,} of"
            f" {report.path}; the session's next Stop or `memlane recover` reads the rest",
        )
    memory.refresh_summary(session_id)
    memory.refresh_checkpoint(session_id)


def main(argv: list[str] | None = None) -> int:
    """Ingest the remaining transcript of one session. Always returns 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m memlane.hooks.tail SESSION_ID", file=sys.stderr)
        return 0
    session_id = args[0]
    try:
        from memlane.service import open as open_memory

        with open_memory() as memory:  # the database of MEMLANE_DB, or the default
            finish_session(memory, session_id)
    except BaseException as exc:  # detached: nobody else will see the error
        from memlane.hooks.log import log_line
        from memlane.paths import state_paths

        log_line(state_paths().log_dir, f"tail {session_id}: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
