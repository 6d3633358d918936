"""The injection log over HTTP (a real uvicorn on 127.0.0.1) and MCP (an in-process client
session): the same wire models, the same errors."""

from __future__ import annotations

import httpx
from mcp import Client

from memlane.injections import Injected
from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from memlane.schemas import FeedbackOut, InjectionsOut, StatsOut
from memlane.service import Memory
from tests.test_mcp_server import err, ok, run
from tests.test_web_support import LiveServer

RETRY = "Payment retries reuse the idempotency key when the Stripe webhook times out"
ASKED = "why does the stripe webhook retry reuse the idempotency key"


def logged(memory: Memory) -> tuple[int, int]:
    """A memory and the injection that showed it (prompt 1 of session s1)."""
    mid = memory.save(RETRY, project="billing", type="decision").id
    entry = memory.record_injection(
        Injected(
            session_id="s1",
            project="billing",
            event="user-prompt-submit",
            text=f"{INJECTED_OPEN}\nrecalled: {RETRY}\n{INJECTED_CLOSE}",
            mode="hybrid",
            relayed=True,
            hook_ms=8.5,
            prompt=ASKED,
            prompt_number=1,
            memories=((mid, 0.77),),
        )
    )
    assert entry is not None
    memory.record_injection(
        Injected("s1", "billing", "user-prompt-submit", "", "keyword", True, 3.0, "ok", 2)
    )
    return mid, entry


def test_http_lists_marks_and_counts(server: LiveServer, client: httpx.Client) -> None:
    mid, entry = logged(server.memory)
    assert httpx.get(server.base_url + "/api/injections").status_code == 401
    listed = InjectionsOut.model_validate(client.get("/api/injections?session_id=s1").json())
    (found,) = listed.injections
    assert (found.id, found.prompt_number, found.relayed, found.mode) == (entry, 1, True, "hybrid")
    assert found.text == f"recalled: {RETRY}" and found.memories[0].memory_id == mid
    assert client.get("/api/injections?project=elsewhere").json() == {"injections": []}
    bad = client.get("/api/injections?limit=0")
    assert bad.status_code == 422 and bad.json()["fields"][0]["field"] == "limit"

    body = {"memory_id": mid, "mark": "noise"}
    foreign = client.post("/api/feedback", json=body, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    marked = client.post("/api/feedback", json=body, headers={"Origin": server.origin})
    assert marked.status_code == 200, marked.text
    out = FeedbackOut.model_validate(marked.json())
    assert (out.memory_id, out.mark, out.injection_id, out.prompt) == (mid, "noise", entry, ASKED)
    relisted = client.get("/api/injections?session_id=s1").json()
    assert relisted["injections"][0]["memories"][0]["feedback"] == "noise"
    wrong = client.post("/api/feedback", json={"memory_id": mid, "mark": "meh"})
    assert wrong.status_code == 422 and wrong.json()["fields"][0]["field"] == "mark"
    missing = client.post("/api/feedback", json={"memory_id": 424242, "mark": "useful"})
    assert missing.status_code == 404 and "424242" in missing.json()["message"]

    stats = StatsOut.model_validate(client.get("/api/stats?project=billing").json())
    assert (stats.injections.prompts, stats.injections.prompts_injected) == (2, 1)
    assert stats.injections.injected_share == 0.5
    assert stats.injections.marked_noise == 1
    assert stats.injections.tokens_total == found.tokens
    paths = client.get("/api/openapi.json").json()["paths"]
    assert "post" in paths["/api/feedback"] and "get" in paths["/api/injections"]


def test_mcp_feedback_and_stats_share_the_wire_models(memory: Memory) -> None:
    mid, entry = logged(memory)

    async def body(client: Client) -> tuple[dict, dict, str]:
        marked = await ok(client, "feedback", {"memory_id": mid, "mark": "useful"})
        stats = await ok(client, "stats", {"project": "billing"})
        error = await err(client, "feedback", {"memory_id": 999999, "mark": "noise"})
        return marked, stats, error

    marked, stats, error = run(memory, body)
    assert FeedbackOut.model_validate(marked).injection_id == entry
    assert StatsOut.model_validate(stats).injections.marked_useful == 1
    assert stats["injections"]["prompts"] == 2
    assert error.startswith("feedback failed: no memory with id 999999")
