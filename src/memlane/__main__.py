"""Console entry point.

``memlane hook <event>`` runs on every prompt of an agent, so it is routed to
the lean hook dispatcher before click or anything heavy is imported; every
other command goes through the click CLI.
"""

from __future__ import annotations

import sys


def _hook_argv(argv: list[str]) -> tuple[str, str | None] | None:
    """(event, db) when argv is ``[--db X] hook EVENT``; None otherwise."""
    db: str | None = None
    rest = list(argv)
    while rest and rest[0].startswith("--db"):
        if rest[0] == "--db" and len(rest) > 1:
            db, rest = rest[1], rest[2:]
        elif rest[0].startswith("--db="):
            db, rest = rest[0].split("=", 1)[1], rest[1:]
        else:
            return None
    if len(rest) == 2 and rest[0] == "hook" and not rest[1].startswith("-"):
        return rest[1], db
    return None


def main() -> None:
    routed = _hook_argv(sys.argv[1:])
    if routed is not None:
        from memlane.hooks.dispatch import run_hook

        raise SystemExit(run_hook(routed[0], db=routed[1]))
    from memlane.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
