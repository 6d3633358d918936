"""CLI reads through the warm worker: one request over the hook relay, else in-process.

A fresh ``memlane search`` process needs seconds to load the embedding model
and the vectors; the running worker has both in memory. So a read that needs
them asks the worker first, over the same uid-checked local socket the hooks
use (:mod:`memlane.hooks.relay`: one client path, no HTTP, no token), and runs
in-process when no worker answers — none running, another database or
environment, a config change, ``MEMLANE_RELAY=0``. Both paths run the same
function (:mod:`memlane.worker.queries`), so the output does not depend on
which one answered.
"""

from __future__ import annotations

import json
from typing import Any

from memlane.config import Settings

# The worker answers a warm search in milliseconds; this only bounds a stuck one (a
# worker still loading its model answers within it, and sooner than a new process).
TIMEOUT_S = 10.0
MAX_REPLY_BYTES = 256 * 1024 * 1024


def ask(settings: Settings, kind: str, request: dict[str, Any]) -> dict[str, Any] | None:
    """The worker's JSON answer to ``request``, or None (then run it in-process)."""
    from memlane.hooks.relay import as_spawned, environment, exchange

    env = as_spawned(environment(), settings.db_target)
    if env.get("MEMLANE_RELAY", "").strip().lower() in ("0", "false", "no", "off"):
        return None
    payload = json.dumps(request).encode("utf-8")
    answer = exchange(
        kind,
        payload,
        env,
        TIMEOUT_S,
        max_reply=MAX_REPLY_BYTES,
        database_target=settings.database,
    )
    if answer is None:
        return None
    try:
        data = json.loads(answer[1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
