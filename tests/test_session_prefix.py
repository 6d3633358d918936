"""A session is named by its id or by a unique prefix of 8 characters or more, everywhere.

Agent-facing text shows a session as its first 8 characters (``session 4f1c2a9e``), so
what the agent or the user copies from there must name it on every interface: the
facade, the CLI, HTTP and MCP (one rule: :func:`memlane.sessions.session_id_for`). An
ambiguous prefix names the candidates; an unknown id is "no session", never an empty
success; a write that creates a session takes its id as given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from memlane.errors import InvalidInput, NotFound
from memlane.injections import Injected
from memlane.mcp_server import build_server
from memlane.models import MemoryFilter
from memlane.privacy import INJECTED_CLOSE, INJECTED_OPEN
from memlane.service import Memory
from memlane.sessions import session_id_for
from tests.conftest import one_line_error, run_memlane

FIRST = "4f1c2a9e-7b3d-4c1a-9e2f-0a1b2c3d4e5f"
TWIN = "4f1c2a9e-aaaa-4c1a-9e2f-0a1b2c3d4e5f"  # the same 8 characters as FIRST
ALONE = "7d2e0b1c-1111-4c1a-9e2f-0a1b2c3d4e5f"
ELSEWHERE = "9a9a9a9a-2222-4c1a-9e2f-0a1b2c3d4e5f"  # in project "web"


@pytest.fixture
def stored(memory: Memory) -> Memory:
    for session_id, project in ((FIRST, "api"), (TWIN, "api"), (ALONE, "api")):
        memory.save(f"pool size note of {session_id}", project=project, session_id=session_id)
    memory.save("cache header note", project="web", session_id=ELSEWHERE)
    return memory


def test_the_facade_takes_a_unique_prefix_of_eight_characters(stored: Memory) -> None:
    assert stored.get_session("7d2e0b1c").id == ALONE
    assert stored.get_session("4f1c2a9e-7b3").id == FIRST
    assert stored.get_session(ALONE).id == ALONE
    rows = stored.timeline(session_id="7d2e0b1c", project="api")
    assert [m.session_id for m in rows] == [ALONE]
    assert stored.delete(session_id=ALONE, dry_run=True) == [rows[0].id]
    shown = f"{INJECTED_OPEN}\npool size\n{INJECTED_CLOSE}"
    stored.record_injection(
        Injected(ALONE, "api", "user-prompt-submit", shown, "keyword", True, 5.0, "pool?", 1)
    )
    assert [e.session_id for e in stored.injection_log(session_id="7d2e0b1c")] == [ALONE]


def test_an_ambiguous_prefix_names_the_sessions_it_begins(stored: Memory) -> None:
    with pytest.raises(InvalidInput) as raised:
        stored.get_session("4f1c2a9e")
    assert FIRST in str(raised.value) and TWIN in str(raised.value)
    assert "ambiguous" in str(raised.value)


def test_an_unknown_or_too_short_id_is_no_session(stored: Memory) -> None:
    for given in ("deadbeef", "7d2e0b1"):  # unknown; a prefix shorter than 8 characters
        with pytest.raises(NotFound, match=f"no session '{given}'"):
            stored.get_session(given)
        with pytest.raises(NotFound, match=f"no session '{given}'"):
            stored.timeline(session_id=given, project="api")


def test_a_listing_resolves_a_prefix_within_the_projects_it_lists(stored: Memory) -> None:
    with pytest.raises(NotFound):
        stored.timeline(session_id="9a9a9a9a", project="api")
    rows = stored.timeline(session_id="9a9a9a9a", all_projects=True)
    assert [m.session_id for m in rows] == [ELSEWHERE]


def test_a_write_that_creates_a_session_takes_the_id_as_given(stored: Memory) -> None:
    created = stored.session_start("7d2e0b1c", project="api")
    assert created.id == "7d2e0b1c"
    assert stored.get_session("7d2e0b1c").id == "7d2e0b1c"  # the whole id wins now


def test_the_cli_takes_a_prefix_and_says_no_session(stored: Memory, home: Path) -> None:
    done = run_memlane(home, "timeline", "--session", "7d2e0b1c", "--project", "api")
    assert done.returncode == 0, done.stderr
    assert f"pool size note of {ALONE}" in done.stdout
    unknown = run_memlane(home, "timeline", "--session", "deadbeef", "--project", "api")
    assert "no session 'deadbeef'" in one_line_error(unknown, 3)
    ambiguous = run_memlane(home, "timeline", "--session", "4f1c2a9e", "--project", "api")
    assert TWIN in one_line_error(ambiguous, 2)


def test_http_takes_a_prefix_and_404s_an_unknown_id(stored: Memory, client: httpx.Client) -> None:
    found = client.get("/api/sessions/7d2e0b1c")
    assert found.status_code == 200, found.text
    assert found.json()["session"]["id"] == ALONE
    assert client.get("/api/sessions/deadbeef").status_code == 404
    ambiguous = client.get("/api/sessions/4f1c2a9e")
    assert ambiguous.status_code == 422 and TWIN in ambiguous.text
    checkpoint = client.get("/api/sessions/7d2e0b1c/checkpoint")
    assert checkpoint.status_code == 200, checkpoint.text
    created = client.post("/api/sessions", json={"session_id": "7d2e0b1c", "project": "api"})
    assert created.status_code < 300, created.text
    assert stored.get_session("7d2e0b1c").id == "7d2e0b1c"


def test_mcp_get_session_takes_a_prefix(stored: Memory) -> None:
    server = build_server(lambda: stored)

    async def main() -> tuple[Any, Any]:
        async with Client(server) as session:
            found = await session.call_tool("get_session", {"session_id": "7d2e0b1c"})
            unknown = await session.call_tool("get_session", {"session_id": "deadbeef"})
            return found, unknown

    found, unknown = anyio.run(main)
    assert not found.is_error, found.content
    assert found.structured_content["session"]["id"] == ALONE
    assert unknown.is_error
    assert "no session 'deadbeef'" in unknown.content[0].text


def test_mcp_session_end_by_prefix_ends_the_clients_current_session(stored: Memory) -> None:
    server = build_server(lambda: stored)
    fresh = "c0ffee00-3333-4c1a-9e2f-0a1b2c3d4e5f"

    async def main() -> Any:
        async with Client(server) as session:
            await session.call_tool("session_start", {"session_id": fresh, "project": "api"})
            return await session.call_tool(
                "session_end", {"session_id": "c0ffee00", "project": "api"}
            ), await session.call_tool(
                "save_observation", {"content": "after the end", "project": "api"}
            )

    ended, saved = anyio.run(main)
    assert not ended.is_error, ended.content
    assert ended.structured_content["id"] == fresh
    assert stored.get_session(fresh).status == "ended"
    assert not saved.is_error, saved.content
    latest = stored.list_memories(project="api", limit=1)[0]
    assert latest.content == "after the end" and latest.session_id != fresh  # not the ended one


def test_the_store_reads_the_ids_a_prefix_begins_exactly(any_memory: Memory) -> None:
    """Case and LIKE's wildcards count as written, on SQLite and PostgreSQL alike."""
    for session_id, project in (
        ("Ab%_cdef-1", "api"),
        ("ab%_cdef-2", "api"),
        ("Ab%_cdefX3", "web"),
        ("AbXYcdef-4", "api"),
    ):
        any_memory.session_start(session_id, project=project)
    store = any_memory.store
    assert store.session_ids_starting("Ab%_cdef") == ["Ab%_cdef-1", "Ab%_cdefX3"]
    assert store.session_ids_starting("Ab%_cdef", projects=["api"]) == ["Ab%_cdef-1"]
    assert store.session_ids_starting("zz") == []


