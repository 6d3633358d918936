"""Blank input refused alike by the CLI, HTTP and MCP: a text that must say something
(a summary's request, a search query, an agent, a session id, a tag) holding only blanks
or control characters is refused with one line, and nothing stored is replaced by it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from memlane.errors import InvalidInput, NothingToStore
from memlane.models import Summary
from memlane.service import Memory
from tests.conftest import one_line_error, run_memlane
from tests.test_mcp_server import err, ok, run

EMPTY_REQUEST = "the request is empty: say what the session set out to do"
BLANKS = ["", " ", "\u0000", " \t\u0000\u001b "]
TASK: dict[str, Any] = {
    "request": "Migrate billing to the new ledger",
    "completed": ["moved the invoices table"],
    "learned": ["the ledger wants cents"],
}


def test_mcp_a_blank_request_keeps_the_stored_summary(memory: Memory) -> None:
    async def body(client: Client) -> dict[str, Any]:
        await ok(client, "session_start", {"project": "p1"})
        created = await ok(client, "save_summary", {"project": "p1", **TASK})
        assert created["status"] == "created"
        for blank in BLANKS:
            said = await err(client, "save_summary", {"project": "p1", "request": blank})
            assert said.endswith(EMPTY_REQUEST), (blank, said)
        return await ok(client, "resume_session", {"project": "p1"})

    summary = run(memory, body)["summary"]
    assert summary["request"] == TASK["request"]
    assert summary["completed"] == TASK["completed"]
    assert summary["learned"] == TASK["learned"]


def test_http_a_blank_or_missing_request_keeps_the_stored_summary(
    client: httpx.Client,
) -> None:
    base = {"project": "p1", "session_id": "http-s1"}
    assert client.post("/api/summaries", json={**base, **TASK}).status_code == 201
    for blank in BLANKS:
        refused = client.post("/api/summaries", json={**base, "request": blank})
        assert refused.status_code == 422, refused.text
        assert refused.json()["message"].endswith(EMPTY_REQUEST), (blank, refused.text)
    missing = client.post("/api/summaries", json=base)
    assert missing.status_code == 422, missing.text
    detail = client.get("/api/sessions/http-s1").json()
    assert detail["session"]["title"] == TASK["request"]
    assert detail["summary"]["request"] == TASK["request"]
    assert detail["summary"]["completed"] == TASK["completed"]


def test_http_an_empty_session_is_none_and_a_blank_one_refused(client: httpx.Client) -> None:
    for body in (
        {"content": "in a session", "project": "p1", "session_id": "s1"},
        {"content": "in none", "project": "p1", "session_id": ""},
    ):
        assert client.post("/api/observations", json=body).status_code == 201
    for path in ("/api/timeline", "/api/observations"):
        empty = client.get(path, params={"project": "p1", "session_id": ""})
        assert empty.status_code == 200, (path, empty.text)
        found = sorted((m["content"], m["session_id"]) for m in empty.json()["memories"])
        assert found == [("in a session", "s1"), ("in none", None)], path
        for blank in (" ", "\u0001"):
            refused = client.get(path, params={"project": "p1", "session_id": blank})
            assert refused.status_code == 422, (path, blank, refused.text)
            assert "the session id is empty" in refused.json()["message"], refused.text
    assert client.get("/api/injections", params={"session_id": ""}).status_code == 200


def test_a_summary_request_is_required_and_bounded_alike_over_http_and_mcp(
    memory: Memory, client: httpx.Client
) -> None:
    """One field (schemas.SummaryTask) for both: MCP refused a request HTTP took
    (over 2,000 characters)."""
    from memlane.schemas import MAX_SUMMARY_REQUEST_CHARS

    long = "Migrate billing " + "x" * 4000
    too_long = "x" * (MAX_SUMMARY_REQUEST_CHARS + 1)
    base = {"project": "p1", "session_id": "http-s1"}
    assert client.post("/api/summaries", json={**base, "request": long}).status_code == 201
    refused = client.post("/api/summaries", json={**base, "request": too_long})
    assert refused.status_code == 422, refused.text
    assert client.post("/api/summaries", json=base).status_code == 422

    async def body(client: Client) -> None:
        await ok(client, "session_start", {"project": "p2", "session_id": "mcp-s1"})
        saved = await ok(client, "save_summary", {"project": "p2", "request": long})
        assert saved["status"] == "created"
        await err(client, "save_summary", {"project": "p2", "request": too_long})
        await err(client, "save_summary", {"project": "p2", "completed": ["a step"]})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = tools["save_summary"].input_schema
        assert "request" in schema["required"]
        assert schema["properties"]["request"]["maxLength"] == MAX_SUMMARY_REQUEST_CHARS

    run(memory, body)
    stored = memory.get_summary("mcp-s1")
    assert stored is not None and stored.request == long


def test_an_empty_summary_never_replaces_a_stored_one(memory: Memory) -> None:
    """The core's rule, for the rule-based summary too: one that says nothing once
    filtered is not stored, and the session keeps the summary it had."""
    memory.session_start("s1", project="p1")
    given = Summary(session_id="s1", project="p1", is_auto_generated=False, request=TASK["request"])
    memory.save_summary(given)
    for summary in (
        Summary(session_id="s1", project="p1", is_auto_generated=True),
        Summary(session_id="s1", project="p1", is_auto_generated=False, request="<private>x"),
    ):
        with pytest.raises(NothingToStore):
            memory.save_summary(summary)
    kept = memory.get_summary("s1")
    assert kept is not None and kept.request == TASK["request"]


def test_mcp_refuses_what_the_cli_refuses(memory: Memory) -> None:
    async def body(client: Client) -> None:
        saved = await ok(client, "save_observation", {"project": "p1", "content": "a note"})
        for blank in ("\u0000", " \u0001 "):
            query = await err(client, "search", {"project": "p1", "query": blank})
            assert query.endswith("the search query is empty"), (blank, query)
        for agent in (" ", "\u0000"):  # "" is the default name, as an omitted one
            said = await err(client, "session_start", {"project": "p1", "agent": agent})
            assert said.endswith("the agent is empty: name it or leave it out"), (agent, said)
        for blank in (" ", "\u0000"):
            said = await err(client, "timeline", {"project": "p1", "session_id": blank})
            assert "the session id is empty" in said, (blank, said)
        # "" is no session, as an omitted one: the project's timeline.
        empty = await ok(client, "timeline", {"project": "p1", "session_id": ""})
        assert [item["id"] for item in empty["items"]] == [saved["id"]]
        both = await err(client, "timeline", {"around": saved["id"], "start": "1d"})
        assert "not both" in both
        sessions = await ok(client, "stats")
        assert sessions["memories"] == 1

    run(memory, body)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--session", " \t"], "the session id is empty"),
        (["--topic-key", " "], "the topic key is blank"),
    ],
)
def test_cli_save_refuses_an_empty_value(home: Path, args: list[str], said: str) -> None:
    done = run_memlane(home, "--project", "p1", "save", "a note", *args)
    assert said in one_line_error(done, 2)
    listed = run_memlane(home, "--project", "p1", "timeline", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed


@pytest.mark.parametrize(
    "args", [["--tag", ""], ["--tag", " "], ["--tag", "\x01\x1b[31m"], ["--file", ""]]
)
def test_an_empty_tag_or_file_is_none(home: Path, args: list[str]) -> None:
    """An empty tag is no tag (as an empty topic key is no key): the note is saved
    without it, never with an empty tag or file."""
    done = run_memlane(home, "--project", "p1", "save", "a note", "--tag", "kept", *args)
    assert done.returncode == 0, done.stderr
    listed = run_memlane(home, "--project", "p1", "timeline", "--json")
    rows = json.loads(listed.stdout)
    assert [(r["tags"], r["files"]) for r in rows] == [(["kept"], [])], rows


def test_cli_an_empty_session_is_none_but_refused_by_delete_and_forget(home: Path) -> None:
    """An empty optional session id is "not given" (save, timeline) but never a deletion's:
    `delete --session "$SID" --yes` with SID unset would delete the whole project."""
    saved = run_memlane(home, "--project", "p1", "save", "a note", "--session", "s1")
    assert saved.returncode == 0, saved.stderr
    loose = run_memlane(home, "--project", "p1", "save", "a loose note", "--session", "")
    assert loose.returncode == 0, loose.stderr
    for command in (["delete", "--session", "", "--yes"], ["forget", "--session", "", "--yes"]):
        refused = run_memlane(home, "--project", "p1", *command)
        assert "the session id is empty" in one_line_error(refused, 2), command
    timeline = run_memlane(home, "--project", "p1", "timeline", "--session", "", "--json")
    assert timeline.returncode == 0, timeline.stderr
    rows = json.loads(timeline.stdout)
    assert sorted((r["content"], r["session_id"]) for r in rows) == [
        ("a loose note", None),
        ("a note", "s1"),
    ]
    blank = run_memlane(home, "--project", "p1", "timeline", "--session", " ")
    assert "the session id is empty" in one_line_error(blank, 2)
    both = run_memlane(home, "--project", "p1", "timeline", "--around", "1", "--start", "1d")
    assert "not both" in one_line_error(both, 2)
    kept = run_memlane(home, "--project", "p1", "timeline", "--session", "s1")
    assert kept.returncode == 0 and "a note" in kept.stdout, kept


def test_an_empty_topic_key_is_no_key_and_a_blank_one_is_refused() -> None:
    """An agent's tool call often fills an optional field with "": that is no key."""
    from memlane.errors import InvalidInput
    from memlane.memories import given_topic_key

    assert given_topic_key("") is None and given_topic_key(None) is None
    with pytest.raises(InvalidInput, match="blank"):
        given_topic_key(" \t")


