"""The dashboard in Debian's headless Chromium (Playwright), against a real server.

Needs /usr/bin/chromium (`bash scripts/install_chromium.sh`) and the playwright
package; without them these tests skip locally but FAIL under CI=true.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memlane.config import Settings
from memlane.errors import NotFound
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, run_env
from tests.test_web_support import LiveServer

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
DEMO = Path(__file__).resolve().parents[1] / "src" / "memlane" / "demo" / "sample.jsonl"
XSS_IMG = "<img src=x onerror=\"window.__pwned='img'\">"
XSS_SCRIPT = "<script>window.__pwned='script'</script>"


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install playwright)")
    if not os.access(CHROMIUM, os.X_OK):
        _missing(f"{CHROMIUM} is missing (bash scripts/install_chromium.sh)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def server(memory: Memory) -> Iterator[LiveServer]:
    live = LiveServer(memory, poll_interval=0.1).start()
    yield live
    live.stop()


@pytest.fixture
def page(browser: Any, server: LiveServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.goto(server.login_url())
    tab.wait_for_selector("#live[data-state='on']")
    tab.errors = errors
    yield tab
    context.close()


def _seed(memory: Memory) -> dict[str, int]:
    ids = {}
    ids["zebra"] = memory.save(
        "Zebra stripes: the CSS grid layout breaks on Safari 16 without a min-width",
        project="web",
        type="bugfix",
        title="Safari grid bug",
    ).id
    ids["queue"] = memory.save(
        "Decision: confirmation emails go through the Redis queue", project="shop", type="decision"
    ).id
    return ids


def test_search_open_edit_delete(page: Any, server: LiveServer) -> None:
    memory = server.memory
    ids = _seed(memory)
    page.reload()
    page.click("a[data-view='search']")
    page.fill("[data-testid=search-input]", "zebra stripes")
    page.click("[data-testid=search-button]")
    card = page.locator("[data-testid=results] [data-testid=memory-card]")
    card.first.wait_for()
    assert card.count() == 1
    assert "Safari grid bug" in card.first.inner_text()
    card.first.click()
    dialog = page.locator("[data-testid=detail]")
    dialog.wait_for(state="visible")
    assert "min-width" in page.inner_text("[data-testid=detail-content]")
    assert not page.is_visible("[data-testid=edit-content]")  # view mode shows no form
    assert not page.is_visible("[data-testid=confirm-delete]")
    page.click("[data-testid=edit]")
    assert page.is_visible("[data-testid=edit-content]")
    assert not page.is_visible("[data-testid=detail-content]")
    page.fill("[data-testid=edit-content]", "Zebra stripes: fixed by adding min-width: 0")
    page.click("[data-testid=save]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=detail-content]')"
        ".textContent.includes('fixed by')"
    )
    assert memory.get(ids["zebra"]).content == "Zebra stripes: fixed by adding min-width: 0"
    assert memory.get(ids["zebra"]).revision_count == 1
    page.click("[data-testid=delete]")
    page.click("[data-testid=confirm-delete]")
    dialog.wait_for(state="hidden")
    with pytest.raises(NotFound):
        memory.get(ids["zebra"])
    assert page.locator(f"[data-testid=results] .card[data-id='{ids['zebra']}']").count() == 0
    assert memory.get(ids["queue"]).project == "shop"
    assert page.errors == []


def test_live_event_from_another_process_arrives(page: Any, home: Path) -> None:
    page.click("a[data-view='feed']")
    done = subprocess.run(
        [*MEMLANE_CMD, "--project", "live-proj", "save", "pushed by a hook in another process"],
        env=run_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    card = page.locator("[data-testid=feed] .card", has_text="pushed by a hook in another process")
    card.wait_for(timeout=10_000)
    assert "live-proj" in card.inner_text()
    assert "fresh" in (card.get_attribute("class") or "")


def test_xss_payloads_render_as_text_and_run_nothing(page: Any, server: LiveServer) -> None:
    payload = f"Payloads {XSS_IMG} and {XSS_SCRIPT} must stay text"
    mid = server.memory.save(payload, project="sec", title=f"title {XSS_IMG}").id
    feed_card = page.locator(f"[data-testid=feed] .card[data-id='{mid}']")
    feed_card.wait_for(timeout=10_000)  # arrives over SSE
    page.reload()
    page.locator(f"[data-testid=feed] .card[data-id='{mid}']").wait_for()
    card_text = page.locator(f"[data-testid=feed] .card[data-id='{mid}']").inner_text()
    assert XSS_IMG in card_text and XSS_SCRIPT in card_text
    page.click("a[data-view='search']")
    page.fill("[data-testid=search-input]", "payloads")
    page.click("[data-testid=search-button]")
    page.locator("[data-testid=results] .card").first.click()
    page.locator("[data-testid=detail]").wait_for(state="visible")
    assert page.inner_text("[data-testid=detail-content]") == payload
    assert page.inner_text("#detail-title") == f"title {XSS_IMG}"
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src='x']").count() == 0
    assert page.locator("main script, dialog script").count() == 0
    assert page.errors == []


def test_bidi_and_control_characters_show_as_escapes(page: Any, server: LiveServer) -> None:
    # "invoice_\u202efdp.exe" (RIGHT-TO-LEFT OVERRIDE) showed as "invoice_exe.pdf".
    title = "invoice_\u202efdp.exe"
    content = "open \u2066it\u2069 now\x7f red\x85end"  # (no C0 control is stored)
    mid = server.memory.save(content, project="billing", title=title, tags=["a\u202eb"]).id
    card = page.locator(f"[data-testid=feed] .card[data-id='{mid}']")
    card.wait_for(timeout=10_000)
    assert card.locator(".card-title").inner_text() == "invoice_\\u202efdp.exe"
    assert "\\u2066it\\u2069" in card.locator(".card-body").inner_text()
    card.click()
    page.locator("[data-testid=detail]").wait_for(state="visible")
    assert page.inner_text("#detail-title") == "invoice_\\u202efdp.exe"
    assert page.inner_text("[data-testid=detail-content]") == (
        "open \\u2066it\\u2069 now\\x7f red\\x85end"
    )
    assert "a\\u202eb" in page.inner_text("#detail-meta")
    # No character on the page reorders or acts: every one is shown as its escape.
    acting = page.evaluate(
        r"() => /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/"
        ".test(document.body.textContent)"
    )
    assert acting is False
    isolated = page.evaluate(
        "() => ['.card-title', '.card-body', '#detail-title', '#detail-content', '.meta dd']"
        ".map((s) => getComputedStyle(document.querySelector(s)).unicodeBidi)"
    )
    assert set(isolated) == {"isolate"}
    # The edit form holds the text as stored: saving it unchanged changes nothing.
    assert page.input_value("#edit-title") == title
    assert page.errors == []


def test_the_dashboard_shows_text_as_the_cli_does(page: Any) -> None:
    """One rule: dom.js's shown() and the CLI's printable() agree on every character
    of the first planes (the dashboard gets the class from memlane.text)."""
    from memlane.cli.terminal import printable

    sample = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c < 0xE000)
    shown = page.evaluate("async (text) => (await import('/static/js/dom.js')).shown(text)", sample)
    assert shown == printable(sample)


def test_right_to_left_text_cannot_reorder_what_is_around_it(page: Any, server: LiveServer) -> None:
    # In one line, "<hebrew> · 007 · started …" put 007 before the Hebrew (a number after
    # right-to-left text joins its run); each stored value is isolated now.
    server.memory.session_start("\u05e9\u05dc\u05d5\u05dd", project="web", agent="007")
    page.click("a[data-view='sessions']")
    page.locator("#sessions li").first.click()
    line = page.locator("#session-detail p.muted").first
    line.wait_for()
    order = line.evaluate(
        """(p) => {
          const at = (needle) => {
            const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              const i = node.data.indexOf(needle);
              if (i < 0) continue;
              const range = document.createRange();
              range.setStart(node, i);
              range.setEnd(node, i + needle.length);
              return range.getBoundingClientRect().left;
            }
            return null;
          };
          return [at("\u05e9\u05dc\u05d5\u05dd"), at("007"), at("started")];
        }"""
    )
    assert None not in order and order == sorted(order), order
    assert page.errors == []


def test_sessions_stats_and_screenshot(page: Any, server: LiveServer) -> None:
    memory = server.memory
    _seed(memory)
    memory.session_start("s-demo-1", project="web", agent="claude-code")
    memory.save("Edited src/layout.css", project="web", type="file-write", session_id="s-demo-1")
    memory.refresh_summary("s-demo-1")
    page.reload()
    # Two loads racing (a click while the page still starts up) must not duplicate rows.
    page.evaluate(
        "() => { location.hash = '#/sessions';"
        " window.dispatchEvent(new HashChangeEvent('hashchange')); }"
    )
    page.locator("#sessions li", has_text="s-demo-1").wait_for()
    page.wait_for_timeout(300)
    assert page.locator("#sessions li").count() == 1
    page.locator("#sessions li", has_text="s-demo-1").click()
    page.locator("#session-detail .timeline li").first.wait_for()
    detail = page.inner_text("#session-detail")
    assert "Summary (auto-generated)" in detail
    assert "Edited src/layout.css" in detail
    page.click("a[data-view='stats']")
    page.locator("#chart-types svg rect").first.wait_for()
    cards = page.inner_text("#stat-cards")
    assert re.search(r"\b4\s+memories", cards), cards
    assert page.locator("#chart-projects svg text", has_text="shop").count() == 1
    page.select_option("[data-testid=project-switcher]", "shop")
    page.click("a[data-view='feed']")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=feed] .card').length === 1"
    )
    page.select_option("[data-testid=project-switcher]", "")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=feed] .card').length === 4"
    )
    assert page.errors == []


def test_demo_data_screenshots(page: Any, server: LiveServer) -> None:
    """The dashboard over the demo data; screenshots land in test-artifacts/."""
    report = server.memory.import_jsonl(str(DEMO))
    assert report.created > 10 and not report.errors
    page.reload()
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=feed] .card').length > 10"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"))
    page.click("a[data-view='sessions']")
    page.locator("#sessions li").first.click()
    page.locator("#session-detail .timeline li").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "dashboard-sessions.png"))
    page.click("a[data-view='stats']")
    page.locator("#chart-projects svg rect").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "dashboard-stats.png"), full_page=True)
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000
    assert page.errors == []


def test_without_sign_in_the_page_says_how(browser: Any, server: LiveServer) -> None:
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(server.base_url + "/")
        tab.locator("#signin").wait_for(state="visible")
        assert "memlane dashboard" in tab.inner_text("#signin")
        assert tab.locator("#feed .card").count() == 0
    finally:
        context.close()


def test_live_card_survives_a_slow_feed_load(page: Any, server: LiveServer) -> None:
    held: list[Any] = []
    recent = re.compile(r"/api/observations\?")
    page.route(recent, lambda route: held.append(route))  # hold the feed's first load
    page.reload()
    page.wait_for_selector("#live[data-state='on']")
    while not held:
        page.wait_for_timeout(50)
    answer = held[0].fetch()  # the feed's answer from before the new row exists
    server.memory.save("arrived while the feed was still loading", project="p")
    card = page.locator("[data-testid=feed] .card", has_text="arrived while the feed")
    card.wait_for(timeout=10_000)
    held[0].fulfill(response=answer)
    page.unroute(recent)
    page.wait_for_timeout(500)  # the late answer is rendered; the live card must stay
    assert card.count() == 1
    assert page.errors == []


def test_sessions_are_listed_by_their_task_or_first_prompt(page: Any, server: LiveServer) -> None:
    from memlane.models import Summary

    memory = server.memory
    memory.session_start("s-prompted", project="web", agent="claude-code")
    memory.record_prompt("s-prompted", "make the invoice table sortable", project="web")
    memory.record_prompt("s-prompted", "now add paging", project="web")
    memory.session_start("s-summarized", project="web", agent="claude-code")
    memory.record_prompt("s-summarized", "hi", project="web")
    memory.save_summary(
        Summary(
            session_id="s-summarized",
            project="web",
            is_auto_generated=True,
            request="migrate billing to the new ledger",
        )
    )
    memory.session_start("s-silent", project="web", agent="claude-code")
    page.click("a[data-view='sessions']")
    page.locator("#sessions li", has_text="s-silent").wait_for()
    rows = {
        sid: page.inner_text(f"#sessions li[data-sid='{sid}'] .session-title")
        for sid in ("s-prompted", "s-summarized", "s-silent")
    }
    assert rows == {
        "s-prompted": "make the invoice table sortable",
        "s-summarized": "migrate billing to the new ledger",
        "s-silent": "no prompt yet",
    }
    assert page.errors == []


def test_a_session_whose_id_holds_a_slash_or_dots_opens(page: Any, server: LiveServer) -> None:
    # Ids from `import jsonl` and `save --session`: "team/alice" was "Cannot load session:
    # Not Found"; ".." is what a browser removes from a URL path, even as %2E%2E.
    memory = server.memory
    for sid in ("team/alice", ".."):
        memory.session_start(sid, project="web", agent="claude-code")
        memory.save(f"work done in {sid}", project="web", session_id=sid)
    page.click("a[data-view='sessions']")
    for sid in ("team/alice", ".."):
        page.locator(f"#sessions li[data-sid='{sid}']").click()
        page.locator("#session-detail .timeline li", has_text=f"work done in {sid}").wait_for()
        detail = page.inner_text("#session-detail")
        assert "Cannot load" not in detail and sid in detail
    assert page.errors == []


def test_signed_out_the_page_shows_only_how_to_sign_in(browser: Any, server: LiveServer) -> None:
    server.memory.save("a memory that must not show", project="p")
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(server.base_url + "/")
        tab.locator("#signin").wait_for(state="visible")
        tab.wait_for_function("() => document.body.dataset.auth === 'out'")
        assert "memlane dashboard" in tab.inner_text("#signin")
        assert "Not signed in." in tab.inner_text("#signin")
        assert "session has ended" not in tab.inner_text("#signin")  # never was signed in
        visible = tab.inner_text("body")
        assert "Nothing yet" not in visible and "Live feed" not in visible
        for selector in ("main", "nav.tabs", ".tools"):
            assert not tab.locator(selector).is_visible(), selector
        tab.wait_for_timeout(300)
        assert tab.locator("#live[data-state='on']").count() == 0  # no live feed opened
    finally:
        context.close()


def test_after_a_worker_restart_the_page_says_to_sign_in_again(
    page: Any, server: LiveServer
) -> None:
    """The cookie dies with the worker run that handed it out: when the next worker comes
    up on the port, the open page's live feed is refused and the page says what to do."""
    assert page.inner_text("#live") == "live"
    server.stop()
    page.wait_for_function("() => document.querySelector('#live').dataset.state === 'off'")
    restarted = LiveServer(server.memory, port=server.port).start()
    try:
        page.locator("#signin").wait_for(state="visible", timeout=30_000)
        page.wait_for_function("() => document.body.dataset.auth === 'out'")
        notice = page.inner_text("#signin")
        assert "Signed out." in notice and "session has ended" in notice
        assert "memlane dashboard" in notice
        assert not page.locator("main").is_visible()
        page.goto(restarted.login_url())  # signing in again works
        page.wait_for_selector("#live[data-state='on']")
        assert page.evaluate("() => document.body.dataset.auth") != "out"
    finally:
        restarted.stop()


