"""The CLI's reads, answered by the worker over the hook relay (its model is warm).

``memlane search`` asks the running worker first (:mod:`memlane.cli.warm`): the
worker has the embedder loaded and the vectors in memory, so a hybrid search
costs milliseconds instead of the seconds a fresh process needs to load them.
A request is JSON with the facade's arguments; the answer is JSON with the
wire models (:mod:`memlane.schemas`) the CLI prints. A request the worker
cannot answer (bad JSON, an argument the facade refuses) gets no answer, and
the CLI runs it in-process, where the same error reaches the user as usual.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memlane.errors import MemlaneError
from memlane.hooks.relay import SEARCH
from memlane.service import Memory

log = logging.getLogger("memlane.worker")


def _when(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


def search(memory: Memory, request: dict[str, Any]) -> dict[str, Any]:
    """Run ``memory.search`` with the CLI's arguments; the hits as wire JSON."""
    from memlane.schemas import SearchHitOut

    types = request.get("types")
    hits = memory.search(
        str(request["query"]),
        project=request.get("project"),
        scope=request.get("scope"),
        limit=int(request.get("limit", 10)),
        mode=request.get("mode"),
        as_of=_when(request.get("as_of")),
        types=[str(t) for t in types] if types else None,
        since=_when(request.get("since")),
        min_score=request.get("min_score"),
        fusion=request.get("fusion"),
    )
    return {
        "hits": [SearchHitOut.model_validate(hit).model_dump(mode="json") for hit in hits],
        "notice": hits.notice,
    }


QUERIES: dict[str, Callable[[Memory, dict[str, Any]], dict[str, Any]]] = {SEARCH: search}


def run_query(memory: Memory, kind: str, payload: bytes) -> bytes | None:
    """The JSON answer to one request, or None to let the CLI run it in-process."""
    try:
        request = json.loads(payload)
        if not isinstance(request, dict):
            return None
        answer = QUERIES[kind](memory, request)
    except (MemlaneError, ValueError, TypeError, KeyError) as exc:
        log.info("%s left to the CLI: %s", kind, exc)
        return None
    return json.dumps(answer, ensure_ascii=False).encode("utf-8")
