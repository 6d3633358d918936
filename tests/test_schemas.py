"""Wire models are built from core records by attribute, derived fields by one validator."""

from __future__ import annotations

from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from memlane import models, schemas
from memlane.config import Settings
from memlane.service import Memory
from memlane.worker.web.params import ContextQuery, SearchQuery, TimelineQuery

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
HASH = "f00dfeedf00dfeedf00dfeed"


def memory(content: str = "body", title: str = "") -> models.Memory:
    return models.Memory(
        id=7,
        project="api",
        kind="observation",
        type="bugfix",
        content=content,
        created_at=T0,
        updated_at=T0,
        title=title,
        session_id="s1",
        files=("src/a.py",),
        tags=("retry",),
        metadata={"exit": 1},
        normalized_hash=HASH,
    )


def hit(
    content: str = "body", title: str = "", from_project: str | None = None
) -> models.SearchHit:
    return models.SearchHit(
        id=9,
        project="api",
        kind="knowledge",
        type="decision",
        title=title,
        content=content,
        created_at=T0,
        score=0.123456,
        files=("a.py",),
        from_project=from_project,
    )


def test_plain_models_copy_the_record_by_attribute() -> None:
    out = schemas.MemoryOut.model_validate(memory())
    assert out.files == ["src/a.py"] and out.tags == ["retry"] and out.metadata == {"exit": 1}
    assert out.created_at == T0 and out.session_id == "s1"
    session = models.Session(
        id="s", project="p", status="auto_closed", started_at=T0, last_activity_at=T0
    )
    with pytest.raises(ValidationError, match="title"):  # SessionOut.titled gives each its title
        schemas.SessionOut.model_validate(session)
    report = models.ImportReport(path="x.jsonl", created=2, errors=(models.LineError(3, "bad"),))
    dumped = schemas.ImportReportOut.model_validate(report).model_dump()
    assert dumped["errors"] == [{"line": 3, "message": "bad"}]  # nested records too


def test_index_entry_derives_headline_day_score_and_source_project() -> None:
    entry = schemas.IndexEntry.model_validate(hit("\n  first line\nsecond", from_project="web"))
    assert entry.model_dump() == {
        "id": 9,
        "title": "first line",
        "type": "decision",
        "date": "2026-01-02",
        "score": 0.123,
        "project": "web",
        "snippet": "",  # the hit carries none: search fills it with the passage that matched
        "members": None,  # one memory: nothing more to fetch
        "relaxed": False,  # above the noise floor
    }
    grouped = replace(hit("piece"), members=(9, 10), source_ids=("s1:3", "s1:4"))
    assert schemas.IndexEntry.model_validate(grouped).members == [9, 10]
    out = schemas.SearchHitOut.model_validate(grouped)
    assert (out.members, out.source_ids) == ([9, 10], ["s1:3", "s1:4"])
    assert schemas.IndexEntry.model_validate(hit("x" * 300)).title == "x" * 100
    assert schemas.IndexEntry.model_validate(hit("body", title="Own title")).title == "Own title"
    assert schemas.IndexEntry.model_validate(hit("   ")).title == ""
    assert schemas.IndexEntry.model_validate(hit()).project is None  # own project: no tag


def test_timeline_entry_and_feed_derive_their_short_fields() -> None:
    line = schemas.TimelineEntry.model_validate(memory("\nretry with jitter\nmore"))
    assert (line.date, line.title, line.session_id) == (
        "2026-01-02 03:04",
        "retry with jitter",
        "s1",
    )
    assert schemas.TimelineEntry.model_validate(memory(title="t" * 200)).title == "t" * 120
    feed = schemas.FeedMemoryOut.model_validate(memory("y" * 1000))
    assert feed.snippet == "y" * 300 and feed.updated_at == T0


@pytest.mark.parametrize(
    ("model", "record"),
    [
        (schemas.MemoryOut, memory()),
        (schemas.FeedMemoryOut, memory()),
        (schemas.TimelineEntry, memory()),
        (schemas.IndexEntry, hit(from_project="web")),
        (schemas.SearchHitOut, hit()),
    ],
)
def test_a_dump_validates_back_to_itself_and_never_holds_the_hash(
    model: type[schemas.Wire], record: object
) -> None:
    """The MCP SDK validates every structured result again: from its own JSON."""
    built = model.model_validate(record)
    dumped = built.model_dump(mode="json")
    assert model.model_validate(dumped) == built
    assert HASH not in built.model_dump_json()