def test_an_empty_session_id_is_none_for_recall_and_resume_and_a_blank_one_refused(
    memory: Memory, client: httpx.Client
) -> None:
    """One rule (schemas.SessionId, the facade's optional_text) over HTTP and MCP: HTTP's
    recall took any session id, blank or NUL; MCP's resume_session looked up a session
    named ""."""
    client.post("/api/knowledge", json={"content": "Run migrations with alembic upgrade head",
                                        "project": "shop", "type": "lesson"})  # fmt: skip
    asked = {"prompt": "how do I run migrations", "project": "shop"}
    empty = client.post("/api/recall", json={**asked, "session_id": ""})
    assert empty.status_code == 200, empty.text
    assert "alembic" in empty.json()["hits"][0]["content"]
    for blank in (" ", "\u0000", " \t\u001b"):
        refused = client.post("/api/recall", json={**asked, "session_id": blank})
        assert refused.status_code == 422, (blank, refused.text)
        assert "the session id is empty" in refused.json()["message"], refused.text

    async def body(client: Client) -> dict[str, Any]:
        await ok(client, "session_start", {"project": "p1", "session_id": "s1"})
        await ok(client, "save_summary", {"project": "p1", **TASK})
        for blank in (" ", "\u0000"):
            for tool in ("resume_session", "session_start", "save_observation"):
                args = {"project": "p1", "session_id": blank, "content": "a note"}
                if tool != "save_observation":
                    del args["content"]
                said = await err(client, tool, args)
                assert "the session id is empty" in said, (tool, blank, said)
        return await ok(client, "resume_session", {"project": "p1", "session_id": ""})

    resumed = run(memory, body)
    assert resumed["session_id"] == "s1"
    assert resumed["summary"]["request"] == TASK["request"]
    assert memory.stats().memories == 2  # the knowledge and the summary: no blank note


