"""Console entry point.

``memlane hook <event>`` runs on every prompt of an agent, so it is routed to
the lean hook dispatcher before click or anything heavy is imported; every
other command goes through the click CLI.
"""

from __future__ import annotations

import os
import sys

# Global options a hook command line may carry before ``hook EVENT``.
_HOOK_OPTIONS = ("--db", "--config")


def _hook_argv(argv: list[str]) -> tuple[str, dict[str, str]] | None:
    """(event, {option: value}) when argv is ``[--db X] [--config Y] hook EVENT``; else None."""
    options: dict[str, str] = {}
    rest = list(argv)
    while rest and rest[0].startswith("--"):
        name, eq, value = rest[0].partition("=")
        if name not in _HOOK_OPTIONS:
            return None
        if eq:
            rest = rest[1:]
        elif len(rest) > 1:
            value, rest = rest[1], rest[2:]
        else:
            return None
        options[name] = value
    if len(rest) == 2 and rest[0] == "hook" and not rest[1].startswith("-"):
        return rest[1], options
    return None


def main() -> None:
    routed = _hook_argv(sys.argv[1:])
    if routed is not None:
        from memlane.hooks.dispatch import run_hook

        event, options = routed
        config = options.get("--config")
        if config is not None:
            # What the processes the hook starts (the worker, a transcript's tail) read, and
            # what the relay's worker must have been started with too (its fingerprint).
            os.environ["MEMLANE_CONFIG"] = config
        raise SystemExit(run_hook(event, db=options.get("--db"), config=config))
    from memlane.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