def test_every_request_takes_a_project_or_session_id_as_long_as_a_stored_name() -> None:
    """One limit for names (models.MAX_NAME_CHARS, Core.plain_name's): the HTTP bodies took
    200 characters where lookups and the CLI take 1,000."""
    limits = {
        f"{model.__name__}.{name}": [getattr(m, "max_length", None) for m in field.metadata]
        for model in vars(schemas).values()
        if isinstance(model, type) and model.__name__.endswith("Request")
        for name, field in getattr(model, "model_fields", {}).items()
        if name in ("project", "session_id")
    }
    assert sorted(limits) == [
        "KnowledgeRequest.project",
        "KnowledgeRequest.session_id",
        "ObservationRequest.project",
        "ObservationRequest.session_id",
        "RecallRequest.project",
        "RecallRequest.session_id",
        "SaveRequest.project",
        "SaveRequest.session_id",
        "SessionStartRequest.project",
        "SessionStartRequest.session_id",
        "SummaryRequest.project",
        "SummaryRequest.session_id",
    ]
    assert all(models.MAX_NAME_CHARS in found for found in limits.values()), limits
    name = "s" * models.MAX_NAME_CHARS
    assert schemas.SaveRequest(content="x", session_id=name, project=name).project == name
    with pytest.raises(ValueError, match="at most 1000 characters"):
        schemas.SaveRequest(content="x", project=name + "s")


def test_a_session_on_the_wire_carries_its_title(settings: Settings) -> None:
    from memlane.service import open as open_memory

    with closing(open_memory(settings=settings)) as store:
        store.session_start("s-titled", project="p", agent="claude-code")
        store.record_prompt("s-titled", "Why does the nightly export time out?", project="p")
        store.session_start("s-untitled", project="p", agent="claude-code")
        both = store.list_sessions(project="p")
        out = {s.id: s for s in schemas.SessionOut.titled(store, both)}
    assert out["s-titled"].title == "Why does the nightly export time out?"
    assert out["s-untitled"].title is None and out["s-untitled"].auto_closed is False


# (MCP tool, its argument, the HTTP model of the same operation, its field): one bound each.
SHARED_ARGUMENTS = (
    [
        (tool, name, schemas.SaveRequest, name)
        for tool in ("save_observation", "save_knowledge")
        # project: HTTP requires one (schemas.GivenProject), MCP falls back on the client's root
        for name in ("content", "title", "topic_key", "files", "tags", "session_id", "metadata")
    ]
    + [
        ("save_summary", name, schemas.SummaryRequest, name)
        for name in ("request", "completed", "learned", "next_steps", "files")
    ]
    + [
        ("get_context", "budget", ContextQuery, "budget"),
        ("resume_session", "session_id", TimelineQuery, "session_id"),
        ("timeline", "session_id", TimelineQuery, "session_id"),
        ("timeline", "around", TimelineQuery, "around"),
        ("search", "query", SearchQuery, "q"),
    ]
)
BOUNDS = ("maxLength", "minLength", "maxItems", "minItems", "minimum", "maximum", "pattern")


def _bounds(schema: dict[str, Any]) -> dict[str, Any]:
    """The bounds a JSON schema sets on a value (of its branch that is not null)."""
    for branch in schema.get("anyOf", ()):
        if branch.get("type") != "null":
            return _bounds(branch)
    found = {key: schema[key] for key in BOUNDS if key in schema}
    if "items" in schema:
        found["items"] = _bounds(schema["items"])
    return found


def test_an_mcp_argument_is_bounded_as_http_bounds_the_same_field(memory: Memory) -> None:
    """HTTP and MCP share schemas.py's types: MCP took 50 tags and titles of 200 where HTTP
    took 100 and 500, and HTTP took summary items and tags of any length."""
    from mcp import Client

    from tests.test_mcp_server import run

    async def body(client: Client) -> dict[str, dict[str, Any]]:
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    tools = run(memory, body)
    differ = []
    for tool, name, model, field in SHARED_ARGUMENTS:
        mcp = _bounds(tools[tool]["properties"][name])
        http = _bounds(model.model_json_schema()["properties"][field])
        if mcp != http:
            differ.append((tool, name, mcp, http))
    assert differ == []
