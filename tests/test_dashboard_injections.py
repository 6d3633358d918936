"""The dashboard's injection view in headless Chromium, over injections made by real hook
processes: a session's timeline of prompts with what was injected (expandable), the token
meter, the feedback buttons, and the injected tokens per day on the stats page."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MEMLANE_CMD, run_env
from tests.test_dashboard import ARTIFACTS, XSS_IMG, XSS_SCRIPT, browser, page, server
from tests.test_web_support import LiveServer

__all__ = ["browser", "page", "server"]  # the fixtures this module borrows

pytestmark = pytest.mark.browser

RETRY = "Payment retries reuse the idempotency key when the Stripe webhook times out"
ASKED = "why does the stripe webhook retry reuse the idempotency key?"


def run_hook(home: Path, project: Path, event: str, data: dict[str, Any]) -> bytes:
    payload = {"session_id": "s-dash", "cwd": str(project), **data}
    done = subprocess.run(
        [*MEMLANE_CMD, "hook", event],
        input=json.dumps(payload).encode(),
        env=run_env(home),
        cwd=project,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return done.stdout


def test_session_injections_meter_feedback_and_stats(
    page: Any, server: LiveServer, home: Path, project: Path
) -> None:
    memory = server.memory
    mid = memory.save(RETRY, project="billing-api", type="decision").id
    hostile = memory.save(
        f"Stripe webhook idempotency note {XSS_IMG} {XSS_SCRIPT}", project="billing-api"
    ).id
    run_hook(home, project, "session-start", {"hook_event_name": "SessionStart"})
    asked = run_hook(home, project, "user-prompt-submit", {"prompt": ASKED})
    assert RETRY in asked.decode()
    run_hook(home, project, "user-prompt-submit", {"prompt": "ok"})
    (_, prompt_entry) = memory.injection_log(session_id="s-dash")
    shown = [m.memory_id for m in prompt_entry.memories]
    assert mid in shown

    page.reload()
    page.goto(server.base_url + "/#/sessions/s-dash")
    section = page.locator("[data-testid=injections]")
    section.wait_for()
    entries = page.locator("[data-testid=injection]")
    assert entries.count() == 2
    assert page.locator("[data-testid=quiet-prompt]", has_text="ok").count() == 1
    bars = page.locator("[data-testid=token-meter] svg rect")
    assert bars.count() == 2
    assert page.locator("[data-testid=token-meter] svg polyline").count() == 1
    tokens = page.locator("[data-testid=injection] [data-testid=tokens]").all_inner_texts()
    first, second = (e.tokens for e in memory.injection_log(session_id="s-dash"))
    assert tokens == [f"{first} tokens · Σ {first}", f"{second} tokens · Σ {first + second}"]

    prompt_item = entries.nth(1)
    assert not prompt_item.locator("[data-testid=injected-text]").is_visible()
    prompt_item.locator("summary").click()  # expand
    text = prompt_item.locator("[data-testid=injected-text]")
    text.wait_for()
    assert RETRY in text.inner_text()
    if hostile in shown:  # stored text is shown as text, never as markup
        assert XSS_IMG in text.inner_text()
    row = prompt_item.locator(f"[data-testid=injected-memory][data-mid='{mid}']")
    row.locator("[data-testid=mark-noise]").click()
    row.locator(".mark-state[data-mark=noise]").wait_for()
    marks = memory.core.store.feedback_for([mid])
    assert [(f.mark, f.injection_id) for f in marks] == [("noise", prompt_entry.id)]
    assert row.locator("[data-testid=mark-noise]").get_attribute("aria-pressed") == "true"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-injections.png"), full_page=True)

    # The same question again: the memory marked noise is not injected.
    again = run_hook(home, project, "user-prompt-submit", {"prompt": ASKED})
    assert RETRY not in again.decode()

    page.click("a[data-view='stats']")
    page.locator("[data-testid=chart-injected] svg rect").first.wait_for(state="attached")
    cards = page.inner_text("#stat-cards")
    assert "prompts with an injection" in cards and "% of 3" in cards
    heights = page.locator("[data-testid=chart-injected] svg rect").evaluate_all(
        "bars => bars.map(b => Number(b.getAttribute('height')))"
    )
    assert sum(1 for h in heights if h > 0) == 1  # today only
    page.screenshot(path=str(ARTIFACTS / "dashboard-injected-tokens.png"), full_page=True)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src='x']").count() == 0
    assert page.errors == []