def test_a_delete_takes_a_whole_session_id_and_names_the_one_a_prefix_begins(
    stored: Memory,
) -> None:
    """A prefix reads a session; what deletes by session takes the id whole."""
    for delete in (
        lambda: stored.delete(session_id="7d2e0b1c", dry_run=True),
        lambda: stored.forget(session_id="7d2e0b1c", dry_run=True),
    ):
        with pytest.raises(InvalidInput, match=f"whole session id.*{ALONE}"):
            delete()
    assert stored.forget(session_id=ALONE, dry_run=True).memories
    with pytest.raises(NotFound, match="no session 'deadbeef'"):
        stored.delete(session_id="deadbeef", dry_run=True)


def test_memories_without_a_session_row_name_it_by_asking_for_one(stored: Memory) -> None:
    """Memories filed under a session without a row (an import) make its id a session's:
    asked whether one exists (the first found answers), where the session's memories were
    counted, all of them read."""
    stored.store.delete_sessions([ALONE])
    statements: list[str] = []
    conn = stored.store.connection()  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        assert session_id_for(stored.core, ALONE) == ALONE
    finally:
        conn.set_trace_callback(None)
    memories = [sql for sql in statements if "FROM memories" in sql]
    assert memories and all("count(" not in sql and "LIMIT 1" in sql for sql in memories)
    stored.store.delete_memories(stored.store.memory_ids(MemoryFilter(session_id=ALONE)))
    with pytest.raises(NotFound, match="no session"):
        session_id_for(stored.core, ALONE)