def test_an_expired_sign_in_link_gets_the_styled_page(browser: Any, server: LiveServer) -> None:
    url = server.login_url()
    context = browser.new_context()
    try:
        tab = context.new_page()
        assert tab.goto(url).status == 303 or tab.url.endswith("/")  # first use signs in
        second = context.new_page()
        response = second.goto(url)  # a used link: expired
        assert response.status == 403
        second.locator("[data-testid=expired]").wait_for()
        assert "memlane dashboard" in second.inner_text("[data-testid=expired]")
        background = second.evaluate(
            "() => getComputedStyle(document.querySelector('.notice')).backgroundColor"
        )
        assert background == "rgb(255, 244, 230)"  # the dashboard's stylesheet applied
    finally:
        context.close()


def test_the_private_sign_in_page_signs_the_browser_in(
    browser: Any, server: LiveServer, settings: Settings
) -> None:
    """`memlane dashboard` gives the browser ``file://`` of a 0600 page that forwards to
    the one-time URL (never the URL on a command line): in a real browser the forward
    signs in, cookie and all, and the live feed opens."""
    from memlane.runtime import write_signin_page

    signin = write_signin_page(settings.paths, server.login_url())
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(signin.absolute().as_uri())
        tab.wait_for_selector("#live[data-state='on']")
        assert tab.url == server.base_url + "/"
        assert tab.evaluate("() => document.body.dataset.auth") != "out"
    finally:
        context.close()


