"""The HTTP API against a real uvicorn server on 127.0.0.1: routes, security, errors."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from memlane.models import MAX_QUERY_CHARS, Checkpoint
from memlane.service import Memory
from memlane.worker.web.app import OPERATIONS
from tests.test_web_support import SESSION_HEADER, TOKEN, LiveServer, SSEReader

STATIC = Path(__file__).resolve().parents[1] / "src" / "memlane" / "worker" / "web" / "static"


def _error(response: httpx.Response, status: int, error: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["fields"], list)
    return body


# -- authentication -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/stats"),
        ("GET", "/api/search?q=x"),
        ("POST", "/api/observations"),
        ("POST", "/api/recall"),
        ("GET", "/api/events"),
        ("GET", "/api/openapi.json"),
        ("DELETE", "/api/observations/1"),
    ],
)
def test_api_needs_the_token(server: LiveServer, method: str, path: str) -> None:
    response = httpx.request(method, server.base_url + path, json={"content": "x"})
    _error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    wrong = httpx.request(
        method, server.base_url + path, headers={"Authorization": "Bearer nope"}, json={}
    )
    assert wrong.status_code == 401


def test_health_is_public_but_details_need_the_token(server: LiveServer) -> None:
    public = httpx.get(server.base_url + "/health").json()
    assert public["status"] == "ok"
    assert public["pid"] is None and public["db"] is None
    private = httpx.get(server.base_url + "/health", headers=server.auth()).json()
    assert private["pid"] == os.getpid()
    assert private["db"] == server.memory.store.location


def test_foreign_host_is_refused(server: LiveServer) -> None:
    for host in (
        "evil.example",
        f"evil.example:{server.port}",
        "127.0.0.1.nip.io",
        f"127.0.0.1:{server.port}.evil.example",
        "[::1]evil.example",
    ):
        response = httpx.get(
            server.base_url + "/api/stats", headers={**server.auth(), "Host": host}
        )
        _error(response, 403, "forbidden_host")
    page = httpx.get(server.base_url + "/", headers={"Host": "attacker.test"})
    assert page.status_code == 403
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", "localhost"):
        ok = httpx.get(server.base_url + "/api/stats", headers={**server.auth(), "Host": host})
        assert ok.status_code == 200, host


def test_foreign_origin_is_refused_on_writes(server: LiveServer, client: httpx.Client) -> None:
    body = {"content": "origin check", "project": "p"}
    for origin in ("http://evil.example", "null", f"http://evil.example:{server.port}",
                   "http://127.0.0.1:1"):  # fmt: skip
        response = client.post("/api/observations", json=body, headers={"Origin": origin})
        _error(response, 403, "forbidden_origin")
        assert "access-control-allow-origin" not in response.headers
    assert server.memory.stats().memories == 0
    own = client.post("/api/observations", json=body, headers={"Origin": server.origin})
    assert own.status_code == 201
    assert own.headers["access-control-allow-origin"] == server.origin


def test_cors_preflight_only_for_own_origin(server: LiveServer) -> None:
    url = server.base_url + "/api/observations"
    asked = {"Access-Control-Request-Method": "POST"}
    foreign = httpx.options(url, headers={**asked, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    assert "access-control-allow-origin" not in foreign.headers
    own = httpx.options(url, headers={**asked, "Origin": server.origin})
    assert own.status_code == 204
    assert own.headers["access-control-allow-origin"] == server.origin
    assert "PATCH" in own.headers["access-control-allow-methods"]


def test_one_time_login_sets_a_strict_httponly_cookie(server: LiveServer) -> None:
    url = server.login_url()
    assert url.startswith(server.base_url + "/auth?code=")
    first = httpx.get(url, follow_redirects=False)
    assert first.status_code == 303
    assert re.fullmatch(r"/#session=[0-9a-f]{64}", first.headers["location"])
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert "Max-Age=43200" in cookie  # a sign-in lasts 12 hours, in the browser too
    assert TOKEN not in cookie
    again = httpx.get(url, follow_redirects=False)
    assert again.status_code == 403
    assert "set-cookie" not in again.headers
    tab = {"Cookie": cookie.split(";")[0], SESSION_HEADER: first.headers["location"][10:]}
    assert httpx.get(server.base_url + "/api/stats", headers=tab).status_code == 200
    # Cookie and key never authorize a write without the browser's Origin.
    body = {"content": "from the dashboard", "project": "p"}
    bare = httpx.post(server.base_url + "/api/observations", json=body, headers=tab)
    _error(bare, 403, "forbidden_origin")
    ok = httpx.post(
        server.base_url + "/api/observations", json=body, headers={**tab, "Origin": server.origin}
    )
    assert ok.status_code == 201
    assert httpx.get(server.base_url + "/auth?code=made-up").status_code == 403


def test_the_dashboard_cookie_alone_authorizes_nothing(server: LiveServer) -> None:
    """Cookies belong to a host, not a port: the owner's browser sends the dashboard cookie
    to another local user's server on any other 127.0.0.1 port. That user, replaying it
    with our Origin, read, wrote and made sign-in links. The cookie now counts only with
    the tab's session key, which only our origin's page holds (sessionStorage)."""
    tab = server.sign_in()
    cookie_only = {"Cookie": tab["Cookie"], "Origin": server.origin}
    base = server.base_url
    for method, path in [("GET", "/api/stats"), ("GET", "/api/search?q=x"),
                         ("POST", "/api/dashboard/login"), ("GET", "/api/events")]:  # fmt: skip
        _error(httpx.request(method, base + path, headers=cookie_only), 401, "unauthorized")
    planted = {"content": "planted by another user", "project": "p"}
    write = httpx.post(base + "/api/observations", json=planted, headers=cookie_only)
    _error(write, 401, "unauthorized")
    assert httpx.get(base + "/health", headers=cookie_only).json()["pid"] is None
    key = tab[SESSION_HEADER]
    wrong_key = {**cookie_only, SESSION_HEADER: key[:-1] + ("1" if key[-1] == "0" else "0")}
    assert httpx.get(base + "/api/stats", headers=wrong_key).status_code == 401
    key_only = {SESSION_HEADER: key, "Origin": server.origin}
    assert httpx.get(base + "/api/stats", headers=key_only).status_code == 401
    other_tab = server.sign_in()  # another sign-in's key does not fit this cookie
    mixed = {**cookie_only, SESSION_HEADER: other_tab[SESSION_HEADER]}
    assert httpx.get(base + "/api/stats", headers=mixed).status_code == 401
    assert httpx.get(base + "/api/stats", headers=tab).status_code == 200
    assert httpx.get(base + "/health", headers=tab).json()["pid"] is not None
    assert server.memory.stats().memories == 0


def test_a_dashboard_cookie_dies_with_its_worker_run(memory: Memory) -> None:
    """A cookie handed out by one worker run is refused by the next one, on the same port
    with the same token: another user who took the port between the two and got the
    cookie from the open dashboard's reconnecting live feed can do nothing with it."""
    first = LiveServer(memory).start()
    try:
        jar = first.sign_in()
        assert httpx.get(first.base_url + "/api/stats", headers=jar).status_code == 200
    finally:
        first.stop()
    second = LiveServer(memory, port=first.port).start()
    try:
        url = second.base_url
        assert second.token == first.token
        refused = httpx.get(url + "/api/search?q=x", headers=jar)
        body = _error(refused, 401, "session_ended")
        assert "memlane dashboard" in body["message"]
        write = httpx.post(
            url + "/api/knowledge", json={"content": "planted", "project": "p", "type": "lesson"},
            headers={**jar, "Origin": second.origin},
        )  # fmt: skip
        _error(write, 401, "session_ended")
        login = httpx.post(url + "/api/dashboard/login", headers=jar)
        _error(login, 401, "session_ended")
        assert httpx.get(url + "/api/events", headers=jar).status_code == 401
        assert httpx.get(url + "/health", headers=jar).json()["pid"] is None
        # What the old cookie was: an HMAC of the token, the same in every run.
        derived = hmac.new(TOKEN.encode(), b"memlane-dashboard-cookie", hashlib.sha256)
        old = f"memlane_session={derived.hexdigest()}"
        assert httpx.get(url + "/api/stats", headers={"Cookie": old}).status_code == 401
        assert httpx.get(url + "/api/stats", headers=second.sign_in()).status_code == 200
    finally:
        second.stop()
    assert memory.stats().memories == 0


