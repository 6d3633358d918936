#!/usr/bin/env python3
"""List, and end, the processes a test run left behind.

Usage::

    leftovers.py --marker ID [--grace SECONDS]

``scripts/test.sh`` exports ``MEMLANE_TEST_RUN=ID`` (unique per run) before it starts
anything; every process of the run inherits it: pytest and its workers, memlane workers
and MCP servers, detached hook processes, Chromium, and the PostgreSQL server
(``pg_server.py`` hands the marker on explicitly). On Linux each process's start
environment is readable in ``/proc/PID/environ``, so the run's processes are found by
their marker, never by a name that someone else's process might share.

Processes that are still alive after ``--grace`` seconds (detached work such as a
transcript tail may legitimately finish a little after pytest) are printed, sent SIGTERM,
then SIGKILL, and the exit code is 1. No leftovers: exit 0. Without /proc the check
cannot look and says so (exit 0).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
MARKER_VAR = "MEMLANE_TEST_RUN"
TERM_WAIT_S = 5.0


@dataclass(frozen=True)
class Leftover:
    """A live process of the run: its pid, owner and command line."""

    pid: int
    user: str
    command: str


def ancestors(pid: int) -> set[int]:
    """`pid` and every process above it (the shell running the check is one of them)."""
    found: set[int] = set()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            break
        # "pid (comm) state ppid ...": comm may contain spaces and parentheses.
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def has_marker(pid: int, entry: bytes) -> bool:
    """Whether process `pid` started with `entry` (b"NAME=value") in its environment."""
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or another user's process and we are not root
        return False
    return entry in environ.split(b"\0")


def describe(pid: int) -> Leftover | None:
    """The process as a Leftover, or None when it ended meanwhile (or is a zombie)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
        owner = (PROC / str(pid)).stat().st_uid
    except OSError:
        return None
    if not raw:
        return None  # a zombie (or a kernel thread): nothing left to end
    try:
        import pwd

        user = pwd.getpwuid(owner).pw_name
    except (ImportError, KeyError):
        user = str(owner)
    command = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return Leftover(pid=pid, user=user, command=command)


def find(marker: str, exclude: set[int]) -> list[Leftover]:
    """Live processes whose environment carries the run's marker, oldest pid first."""
    entry = f"{MARKER_VAR}={marker}".encode()
    found: list[Leftover] = []
    for path in PROC.iterdir():
        if not path.name.isdigit():
            continue
        pid = int(path.name)
        if pid in exclude or not has_marker(pid, entry):
            continue
        leftover = describe(pid)
        if leftover is not None:
            found.append(leftover)
    return sorted(found, key=lambda p: p.pid)


def wait_until_gone(marker: str, exclude: set[int], timeout: float) -> list[Leftover]:
    """Poll for up to `timeout` seconds; the processes still alive at the end."""
    deadline = time.monotonic() + timeout
    while True:
        alive = find(marker, exclude)
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.25)


def end(leftovers: Sequence[Leftover], marker: str, exclude: set[int]) -> list[Leftover]:
    """SIGTERM each, then SIGKILL what still runs; the processes that survived both."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for leftover in leftovers:
            try:
                os.kill(leftover.pid, signum)
            except ProcessLookupError:
                pass
            except PermissionError as exc:
                print(f"leftovers: cannot end pid {leftover.pid}: {exc}", file=sys.stderr)
        still = {p.pid for p in wait_until_gone(marker, exclude, TERM_WAIT_S)}
        leftovers = [p for p in leftovers if p.pid in still]
        if not leftovers:
            break
    return list(leftovers)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 when the run left nothing running, 1 when it did."""
    parser = argparse.ArgumentParser(prog="leftovers.py", description=__doc__.split("\n")[0])
    parser.add_argument("--marker", required=True, help=f"the run's {MARKER_VAR} value")
    parser.add_argument(
        "--grace", type=float, default=15.0, help="seconds to let processes end on their own"
    )
    args = parser.parse_args(argv)
    if not args.marker.strip():
        parser.error("--marker must not be empty")
    if not (PROC / "self" / "environ").exists():
        print("leftovers: no /proc on this system; cannot check for leftover processes")
        return 0
    exclude = ancestors(os.getpid())
    leftovers = wait_until_gone(args.marker, exclude, args.grace)
    if not leftovers:
        print("leftovers: none (no process of this run is still running)")
        return 0
    print(
        f"leftovers: {len(leftovers)} process(es) of this run still running after"
        f" {args.grace:g} s; ending them:",
        file=sys.stderr,
    )
    for leftover in leftovers:
        print(f"  pid {leftover.pid} ({leftover.user}): {leftover.command[:300]}", file=sys.stderr)
    survivors = end(leftovers, args.marker, exclude)
    for leftover in survivors:
        print(f"leftovers: pid {leftover.pid} survived SIGKILL", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