@pytest.fixture
def other_port() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """Another local user's web server on another 127.0.0.1 port: its URL, and the headers
    of every request it got."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[dict[str, str]] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({k.lower(): v for k, v in self.headers.items()})
            body = b"<!doctype html><title>elsewhere</title><p>nothing here</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    listener = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.server_address[1]}/", seen
    listener.shutdown()
    listener.server_close()
    thread.join(10)


def test_another_ports_server_gets_the_cookie_and_can_do_nothing_with_it(
    page: Any, server: LiveServer, other_port: tuple[str, list[dict[str, str]]]
) -> None:
    """Cookies belong to a host, not a port: a signed-in browser that opens any page on
    another 127.0.0.1 port sends that server the dashboard cookie. Replayed with our
    Origin, it searched, wrote and made sign-in links; without the tab's session key
    (kept by our origin's page only) it is refused."""
    assert page.url == server.base_url + "/"  # the key left the address bar
    url, seen = other_port
    elsewhere = page.context.new_page()
    elsewhere.goto(url)
    cookie = seen[-1].get("cookie", "")
    assert cookie.startswith("memlane_session_"), seen  # what a browser does
    assert not any("x-memlane-session" in headers for headers in seen)
    elsewhere.close()
    replay = {"Cookie": cookie, "Origin": server.origin}
    base = server.base_url
    assert httpx.get(base + "/api/search?q=x", headers=replay).status_code == 401
    assert httpx.post(base + "/api/dashboard/login", headers=replay).status_code == 401
    planted = {"content": "planted by another user", "project": "p"}
    assert httpx.post(base + "/api/knowledge", json=planted, headers=replay).status_code == 401
    assert server.memory.stats().memories == 0
    page.reload()  # the signed-in tab is still signed in
    page.wait_for_selector("#live[data-state='on']")
    assert page.evaluate("() => document.body.dataset.auth") != "out"
    assert page.errors == []


def test_a_tab_stays_signed_in_across_reloads_and_a_new_tab_signs_in_anew(
    page: Any, server: LiveServer
) -> None:
    """The session key lives in the tab's sessionStorage: a reload keeps the live feed and
    the writes working; another tab has the cookie only and says how to sign in."""
    page.reload()
    page.wait_for_selector("#live[data-state='on']")
    mid = server.memory.save("arrives live after a reload", project="p").id
    card = page.locator(f"[data-testid=feed] .card[data-id='{mid}']")
    card.wait_for(timeout=10_000)
    card.click()
    page.locator("[data-testid=detail]").wait_for(state="visible")
    page.click("[data-testid=edit]")
    page.fill("[data-testid=edit-content]", "edited after a reload")
    page.click("[data-testid=save]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=detail-content]')"
        ".textContent.includes('edited after')"
    )
    assert server.memory.get(mid).content == "edited after a reload"
    other = page.context.new_page()
    other.goto(server.base_url + "/")
    other.locator("#signin").wait_for(state="visible")
    other.wait_for_function("() => document.body.dataset.auth === 'out'")
    assert "Not signed in." in other.inner_text("#signin")
    assert "memlane dashboard" in other.inner_text("#signin")
    assert other.locator("#feed .card").count() == 0
    # Signed in there too, from a new link: the first tab stays signed in.
    other.goto(server.login_url())
    other.wait_for_selector("#live[data-state='on']")
    late = server.memory.save("arrives in both tabs", project="p").id
    for tab in (page, other):
        tab.locator(f"[data-testid=feed] .card[data-id='{late}']").wait_for(timeout=10_000)
    page.reload()
    page.wait_for_selector("#live[data-state='on']")
    assert page.evaluate("() => document.body.dataset.auth") != "out"
    other.close()
    assert page.errors == []


@pytest.mark.parametrize("width", [360, 600])
def test_narrow_screens_keep_the_nav_on_one_line(
    browser: Any, server: LiveServer, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 740})
    try:
        tab = context.new_page()
        tab.goto(server.login_url())
        tab.wait_for_selector("#live[data-state='on']")
        boxes = tab.evaluate(
            "() => [...document.querySelectorAll('.tabs a')].map((a) => {"
            " const r = a.getBoundingClientRect();"
            " return {top: r.top, height: r.height,"
            "         line: parseFloat(getComputedStyle(a).lineHeight) || 20}; })"
        )
        assert len(boxes) == 4
        assert len({round(box["top"]) for box in boxes}) == 1, boxes  # one row
        assert all(box["height"] < 2 * box["line"] for box in boxes), boxes  # no label wraps
        assert tab.evaluate("() => document.documentElement.scrollWidth") <= width
    finally:
        context.close()