def test_an_expired_or_forged_dashboard_cookie_is_refused() -> None:
    from memlane.worker.web.security import DashboardSessions, SecurityPolicy

    now = [1_000_000.0]
    policy = SecurityPolicy(
        token=TOKEN, port=1, sessions=DashboardSessions(3600, clock=lambda: now[0])
    )
    header, key = policy.new_session()
    assert "Max-Age=3600;" in header
    value = header.split(";")[0].split("=", 1)[1]
    cookie = f"memlane_session={value}"
    assert policy.cookie_ok(cookie, key)
    assert policy.cookie_ok(f"theme=dark; memlane_session=nope; {cookie}", key)
    assert not policy.cookie_ok(cookie, "")
    now[0] += 3599
    assert policy.cookie_ok(cookie, key)
    now[0] += 1
    assert not policy.cookie_ok(cookie, key)  # expired
    now[0] -= 1800
    stamp, session_id, signature = value.split(".")
    flipped = signature[:-1] + ("1" if signature[-1] == "0" else "0")
    for forged in (
        f"{int(stamp) + 86400}.{session_id}.{signature}",  # a later expiry, the old signature
        f"{stamp}.{session_id}.{flipped}",
        f"{stamp}.{session_id[::-1]}.{signature}",
        f"{stamp}.{signature}",
        signature,
        f"{stamp}.{session_id}.",
        f"\u00b2.{session_id}.{signature}",
        key,  # the tab's key is no cookie
        f"{stamp}.{key}",
        "",
    ):
        assert not policy.cookie_ok(f"memlane_session={forged}", key), forged
    other_run = SecurityPolicy(
        token=TOKEN, port=1, sessions=DashboardSessions(3600, clock=lambda: now[0])
    )
    assert not other_run.cookie_ok(cookie, key)


