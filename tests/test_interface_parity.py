"""HTTP, MCP and the CLI say the same thing: one input model, one notice, one access rule.

Each test asks two or three interfaces the same question over the real thing (a live
worker over HTTP, an in-process MCP client, the CLI's own query function) and compares.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, get_args

import anyio
import click
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from pydantic import BaseModel

from memlane import config, mcp_server, models, schemas
from memlane.cli import cli, memory_cmds
from memlane.mcp_server import build_server
from memlane.models import FUSIONS
from memlane.service import Memory
from memlane.worker.queries import search as cli_search
from memlane.worker.web import app as web_app

T = TypeVar("T")


def mcp(memory: Memory, body: Callable[[Client], Awaitable[T]], cwd: Path | None = None) -> T:
    server = build_server(lambda: memory, cwd=cwd)

    async def main() -> T:
        async with Client(server) as session:
            return await body(session)

    return anyio.run(main)


def tool(memory: Memory, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any] | str]:
    """(is_error, structured result or the error text) of one MCP tool call."""

    async def body(client: Client) -> tuple[bool, dict[str, Any] | str]:
        result = await client.call_tool(name, args)
        if result.is_error:
            return True, result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content is not None
        return False, result.structured_content

    return mcp(memory, body)


# -- M3: one input model for a save, HTTP and MCP alike -------------------------------


@pytest.mark.parametrize(
    ("path", "tool_name", "type_"),
    [
        ("/api/knowledge", "save_knowledge", "banana"),
        ("/api/knowledge", "save_knowledge", "note"),
        ("/api/observations", "save_observation", "decision"),
        ("/api/observations", "save_observation", "banana"),
    ],
)
def test_a_type_one_interface_refuses_the_other_refuses_too(
    client: httpx.Client, memory: Memory, path: str, tool_name: str, type_: str
) -> None:
    body = {"content": "Use pgbouncer in transaction mode", "project": "api", "type": type_}
    failed, said = tool(memory, tool_name, body)
    assert failed, said
    response = client.post(path, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["fields"][0]["field"] == "type"
    assert memory.stats().memories == 0


@pytest.mark.parametrize(
    ("request_model", "tool_name"),
    [
        (schemas.ObservationRequest, "save_observation"),
        (schemas.KnowledgeRequest, "save_knowledge"),
    ],
)
def test_a_save_takes_the_same_fields_over_http_and_mcp(
    memory: Memory, request_model: type[BaseModel], tool_name: str
) -> None:
    async def body(client: Client) -> dict[str, Any]:
        listing = await client.list_tools()
        return next(t.input_schema for t in listing.tools if t.name == tool_name)

    schema = mcp(memory, body)
    assert set(schema["properties"]) == set(request_model.model_fields)
    http_type = request_model.model_json_schema()["properties"]["type"]
    assert schema["properties"]["type"]["enum"] == http_type["enum"]
    assert ("type" in schema.get("required", [])) == request_model.model_fields[
        "type"
    ].is_required()


def test_metadata_is_kept_over_mcp_as_over_http(client: httpx.Client, memory: Memory) -> None:
    metadata = {"ticket": "OPS-12", "severity": 2}
    failed, saved = tool(
        memory,
        "save_knowledge",
        {"content": "Pin the driver", "type": "decision", "project": "api", "metadata": metadata},
    )
    assert not failed, saved
    assert isinstance(saved, dict)
    over_http = client.post(
        "/api/knowledge",
        json={"content": "Pin the base image", "type": "decision", "project": "api",
              "metadata": metadata},
    ).json()  # fmt: skip
    for memory_id in (saved["id"], over_http["id"]):
        assert memory.get(memory_id).metadata == metadata


# -- M4: the notice of a search reaches every interface -------------------------------


def test_a_search_that_fell_back_to_keywords_says_so_everywhere(
    client: httpx.Client, memory: Memory
) -> None:
    memory.save("Use pgbouncer in transaction mode", project="api", type="decision")
    expected = memory.search("pgbouncer", project="api", mode="hybrid").notice
    assert expected and "keyword" in expected
    answer = client.get("/api/hybrid-search", params={"q": "pgbouncer", "project": "api"})
    assert answer.json()["notice"] == expected
    keyword = client.get("/api/search", params={"q": "pgbouncer", "project": "api"}).json()
    assert keyword["notice"] is None
    failed, found = tool(
        memory, "search", {"query": "pgbouncer", "project": "api", "mode": "hybrid"}
    )
    assert not failed and isinstance(found, dict), found
    assert found["notice"] == expected
    request = {"query": "pgbouncer", "project": "api", "mode": "hybrid"}
    assert cli_search(memory, request)["notice"] == expected


def test_the_notice_names_a_cli_command_only_on_the_cli(
    client: httpx.Client, memory: Memory
) -> None:
    memory.save("Use pgbouncer in transaction mode", project="api", type="decision")
    params = {"q": "pgbouncer", "project": "api"}
    over_http = client.get("/api/hybrid-search", params=params).json()["notice"]
    failed, found = tool(
        memory, "search", {"query": "pgbouncer", "project": "api", "mode": "hybrid"}
    )
    assert not failed and isinstance(found, dict), found
    for notice in (over_http, found["notice"]):
        assert notice == "keyword mode: no vectors yet", notice
    shown = CliRunner().invoke(
        cli, ["search", "pgbouncer", "--project", "api", "--mode", "hybrid", "--json"]
    )
    assert shown.exit_code == 0, shown.output
    assert "note: keyword mode: no vectors yet (run `memlane embed --backfill`)" in shown.stderr


# -- M5: the HTTP search takes what it says it takes, and refuses the rest ------------


def test_http_search_refuses_a_parameter_it_does_not_know(client: httpx.Client) -> None:
    for extra in ({"bogus": "1"}, {"mode": "bogus"}, {"fusion": "bogus"}, {"min_score": "2"}):
        response = client.get("/api/search", params={"q": "x", "project": "api", **extra})
        assert response.status_code == 422, (extra, response.text)
        assert response.json()["fields"][0]["field"] == next(iter(extra))


def test_every_http_route_without_a_query_model_refuses_a_query_parameter(
    client: httpx.Client, memory: Memory
) -> None:
    saved = memory.save("Use pgbouncer in transaction mode", project="api", type="decision").id
    memory.session_start("s1", project="api")
    values = {"id": str(saved), "session_id": "s1"}
    plain = [op for op in web_app.OPERATIONS if op.query is None]
    assert len(plain) >= 10
    for op in plain:
        path = re.sub(r"{(\w+)(?::\w+)?}", lambda m: values[m.group(1)], op.path)
        answer = client.request(op.method, path, params={"bogus": "1"})
        assert answer.status_code == 422, (op.method, path, answer.text)
        assert answer.json()["fields"][0]["field"] == "bogus", (op.method, path)
    # Refused before anything ran: the session is still open, the memory unread.
    assert memory.get_session("s1").status == "active"
    assert memory.get(saved).access_count == 0
    assert client.get(f"/api/observations/{saved}").status_code == 200


def test_http_search_runs_the_mode_fusion_and_floor_it_is_given(
    client: httpx.Client, memory: Memory
) -> None:
    memory.save("Use pgbouncer in transaction mode", project="api", type="decision")
    memory.save("pgbouncer pools connections", project="api", type="note")
    params = {"q": "pgbouncer", "project": "api"}
    semantic = client.get("/api/search", params={**params, "mode": "semantic"}).json()
    assert semantic["notice"] == memory.search("pgbouncer", project="api", mode="semantic").notice
    everything = client.get("/api/search", params=params).json()["hits"]
    floor = max(h["score"] for h in everything) - 1e-6
    kept = client.get("/api/search", params={**params, "min_score": floor}).json()["hits"]
    assert len(kept) == 1 < len(everything)
    rrf = client.get("/api/hybrid-search", params={**params, "fusion": "rrf"})
    assert rrf.status_code == 200, rrf.text


def test_the_fusions_http_takes_are_the_engines() -> None:
    assert get_args(schemas.Fusion) == FUSIONS


def test_the_wire_lists_are_the_lists_of_models() -> None:
    assert get_args(schemas.ObservationType) == models.SAVED_OBSERVATION_TYPES
    assert get_args(schemas.KnowledgeType) == models.SAVED_KNOWLEDGE_TYPES
    assert get_args(schemas.FeedbackMark) == models.FEEDBACK_MARKS
    # Each kind of knowledge models names is saved by one tool or the other.
    saved = models.SAVED_OBSERVATION_TYPES + models.SAVED_KNOWLEDGE_TYPES
    assert set(models.KNOWLEDGE_TYPES) <= set(saved)
    assert {models.kind_for_type(t) for t in models.SAVED_KNOWLEDGE_TYPES} == {"knowledge"}


def test_no_literal_of_schemas_spells_out_a_list_of_models() -> None:
    held = set(models.TYPES) | set(FUSIONS) | set(models.FEEDBACK_MARKS)
    tree = ast.parse(Path(schemas.__file__).read_text(encoding="utf-8"))
    spelt = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Literal"
        and any(isinstance(c, ast.Constant) and c.value in held for c in ast.walk(node.slice))
    ]
    assert spelt == []


# -- M6: the worker's directory is no client's project --------------------------------


@pytest.mark.parametrize("path", ["/api/observations", "/api/knowledge"])
def test_an_http_save_without_a_project_is_refused(
    client: httpx.Client, memory: Memory, path: str
) -> None:
    response = client.post(path, json={"content": "Pin the driver", "type": "decision"})
    assert response.status_code == 422, response.text
    assert response.json()["fields"][0]["field"] == "project"
    assert memory.stats().memories == 0


def test_an_http_read_of_one_project_without_a_project_is_refused(
    client: httpx.Client, memory: Memory
) -> None:
    memory.save("Use pgbouncer in transaction mode", project="api", type="decision")
    for scope in ("project", "tiered"):
        answer = client.get("/api/search", params={"q": "pgbouncer", "scope": scope})
        assert answer.status_code == 422, answer.text
        assert "give project" in answer.json()["message"]
    answer = client.get("/api/checkpoint")
    assert answer.status_code == 422, answer.text
    assert answer.json()["fields"][0]["field"] == "project"
    recalled = client.post("/api/recall", json={"prompt": "how do we use pgbouncer here"})
    assert recalled.status_code == 422, recalled.text
    assert recalled.json()["fields"][0]["field"] == "project"
    every = client.get("/api/search", params={"q": "pgbouncer"}).json()["hits"]
    assert [h["project"] for h in every] == ["api"]  # no project and no scope: all of them


# -- M7: one access rule: reading a memory by id is a use, a listing is not -----------


def test_a_search_counts_no_use_and_a_read_by_id_counts_one_everywhere(
    client: httpx.Client, memory: Memory
) -> None:
    saved = memory.save("Use pgbouncer in transaction mode", project="api", type="decision").id

    def uses() -> int:
        return memory.get(saved).access_count

    client.get("/api/search", params={"q": "pgbouncer", "project": "api"})
    client.get("/api/hybrid-search", params={"q": "pgbouncer", "project": "api"})
    tool(memory, "search", {"query": "pgbouncer", "project": "api"})
    cli_search(memory, {"query": "pgbouncer", "project": "api"})
    memory.recall("pgbouncer transaction mode", project="api", min_score=0.0)
    assert uses() == 0
    assert client.get(f"/api/observations/{saved}").json()["access_count"] == 1
    batch = client.post("/api/observations/batch", json={"ids": [saved]}).json()
    assert batch["memories"][0]["access_count"] == 2
    failed, got = tool(memory, "get_observations", {"ids": [saved]})
    assert not failed and isinstance(got, dict)
    assert got["memories"][0]["access_count"] == 3
    assert uses() == 3


def test_no_search_or_recall_can_be_counted_as_a_use(memory: Memory) -> None:
    saved = memory.save("Use pgbouncer in transaction mode", project="api", type="decision").id
    with pytest.raises(TypeError, match="record_access"):
        memory.search("pgbouncer", project="api", record_access=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="record_access"):
        memory.recall("pgbouncer", project="api", record_access=True)  # type: ignore[call-arg]
    assert not hasattr(memory, "record_access")  # a use is a read by id: get, get_many
    assert memory.get(saved).access_count == 0


def test_repeated_searches_leave_the_scores_as_they_were(memory: Memory) -> None:
    memory.save("Use pgbouncer in transaction mode", project="api", type="decision")
    request = {"query": "pgbouncer", "project": "api"}
    first = cli_search(memory, request)["hits"][0]["score"]
    for _ in range(5):
        cli_search(memory, request)
    assert cli_search(memory, request)["hits"][0]["score"] == first


# -- M8: a hit the relaxation cascade admitted is marked, on every interface ----------


def test_a_weak_match_padding_a_search_is_marked_relaxed_everywhere(
    client: httpx.Client, memory: Memory
) -> None:
    strong = memory.save("Use pgbouncer in transaction mode for the api database", project="api")
    filler = " ".join(f"word{i} caching queues workers" for i in range(400))
    weak = memory.save(
        "pgbouncer " + filler, project="web", type="note", created_at=datetime(2015, 1, 1)
    )
    query = "pgbouncer database transaction"
    hits = memory.search(query, project="api", scope="tiered", mode="keyword")
    assert [(h.id, h.relaxed) for h in hits] == [(strong.id, False), (weak.id, True)]
    assert hits[1].score < 0.15  # under the noise floor: admitted only to fill the limit
    params = {"q": query, "project": "api", "scope": "tiered"}
    over_http = client.get("/api/search", params=params).json()["hits"]
    assert [(h["id"], h["relaxed"]) for h in over_http] == [(strong.id, False), (weak.id, True)]
    failed, found = tool(
        memory, "search", {"query": query, "project": "api", "scope": "tiered", "mode": "keyword"}
    )
    assert not failed and isinstance(found, dict), found
    assert [r["relaxed"] for r in found["results"]] == [False, True]
    request = {"query": query, "project": "api", "scope": "tiered", "mode": "keyword"}
    assert [h["relaxed"] for h in cli_search(memory, request)["hits"]] == [False, True]
    floored = memory.search(query, project="api", scope="tiered", mode="keyword", min_score=0.01)
    assert [h.relaxed for h in floored] == [False, False]  # a floor given: nothing relaxed


# -- L4: an error over HTTP or MCP names no CLI command and no current directory -----


def test_errors_over_http_and_mcp_speak_of_no_cli_and_no_directory(
    client: httpx.Client, memory: Memory
) -> None:
    said = [
        client.get("/api/observations/424242").json()["message"],
        client.patch("/api/observations/424242", json={"title": "t"}).json()["message"],
        client.get("/api/sessions/nope").json()["message"],
    ]
    for name, args in (
        ("search", {"query": "x", "project": " "}),
        ("resume_session", {"project": "api", "session_id": "nope"}),
    ):
        failed, text = tool(memory, name, args)
        assert failed, text
        said.append(str(text))
    for message in said:
        assert "memlane " not in message and "current directory" not in message, message
        assert "424242" in message or "nope" in message or "project name" in message


# -- L1: MCP search takes the filters HTTP search takes -------------------------------


def test_mcp_search_filters_by_kind_and_ranks_as_of_a_moment(memory: Memory) -> None:
    decided = memory.save("pgbouncer runs in transaction mode", project="api", type="decision")
    memory.save("pgbouncer restarted at noon", project="api", type="command")

    def ids(**args: Any) -> list[int]:
        failed, found = tool(memory, "search", {"query": "pgbouncer", "project": "api", **args})
        assert not failed and isinstance(found, dict), found
        return [entry["id"] for entry in found["results"]]

    assert len(ids()) == 2
    assert ids(kinds=["knowledge"]) == [decided.id]
    assert ids(as_of="2001-01-01") == []  # nothing existed yet


# -- L2: HTTP starts and ends a session, as MCP does --------------------------------


def test_http_starts_and_ends_a_session_as_mcp_does(client: httpx.Client, memory: Memory) -> None:
    started = client.post("/api/sessions", json={"project": "api", "session_id": "team/s1"})
    assert started.status_code == 200, started.text
    assert (started.json()["id"], started.json()["status"]) == ("team/s1", "active")
    saved = client.post(
        "/api/observations", json={"content": "Pin the driver", "project": "api",
                                   "session_id": "team/s1"},
    )  # fmt: skip
    assert memory.get(saved.json()["id"]).session_id == "team/s1"
    ended = client.post("/api/sessions/team%2Fs1/end")
    assert ended.status_code == 200, ended.text
    assert ended.json()["status"] == "ended"
    assert memory.get_session("team/s1").status == "ended"
    fresh = client.post("/api/sessions", json={"project": "api", "agent": "script"}).json()
    assert fresh["id"].startswith("api-") and fresh["agent"] == "script"
    assert client.post("/api/sessions", json={"agent": "script"}).status_code == 422
    assert client.post("/api/sessions/nope/end").status_code == 404
    # An id its end route could not name (a URL path drops "." and ".."): refused.
    for dots in (".", ".."):
        refused = client.post("/api/sessions", json={"project": "api", "session_id": dots})
        assert refused.status_code == 422, refused.text


def test_a_session_started_without_an_id_is_named_one_way(
    client: httpx.Client, memory: Memory
) -> None:
    over_http = client.post("/api/sessions", json={"project": "api"}).json()["id"]
    failed, over_mcp = tool(memory, "session_start", {"project": "api"})
    assert not failed and isinstance(over_mcp, dict), over_mcp
    assert re.fullmatch(r"api-[0-9a-f]{12}", over_http), over_http
    assert re.fullmatch(r"mcp-[0-9a-f]{12}", over_mcp["id"]), over_mcp
    # The adapters make no id of their own: schemas.new_session_id does, for both.
    for module in (mcp_server, web_app):
        tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "uuid" not in imported, module.__name__


def test_a_context_budget_has_the_same_bounds_everywhere(
    client: httpx.Client, memory: Memory
) -> None:
    low, high = config.MIN_CONTEXT_BUDGET, config.MAX_CONTEXT_BUDGET
    spec = config.SPECS["context_token_budget"]
    assert (spec.minimum, spec.maximum) == (low, high)
    option = next(p for p in memory_cmds.context.params if p.name == "budget")
    assert isinstance(option.type, click.IntRange)
    assert (option.type.min, option.type.max) == (low, high)
    for budget, taken in ((low - 1, False), (low, True), (high, True), (high + 1, False)):
        answer = client.get("/api/context/api", params={"budget": budget})
        assert answer.status_code == (200 if taken else 422), (budget, answer.text)
        failed, said = tool(memory, "get_context", {"project": "api", "budget": budget})
        assert failed is not taken, (budget, said)


def test_mcp_lists_and_shows_sessions_as_http_does(client: httpx.Client, memory: Memory) -> None:
    memory.session_start("s1", project="api", agent="script")
    memory.session_start("s2", project="web")
    memory.session_start("s3", project="api")
    memory.session_end("s3")
    for args, params in (
        ({"project": "api"}, {"project": "api"}),
        ({"all_projects": True, "limit": 2}, {"limit": 2}),
    ):
        failed, over_mcp = tool(memory, "list_sessions", args)
        assert not failed, over_mcp
        assert over_mcp == client.get("/api/sessions", params=params).json()
    failed, detail = tool(memory, "get_session", {"session_id": "s3"})
    assert not failed, detail
    assert detail == client.get("/api/sessions/s3").json()


# -- L3: the facade's methods show their own signature --------------------------------


def test_facade_methods_show_the_parameters_a_caller_passes(memory: Memory) -> None:
    search = inspect.signature(memory.search)
    assert next(iter(search.parameters)) == "query"
    assert "engine" not in search.parameters
    listing = inspect.signature(memory.list_memories)
    assert "core" not in listing.parameters


def test_json_of_the_notice_is_null_without_a_fallback(client: httpx.Client) -> None:
    answer = client.get("/api/search", params={"q": "nothing", "project": "api"})
    assert json.loads(answer.text) == {"hits": [], "notice": None}