def test_a_blank_session_id_is_refused_by_session_start_and_summaries(
    memory: Memory, client: httpx.Client
) -> None:
    """The one blank rule (arguments.required_text), not ``str.strip``: a summary was filed
    under a session named " " over HTTP, and a NUL-only id was told it holds a control
    character rather than that it is empty."""
    for blank in ("", " ", "\u0000", "\u0001\u001b"):
        refused = client.post("/api/summaries", json={"project": "p1", "session_id": blank, **TASK})
        assert refused.status_code == 422, (blank, refused.text)
        assert "the session id is empty" in refused.json()["message"], refused.text
        with pytest.raises(InvalidInput, match=r"^the session id is empty"):
            memory.session_start(blank, project="p1")
        with pytest.raises(InvalidInput, match=r"^the session id is empty"):
            memory.save_summary(
                Summary(session_id=blank, project="p1", is_auto_generated=False, request="r")
            )
    assert memory.stats().memories == 0 and memory.list_sessions(project="p1") == []


def test_a_summary_list_is_bounded_alike_over_http_and_mcp(
    memory: Memory, client: httpx.Client
) -> None:
    """One bound (schemas.SummaryItems): HTTP took 100 items of any length where MCP took
    50 of 2,000 characters."""
    from memlane import schemas

    max_items, max_chars = 50, 2_000  # schemas.MAX_SUMMARY_ITEMS, MAX_SUMMARY_ITEM_CHARS
    full = ["a step " + "x" * (max_chars - 7)] * max_items
    too_many = ["a step"] * (max_items + 1)
    too_long = ["x" * (max_chars + 1)]
    base = {"project": "p1", "session_id": "http-s1", "request": TASK["request"]}
    for name in ("completed", "learned", "next_steps"):
        for items in (too_many, too_long):
            refused = client.post("/api/summaries", json={**base, name: items})
            assert refused.status_code == 422, (name, len(items), refused.text)
    saved = client.post("/api/summaries", json={**base, "learned": full})
    assert saved.status_code == 201, saved.text

    async def body(client: Client) -> None:
        args = {"project": "p2", "session_id": "mcp-s1", "request": TASK["request"]}
        await ok(client, "session_start", {"project": "p2", "session_id": "mcp-s1"})
        for name in ("completed", "learned", "next_steps"):
            for items in (too_many, too_long):
                await err(client, "save_summary", {**args, name: items})
        await ok(client, "save_summary", {**args, "learned": full})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        listed = tools["save_summary"].input_schema["properties"]["learned"]["anyOf"][0]
        assert listed["maxItems"] == max_items
        assert listed["items"]["maxLength"] == max_chars

    run(memory, body)
    for session in ("http-s1", "mcp-s1"):
        stored = memory.get_summary(session)
        assert stored is not None and stored.learned == tuple(full), session
    assert (max_items, max_chars) == (schemas.MAX_SUMMARY_ITEMS, schemas.MAX_SUMMARY_ITEM_CHARS)