def test_the_live_feed_of_a_dashboard_ends_with_its_sign_in(memory: Memory) -> None:
    """An open stream keeps the worker from idling out, so a dashboard's stream ends when
    its sign-in does; the reconnect is refused and the page says to sign in again."""
    server = LiveServer(memory, session_ttl=3, heartbeat=0.5).start()
    try:
        jar = server.sign_in()
        reader = SSEReader(server, dashboard=jar)
        assert reader.status == 200
        reader.thread.join(timeout=30)  # a safety net: the stream ends after 3 s
        assert not reader.thread.is_alive(), "the stream outlived the sign-in"
        reader.close()
        bearer = SSEReader(server)  # a program's stream has no such end
        assert bearer.status == 200
        assert bearer.comments.get(timeout=10).startswith("memlane live feed")
        bearer.close()
        assert httpx.get(server.base_url + "/api/events", headers=jar).status_code == 401
    finally:
        server.stop()


@pytest.mark.parametrize("path", ["/", "/api/stats", "/static/js/main.js", "/api/nope", "/auth"])
def test_security_headers_everywhere(server: LiveServer, path: str) -> None:
    response = httpx.get(server.base_url + path, headers=server.auth())
    headers = response.headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-frame-options"] == "DENY"


def test_dashboard_has_no_inline_script_and_never_writes_html() -> None:
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag, tag
    assert not re.search(r"<script\b[^>]*>\s*[^<\s]", html), "inline script body"
    assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"
    assert not re.search(r"\sstyle\s*=", html), "inline style"
    for script in (STATIC / "js").glob("*.js"):
        text = script.read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, f"{script.name} uses {sink}"
    assert "http://" not in html and "https://" not in html  # nothing from the network


# -- validation and limits ------------------------------------------------------------


def test_validation_errors_name_the_field(client: httpx.Client) -> None:
    cases = [
        ("POST", "/api/observations", {"content": ""}, "content"),
        ("POST", "/api/observations", {"content": "ok", "project": "p", "bogus": 1}, "bogus"),
        (
            "POST",
            "/api/observations",
            {"content": "ok", "project": "p", "tags": "notalist"},
            "tags",
        ),
        ("POST", "/api/recall", {"project": "p"}, "prompt"),
        ("POST", "/api/recall", {"prompt": "x", "project": "p", "limit": 0}, "limit"),
        ("POST", "/api/observations/batch", {"ids": []}, "ids"),
        ("PATCH", "/api/observations/1", {"content": 5}, "content"),
    ]
    for method, path, body, field in cases:
        response = client.request(method, path, json=body)
        err = _error(response, 422, "invalid_input")
        assert err["fields"][0]["field"] == field, (path, err)
        assert field in err["message"]
    bad_queries = [
        ("", "q"),
        ("q=x&limit=0", "limit"),
        ("q=x&since=yesterdayish", "since"),
        ("q=x&scope=galaxy", "scope"),
        ("q=x&since=0001-01-01", "since"),
    ]
    for query, field in bad_queries:
        err = _error(client.get(f"/api/search?{query}"), 422, "invalid_input")
        assert err["fields"][0]["field"] == field
        assert "Value error" not in err["message"], err  # pydantic's prefix, not ours
    dated = _error(client.get("/api/search?q=x&since=yesterday"), 422, "invalid_input")
    assert dated["fields"][0]["message"].startswith("bad date 'yesterday'")
    # A bad value is quoted short, however long it is.
    for since in ("x" * 100, "x" * 50_000):
        err = _error(
            client.get("/api/search", params={"q": "x", "since": since}), 422, "invalid_input"
        )
        assert err["fields"][0]["field"] == "since" and len(err["message"]) < 300
    too_many = client.patch("/api/observations/1", json={"tags": ["t"] * 101})
    assert _error(too_many, 422, "invalid_input")["fields"][0]["field"] == "tags"
    broken = client.post(
        "/api/observations", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    err = _error(broken, 422, "invalid_input")
    assert err["fields"][0]["field"] is None


def test_a_body_escaping_a_lone_surrogate_is_read_as_the_cli_reads_it(
    client: httpx.Client, memory: Memory
) -> None:
    # "\\ud83d" is half an emoji: Python's json reads it, pydantic's parser refused it
    # (422 "unexpected end of hex escape"); the CLI, imports and MCP store U+FFFD.
    json_headers = {"Content-Type": "application/json"}
    body = b'{"content": "half \\ud83d emoji", "project": "p", "tags": ["\\udc00"]}'
    saved = client.post("/api/observations", content=body, headers=json_headers)
    assert saved.status_code == 201, saved.text
    stored = memory.get(saved.json()["id"])
    assert stored.content == "half \ufffd emoji" and stored.tags == ("\ufffd",)
    patched = client.patch(
        f"/api/observations/{stored.id}", content=b'{"title": "t \\ud83d"}', headers=json_headers
    )
    assert patched.status_code == 200 and patched.json()["title"] == "t \ufffd"
    # Repaired, the body is checked as any other: the error names the field.
    recall = b'{"prompt": "\\ud83d", "project": "p", "limit": 0}'
    refused = client.post("/api/recall", content=recall, headers=json_headers)
    assert _error(refused, 422, "invalid_input")["fields"][0]["field"] == "limit"


def test_domain_errors_map_to_statuses(client: httpx.Client) -> None:
    missing = _error(client.get("/api/observations/999999"), 404, "not_found")
    assert "999999" in missing["message"]
    _error(client.get("/api/sessions/nope"), 404, "not_found")
    _error(client.get("/api/report?start=2026-01-02&end=2026-01-01"), 422, "invalid_input")
    _error(client.get("/api/no-such-route"), 404, "not_found")
    # Privacy filtering can leave nothing: the facade's InvalidInput becomes a 422.
    _error(
        client.post("/api/observations", json={"content": "<private>x</private>", "project": "p"}),
        422,
        "invalid_input",
    )


def test_body_size_limit(server: LiveServer, client: httpx.Client) -> None:
    big = json.dumps({"content": "x" * 1_100_000, "project": "p"})
    response = client.post(
        "/api/observations", content=big, headers={"Content-Type": "application/json"}
    )
    _error(response, 413, "body_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
        yield b'{"content": "'
        for _ in range(20):
            yield b"y" * 100_000
        yield b'"}'

    streamed = client.post(
        "/api/observations", content=chunks(), headers={"Content-Type": "application/json"}
    )
    _error(streamed, 413, "body_too_large")
    assert server.memory.stats().memories == 0


def test_rate_limits_answer_429_with_retry_after(memory: Memory) -> None:
    live = LiveServer(memory, rate_per_minute=8, write_rate_per_minute=3).start()
    try:
        with httpx.Client(base_url=live.base_url, headers=live.auth()) as c:
            writes = [
                c.post("/api/observations", json={"content": f"w{i}", "project": "p"})
                for i in range(4)
            ]
            assert [w.status_code for w in writes[:3]] == [201, 201, 201]
            limited = _error(writes[3], 429, "rate_limited")
            assert limited["message"]
            assert int(writes[3].headers["retry-after"]) >= 1
            reads = [c.get("/api/stats").status_code for _ in range(6)]
            assert 429 in reads
            assert set(reads) <= {200, 429}
        assert memory.stats().memories == 3
    finally:
        live.stop()


# -- routes over the facade -----------------------------------------------------------


def test_observation_crud_roundtrip(server: LiveServer, client: httpx.Client) -> None:
    created = client.post(
        "/api/observations",
        json={"content": "The deploy script needs AWS_REGION", "project": "ops",
              "type": "discovery", "title": "deploy env", "tags": ["deploy"]},
    )  # fmt: skip
    assert created.status_code == 201
    saved = created.json()
    assert saved["status"] == "created"
    again = client.post(
        "/api/observations", json={"content": "The deploy script needs AWS_REGION",
                                   "project": "ops", "type": "discovery"},
    )  # fmt: skip
    assert again.status_code == 200 and again.json()["status"] == "deduplicated"
    mid = saved["id"]
    got = client.get(f"/api/observations/{mid}").json()
    assert got["content"] == "The deploy script needs AWS_REGION"
    assert got["kind"] == "knowledge" and got["tags"] == ["deploy"]
    assert "normalized_hash" not in got
    patched = client.patch(
        f"/api/observations/{mid}", json={"content": "needs AWS_REGION=eu-west-1"}
    )
    assert patched.status_code == 200
    assert patched.json()["revision_count"] == 1
    assert server.memory.get(mid).content == "needs AWS_REGION=eu-west-1"
    preview = client.delete(f"/api/observations/{mid}", params={"dry_run": "true"})
    assert preview.json() == {"deleted": [], "would_delete": [mid], "dry_run": True}  # as MCP's
    assert server.memory.get(mid).id == mid
    removed = client.delete(f"/api/observations/{mid}").json()
    assert removed == {"deleted": [mid], "would_delete": [], "dry_run": False}
    _error(client.get(f"/api/observations/{mid}"), 404, "not_found")


def test_knowledge_batch_search_and_hybrid(client: httpx.Client) -> None:
    ids = []
    for text in ("Use pgbouncer in transaction mode", "Redis keys expire after one hour"):
        body = {"content": text, "project": "api", "type": "decision"}
        response = client.post("/api/knowledge", json=body)
        assert response.status_code == 201
        ids.append(response.json()["id"])
    batch = client.post("/api/observations/batch", json={"ids": [*ids, 424242]}).json()
    assert sorted(m["id"] for m in batch["memories"]) == sorted(ids)
    assert all(m["kind"] == "knowledge" for m in batch["memories"])
    for path in ("/api/search", "/api/hybrid-search"):
        hits = client.get(path, params={"q": "pgbouncer", "project": "api"}).json()["hits"]
        assert [h["id"] for h in hits] == [ids[0]]
        assert set(hits[0]) >= {"id", "project", "kind", "type", "title", "content", "score"}
    other = client.get("/api/search", params={"q": "pgbouncer", "project": "elsewhere",
                                               "scope": "project"}).json()  # fmt: skip
    assert other["hits"] == []
    listed = client.get("/api/observations", params={"project": "api", "kind": "knowledge"})
    assert len(listed.json()["memories"]) == 2


def test_recall_answers_a_prompt(client: httpx.Client) -> None:
    client.post("/api/knowledge", json={"content": "Run migrations with alembic upgrade head",
                                        "project": "shop", "type": "lesson"})  # fmt: skip
    payload = {"prompt": "how do I run migrations", "project": "shop", "session_id": "s1"}
    response = client.post("/api/recall", json=payload)
    hits = response.json()["hits"]
    assert hits and "alembic" in hits[0]["content"]


def test_recall_returns_what_the_prompt_hook_injects(client: httpx.Client, memory: Memory) -> None:
    """POST /api/recall ("memories worth injecting for a prompt") skipped the hook's
    selection (memlane.search.selection) and the session it was given: a memory of the
    asking session came back into it, where the hook injects nothing."""
    memory.save("Run migrations with alembic upgrade head", project="shop", session_id="s1")
    asked = {"prompt": "how do I run migrations", "project": "shop"}
    own = client.post("/api/recall", json={**asked, "session_id": "s1"}).json()["hits"]
    other = client.post("/api/recall", json={**asked, "session_id": "s2"}).json()["hits"]
    assert own == [] and "alembic" in other[0]["content"]
    _hits, chosen = memory.prompt_recall(asked["prompt"], project="shop", session_id="s2")
    assert [hit["id"] for hit in other] == [hit.id for hit in chosen]


def test_recall_answers_only_a_prompt_the_hook_recalls_for(
    client: httpx.Client, memory: Memory
) -> None:
    """The hook recalls nothing for a slash command or "ok", recalls for the prompt with
    its private parts removed and clipped to MAX_QUERY_CHARS; POST /api/recall searched the
    raw prompt: hits for "/deploy …" and for the words of a private block."""
    memory.save("The deploy pipeline runs alembic migrations first", project="shop")
    asked = {"project": "shop", "session_id": "s2"}
    hits = client.post(
        "/api/recall", json={**asked, "prompt": "deploy pipeline alembic migrations"}
    )
    assert "alembic" in hits.json()["hits"][0]["content"], hits.text
    for prompt in (
        "/deploy pipeline alembic migrations",
        "ok",
        "<private>deploy pipeline alembic migrations</private> ok",
    ):
        response = client.post("/api/recall", json={**asked, "prompt": prompt})
        assert response.status_code == 200 and response.json()["hits"] == [], (
            prompt,
            response.text,
        )
    long_prompt = "deploy pipeline alembic migrations " + "x" * MAX_QUERY_CHARS
    clipped = client.post("/api/recall", json={**asked, "prompt": long_prompt})
    assert clipped.status_code == 200 and "alembic" in clipped.json()["hits"][0]["content"]


def test_recall_limit_is_how_many_the_caller_gets_above_recall_limit(
    client: httpx.Client, memory: Memory
) -> None:
    """``limit`` above ``recall_limit`` was cut to ``recall_limit`` (the hook's selection
    stopped there), although the caller asked for more."""
    memory.settings = replace(memory.settings, recall_limit=1)
    for text in (
        "Staging deploys run alembic migrations before the web containers start",
        "The billing service keeps its alembic migrations in db/versions, one per release",
        "Rolling back alembic migrations on production needs the DBA on call",
    ):
        memory.save(text, project="shop")
    asked = {"prompt": "alembic migrations", "project": "shop"}
    assert len(client.post("/api/recall", json=asked).json()["hits"]) == 1
    hits = client.post("/api/recall", json={**asked, "limit": 3}).json()["hits"]
    assert len(hits) == 3 and all("alembic" in hit["content"] for hit in hits), hits
    assert len(client.post("/api/recall", json={**asked, "limit": 2}).json()["hits"]) == 2


def test_sessions_summaries_checkpoints_timeline(server: LiveServer, client: httpx.Client) -> None:
    memory = server.memory
    memory.session_start("sess-1", project="web", agent="claude-code")
    memory.save("Edited src/app.tsx", project="web", type="file-write", session_id="sess-1")
    summary = client.post(
        "/api/summaries",
        json={"session_id": "sess-1", "request": "Fix the login form",
              "completed": ["validated the email field"], "next_steps": ["add tests"]},
    )  # fmt: skip
    assert summary.status_code == 201
    memory.save_checkpoint(
        Checkpoint(session_id="sess-1", project="web", task="Fix the login form",
                   progress=("email validated",), next_steps=("tests",))
    )  # fmt: skip
    sessions = client.get("/api/sessions", params={"project": "web"}).json()["sessions"]
    assert [s["id"] for s in sessions] == ["sess-1"]
    detail = client.get("/api/sessions/sess-1").json()
    # One title for a session wherever it is answered (the detail said null).
    assert sessions[0]["title"] == detail["session"]["title"] == "Fix the login form"
    by_query = client.get("/api/session", params={"session_id": "sess-1"}).json()
    assert by_query["session"]["title"] == "Fix the login form"
    assert detail["summary"]["request"] == "Fix the login form"
    assert detail["summary"]["is_auto_generated"] is False
    assert detail["checkpoint"]["task"] == "Fix the login form"
    by_session = client.get("/api/sessions/sess-1/checkpoint").json()["checkpoint"]
    latest = client.get("/api/checkpoint", params={"project": "web"}).json()["checkpoint"]
    assert by_session == latest and latest["progress"] == ["email validated"]
    assert client.get("/api/checkpoint", params={"project": "none"}).json() == {"checkpoint": None}
    timeline = client.get("/api/timeline", params={"session_id": "sess-1"}).json()["memories"]
    assert timeline[0]["kind"] == "observation"
    assert {"summary", "checkpoint"} <= {m["kind"] for m in timeline}
    unknown = {"session_id": "unknown", "request": "Fix the login form"}
    _error(client.post("/api/summaries", json=unknown), 404, "not_found")


def test_every_stored_session_id_opens(server: LiveServer, client: httpx.Client) -> None:
    # Ids come from `import jsonl` and `save --session`: "/" in one was a 404, and
    # x%2Fcheckpoint answered the checkpoint of session "x".
    memory = server.memory
    ids = ["team/alice", "x/checkpoint", "x", "..", ".", "a%2Fb", "s" * 1000]
    for sid in ids:
        memory.session_start(sid, project="team/web", agent="test")
    memory.save_checkpoint(Checkpoint(session_id="x", project="team/web", task="x's task"))
    for sid in ids:
        detail = client.get("/api/session", params={"session_id": sid})
        assert detail.status_code == 200, (sid, detail.text)
        assert detail.json()["session"]["id"] == sid
        timeline = client.get("/api/timeline", params={"session_id": sid})
        assert timeline.status_code == 200, (sid, timeline.text)
    by_path = client.get("/api/sessions/team%2Falice")
    assert by_path.status_code == 200 and by_path.json()["session"]["id"] == "team/alice"
    assert client.get("/api/sessions/x%2Fcheckpoint").json()["session"]["id"] == "x/checkpoint"
    assert client.get("/api/sessions/a%252Fb").json()["session"]["id"] == "a%2Fb"
    nested = client.get("/api/sessions/x%2Fcheckpoint/checkpoint").json()
    assert nested == {"checkpoint": None}  # x/checkpoint has none; x has one
    assert client.get("/api/sessions/x/checkpoint").json()["checkpoint"]["task"] == "x's task"
    assert client.get("/api/context/team%2Fweb").json()["project"] == "team/web"
    missing = _error(client.get("/api/sessions/" + "n" * 50_000), 404, "not_found")
    assert len(missing["message"]) < 300
    _error(client.get("/api/session"), 422, "invalid_input")


def test_context_report_stats_and_embeddings(client: httpx.Client, memory: Memory) -> None:
    memory.save("Decision: money is stored as integer cents", project="billing", type="decision")
    ctx = client.get("/api/context/billing").json()
    assert ctx["project"] == "billing" and "integer cents" in ctx["text"]
    assert client.get("/api/context/empty-project").json()["text"] == ""
    report = client.get("/api/report", params={"start": "1d"}).json()
    assert report["memories"] == 1 and report["projects"] == {"billing": 1}
    stats = client.get("/api/stats").json()
    assert stats["memories"] == 1 and stats["projects"] == {"billing": 1}
    emb = client.get("/api/embeddings/stats").json()
    assert emb["state"] == "off" and emb["pending"] == 1


def test_the_context_pack_takes_no_session_id(client: httpx.Client) -> None:
    """GET /api/context took a session id and used it nowhere (the pack is the project's,
    as MCP get_context gives it): the API document listed it, and a blank one was a 422.
    Now it is not listed, and refused as any parameter a route does not take."""
    doc = client.get("/api/openapi.json").json()
    listed = doc["paths"]["/api/context/{project}"]["get"]["parameters"]
    assert {p["name"] for p in listed} == {"project", "budget"}
    refused = client.get("/api/context/p1", params={"session_id": "s1"})
    assert refused.status_code == 422
    assert refused.json()["fields"][0]["field"] == "session_id"


def test_no_response_leaks_the_internal_hash(client: httpx.Client, memory: Memory) -> None:
    mid = memory.save("hash must stay inside", project="p").id
    for path in (f"/api/observations/{mid}", "/api/search?q=hash", "/api/observations",
                 "/api/timeline", "/api/openapi.json"):  # fmt: skip
        assert "normalized_hash" not in client.get(path).text, path


# -- OpenAPI --------------------------------------------------------------------------


def test_openapi_describes_every_route(client: httpx.Client) -> None:
    doc = client.get("/api/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    for op in OPERATIONS:
        path = re.sub(r"{(\w+)(:\w+)?}", r"{\1}", op.path)
        entry = doc["paths"][path][op.method.lower()]
        assert ("401" in entry["responses"]) is not op.public
        if op.body is not None:
            ref = entry["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            assert ref.endswith("/" + op.body.__name__)
    schemas = doc["components"]["schemas"]
    refs = re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(doc))
    assert refs and all(name in schemas for name in refs)
    search = doc["paths"]["/api/search"]["get"]["parameters"]
    q = next(p for p in search if p["name"] == "q")
    assert q["required"] is True and q["schema"]["type"] == "string"
    assert "MemoryOut" in schemas and "normalized_hash" not in json.dumps(schemas)


def test_mcp_is_served_behind_the_same_guard(memory: Memory) -> None:
    live = LiveServer(memory, mount_mcp=True).start()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        for path in ("/mcp", "/mcp/"):
            # No time limit of the client's (5 s): a loaded machine's first MCP request
            # (the SDK's session set-up) may take longer; the test is about the guard.
            ok = httpx.post(
                live.base_url + path,
                json=init,
                headers={**live.auth(), **accept},
                timeout=None,
            )
            assert ok.status_code == 200, ok.text
            assert '"result"' in ok.text and '"capabilities"' in ok.text
        _error(httpx.post(live.base_url + "/mcp", json=init, headers=accept), 401, "unauthorized")
        foreign = httpx.post(
            live.base_url + "/mcp",
            json=init,
            headers={**live.auth(), **accept, "Origin": "http://evil.example"},
        )
        _error(foreign, 403, "forbidden_origin")
    finally:
        live.stop()


def test_recall_queued_too_long_is_refused_at_once(memory: Memory) -> None:
    memory.save("Use alembic for migrations", project="shop")
    live = LiveServer(memory, recall_queue_limit=0.0).start()  # every request is "late"
    try:
        response = httpx.post(
            live.base_url + "/api/recall",
            json={"prompt": "alembic migrations", "project": "shop"},
            headers=live.auth(),
        )
        _error(response, 503, "busy")
        assert response.headers["retry-after"] == "1"
    finally:
        live.stop()


def test_token_bucket_burst_and_refill() -> None:
    from memlane.worker.web.security import RateLimiter, burst_for

    assert burst_for(200) == 50 and burst_for(60) == 15 and burst_for(8) == 8
    limiter = RateLimiter(200)
    allowed = [limiter.check("c", now=100.0) for _ in range(51)]
    assert allowed[:50] == [0.0] * 50
    assert allowed[50] == pytest.approx(0.3)  # one token every 60/200 s
    assert limiter.check("other", now=100.0) == 0.0  # per client
    assert limiter.check("c", now=100.31) == 0.0
    assert RateLimiter(0).check("c") == 0.0  # 0 turns limiting off


def test_identical_topic_key_resave_is_deduplicated(client: httpx.Client) -> None:
    body = {"content": "Use UUIDv7 ids", "project": "p", "type": "decision", "topic_key": "ids"}
    first = client.post("/api/knowledge", json={**body, "session_id": "s1"})
    again = client.post("/api/knowledge", json={**body, "session_id": "s2"})
    assert (first.status_code, again.status_code) == (201, 200)
    memory_id = first.json()["id"]
    assert again.json()["status"] == "deduplicated" and again.json()["id"] == memory_id
    stored = client.get(f"/api/observations/{memory_id}").json()
    assert (stored["revision_count"], stored["session_id"]) == (0, "s1")


def test_resave_as_another_type_says_the_kept_type(client: httpx.Client) -> None:
    """The same text as another type is deduplicated onto the stored memory, whose type
    stays; the answer says so as the CLI does (it said only "deduplicated")."""
    body = {"content": "Retry the upload twice", "project": "p"}
    first = client.post("/api/knowledge", json={**body, "type": "decision"}).json()
    again = client.post("/api/knowledge", json={**body, "type": "lesson"})
    assert again.status_code == 200
    answer = again.json()
    assert (answer["status"], answer["id"], answer["kept_type"]) == (
        "deduplicated", first["id"], "decision"
    )  # fmt: skip
    assert answer["notice"] == (
        f"#{first['id']} holds this text already, as type 'decision'; the type 'lesson' was"
        " not applied (an edit of the memory changes its type)"
    )  # no CLI command over HTTP
    assert first["kept_type"] is first["notice"] is None


def test_content_over_a_memory_is_refused_not_cut(client: httpx.Client, memory: Memory) -> None:
    # 70,000 characters were stored as their first 64,000, with 201 (probe D4); MCP refused.
    body = {"content": "h" * 70_000, "project": "p"}
    err = _error(client.post("/api/observations", json=body), 422, "invalid_input")
    assert "70,000 characters; a memory holds at most 64,000" in err["message"]
    saved = client.post("/api/observations", json={"content": "fits", "project": "p"})
    assert saved.status_code == 201
    edit = client.patch(f"/api/observations/{saved.json()['id']}", json={"content": "e" * 64_001})
    _error(edit, 422, "invalid_input")
    assert [m.content for m in memory.iter_all(None)] == ["fits"]
    # One bound, the core's, said one way: the schema allowed 1,000,000 characters and
    # refused more in pydantic's words ("String should have at most 1000000 characters").
    huge = {"content": "h" * 1_000_001, "project": "p"}
    for response in (
        client.post("/api/observations", json=huge),
        client.patch(f"/api/observations/{saved.json()['id']}", json={"content": huge["content"]}),
    ):
        err = _error(response, 422, "invalid_input")
        assert "1,000,001 characters; a memory holds at most 64,000" in err["message"]
    # Blanks around a text that fits are not counted, as the core counts them.
    padded = client.post(
        "/api/observations", json={"content": "p" * 64_000 + "\n" * 9, "project": "p"}
    )
    assert padded.status_code == 201, padded.text
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["ObservationRequest"]
    assert schema["properties"]["content"]["maxLength"] == 64_000