def test_a_session_started_without_an_agent_is_unknown_everywhere(memory: Memory) -> None:
    """One default: MCP named such a session "mcp" (a default of its own, twice in the
    tool), the facade "unknown"; and "mcp", being a name, was never replaced by the name
    of the agent whose hooks then wrote to the session."""

    async def body(client: Client) -> None:
        await ok(client, "session_start", {"project": "p1", "session_id": "from-mcp"})
        await ok(client, "session_start", {"project": "p1", "session_id": "empty", "agent": ""})

    run(memory, body)
    memory.session_start("from-api", project="p1")
    agents = {sid: memory.get_session(sid).agent for sid in ("from-mcp", "empty", "from-api")}
    assert agents == dict.fromkeys(agents, "unknown"), agents
    memory.touch_session("from-mcp", "p1", agent="claude-code")  # its first hook
    assert memory.get_session("from-mcp").agent == "claude-code"


def test_the_python_api_refuses_an_over_long_summary_as_http_and_mcp_do(memory: Memory) -> None:
    """HTTP and MCP refused a summary past the bounds (schemas); the facade stored it, its
    searchable text cut at 64,000 characters without a word. A rule-based summary (the
    hooks') is still stored, clipped: a hook never fails the agent."""
    max_items, max_chars = 50, 2_000  # sessions.MAX_SUMMARY_ITEMS, MAX_SUMMARY_ITEM_CHARS
    memory.session_start("s1", project="p1")
    given = {"session_id": "s1", "project": "p1", "is_auto_generated": False}
    with pytest.raises(InvalidInput, match="a summary's holds at most 20,000"):
        memory.save_summary(Summary(**given, request="Migrate billing " + "x" * 70_000))
    too_many = tuple(f"step {n}" for n in range(max_items + 1))
    with pytest.raises(InvalidInput, match="learned has 51 items"):
        memory.save_summary(Summary(**given, request="Migrate billing", learned=too_many))
    too_long = ("ok", "y" * (max_chars + 1))
    with pytest.raises(InvalidInput, match="next_steps item 2 is 2,001 characters"):
        memory.save_summary(Summary(**given, request="Migrate billing", next_steps=too_long))
    assert memory.get_summary("s1") is None
    derived = Summary(**{**given, "is_auto_generated": True}, request="Migrate " + "z" * 70_000)
    assert memory.save_summary(derived).status == "created"
