"""Capture pipeline through the facade: incremental idempotent ingest, observations, checkpoint."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.models import MemoryFilter, SearchHit, utcnow
from memlane.search.selection import select_recall
from memlane.service import Memory
from memlane.text import content_words
from tests.conftest import FIXTURES

DATA = Path(__file__).parent / "data" / "hooks"


def turns_of(memory: Memory, session: str) -> list[str]:
    rows = memory.store.list_memories(
        MemoryFilter(session_id=session, kinds=("turn",)), limit=10_000, newest_first=False
    )
    return [row.source_id or "" for row in rows]


def test_incremental_ingest_is_idempotent_and_resumes(memory: Memory, tmp_path: Path) -> None:
    lines = (DATA / "transcript.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines[:7]))
    first = memory.ingest_transcript("s1", str(path), project="billing-api")
    assert first.chunks > 0 and first.end_offset == path.stat().st_size
    again = memory.ingest_transcript("s1", str(path), project="billing-api")
    assert (again.chunks, again.turns) == (0, 0)
    # A half-written last line is left for next time.
    with path.open("ab") as handle:
        handle.write(b"".join(lines[7:]) + b'{"type": "user", "message"')
    second = memory.ingest_transcript("s1")  # path remembered from the session
    assert second.start_offset == first.end_offset
    assert second.corrupt_lines == 1  # the broken line inside the fixture
    ids = turns_of(memory, "s1")
    assert ids == [f"s1:{i}" for i in range(len(ids))]
    session = memory.get_session("s1")
    assert session.transcript_offset < path.stat().st_size  # the partial line is not consumed


def test_ingest_in_small_batches_equals_one_pass(memory: Memory, tmp_path: Path) -> None:
    from memlane.capture.pipeline import ingest_transcript

    path = DATA / "transcript.jsonl"
    one = ingest_transcript(memory.core, "one", str(path), project="p")
    many = ingest_transcript(memory.core, "many", str(path), project="p", batch_turns=1)
    assert many.turns == one.turns
    texts = {
        sid: [m.content for m in memory.list_memories(project="p", session_id=sid, kinds=["turn"])]
        for sid in ("one", "many")
    }
    assert "".join(sorted(texts["one"])).replace(" ", "") != ""
    assert set("\n".join(texts["many"]).split()) == set("\n".join(texts["one"]).split())


def test_concurrent_ingests_never_duplicate_chunks(memory: Memory, settings: Settings) -> None:
    from memlane.service import open as open_memory

    path = DATA / "transcript.jsonl"
    memory.session_start("c", project="p", transcript_path=str(path))

    def ingest() -> None:
        with open_memory(settings=settings) as other:
            other.ingest_transcript("c")

    threads = [threading.Thread(target=ingest) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    single = memory.ingest_transcript("c-ref", str(path), project="p")
    assert len(turns_of(memory, "c")) == single.chunks


def test_tool_events_are_typed_deduplicated_and_dropped(memory: Memory, tmp_path: Path) -> None:
    args = {"file_path": str(tmp_path / "src" / "a.py"), "old_string": "x", "new_string": "y"}
    first = memory.record_tool_event("s", "Edit", args, {}, cwd=str(tmp_path), project="p")
    repeat = memory.record_tool_event("s", "Edit", args, {}, cwd=str(tmp_path), project="p")
    assert first is not None and repeat is not None
    assert (first.status, repeat.status) == ("created", "deduplicated")
    assert memory.record_tool_event("s", "TodoWrite", {"todos": []}, {}, project="p") is None
    assert (
        memory.record_tool_event("s", "mcp__memlane__search", {"q": "x"}, {}, project="p") is None
    )
    stored = memory.get(first.id)
    assert (stored.type, stored.files) == ("file-write", ("src/a.py",))


def test_secrets_never_reach_the_store(memory: Memory, tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "A" * 40
    memory.record_prompt("s", f"deploy with ANTHROPIC_API_KEY={key} please", project="p")
    memory.record_tool_event(
        "s", "Bash", {"command": f"curl -H 'Authorization: Bearer {key}' x"}, "ok", project="p"
    )
    path = tmp_path / "t.jsonl"
    record = {
        "type": "user",
        "sessionId": "s",
        "message": {"role": "user", "content": f"key {key}"},
    }
    path.write_text(json.dumps(record) + "\n")
    memory.ingest_transcript("s", str(path), project="p")
    for row in memory.list_memories(project="p", limit=100):
        assert key not in row.content and key not in row.title


def test_prompts_are_numbered_per_session(memory: Memory) -> None:
    numbers = [memory.record_prompt("s", text, project="p").number for text in ("a b", "c d", "/x")]
    assert numbers == [1, 2, 3]
    assert memory.record_prompt("other", "hello world", project="p").number == 1


def test_checkpoint_reads_the_last_message(memory: Memory, tmp_path: Path) -> None:
    assert memory.refresh_checkpoint("missing") is None
    memory.record_prompt("s", "make retries idempotent", project="p")
    memory.record_tool_event(
        "s",
        "Write",
        {"file_path": str(tmp_path / "r.py"), "content": "x"},
        {},
        cwd=str(tmp_path),
        project="p",
    )
    checkpoint = memory.refresh_checkpoint("s", "Done.\n\nNext steps:\n- add tests\n- ship it")
    assert checkpoint is not None
    assert checkpoint.task == "make retries idempotent"
    assert checkpoint.next_steps == ("add tests", "ship it")
    assert memory.latest_checkpoint(project="p") == memory.latest_checkpoint(session_id="s")


def _hit(session: str, text: str, score: float = 0.9) -> SearchHit:
    return SearchHit(
        id=1,
        project="p",
        kind="note",
        type="note",
        title="",
        content=text,
        created_at=utcnow(),
        score=score,
        session_id=session,
    )


def test_select_recall_rules() -> None:
    hits = [
        _hit("now", "retry idempotency key"),  # the current session: the agent has it
        _hit("old", "the and with from", 0.2),  # weak: scores are absolute, the floor drops it
        _hit("old", "retry uses an idempotency key", 0.25),  # below the floor
        _hit("old", "idempotency key for every retry"),
        _hit("old", "retry again"),
    ]
    chosen = select_recall(
        "why does the retry use an idempotency key?", hits, session_id="now", limit=1, min_score=0.3
    )
    assert [h.content for h in chosen] == ["idempotency key for every retry"]
    assert select_recall("ok the and", hits, session_id=None, limit=3) == []
    assert "日" in content_words("日本語のテスト")


@pytest.mark.skipif(not FIXTURES.exists(), reason="../shared fixtures absent (present in CI)")
def test_real_transcripts_parse_completely(memory: Memory) -> None:
    paths = sorted(FIXTURES.rglob("*.jsonl"))
    assert len(paths) >= 4
    for number, path in enumerate(paths):
        session = f"real-{number}"
        report = memory.ingest_transcript(session, str(path), project="real")
        assert report.corrupt_lines == 0, path
        assert report.end_offset == path.stat().st_size, path
        assert report.chunks > 0, path
        assert memory.ingest_transcript(session).chunks == 0
        for row in memory.list_memories(project="real", session_id=session, kinds=["turn"]):
            assert len(row.content) <= 512 * 4


def test_transcript_rewritten_shorter_replaces_its_chunks(memory: Memory, tmp_path: Path) -> None:
    lines = (DATA / "transcript.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    first = memory.ingest_transcript("s1", str(path), project="p")
    assert first.chunks > 0
    old = {m.content for m in memory.list_memories(project="p", session_id="s1", kinds=["turn"])}
    # Rewritten shorter: the stored offset now lies past the end of the file.
    path.write_bytes(b"".join(lines[:4]))
    assert path.stat().st_size < first.end_offset
    again = memory.ingest_transcript("s1")
    assert again.replaced_chunks == first.chunks
    assert again.end_offset == path.stat().st_size
    reference = memory.ingest_transcript("ref", str(path), project="p")
    rows = memory.list_memories(project="p", session_id="s1", kinds=["turn"])
    expected = memory.list_memories(project="p", session_id="ref", kinds=["turn"])
    assert sorted(m.content for m in rows) == sorted(m.content for m in expected)
    assert len(rows) == reference.chunks > 0
    assert ids_are_dense(turns_of(memory, "s1"), "s1")
    assert old - {m.content for m in rows}, "content gone from the file is gone from memory"
    # Idempotent afterwards: nothing new, nothing dropped.
    third = memory.ingest_transcript("s1")
    assert (third.chunks, third.replaced_chunks) == (0, 0)
    assert len(turns_of(memory, "s1")) == len(rows)
    # Growing again resumes from the new offset.
    path.write_bytes(b"".join(lines))
    fourth = memory.ingest_transcript("s1")
    assert fourth.replaced_chunks == 0 and fourth.start_offset == again.end_offset
    words = set(
        " ".join(
            m.content
            for m in memory.list_memories(project="p", session_id="s1", kinds=["turn"], limit=1000)
        ).split()
    )
    assert words == set(" ".join(old).split())


def test_rewritten_transcript_keeps_turns_from_other_sources(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes((DATA / "transcript.jsonl").read_bytes())
    memory.ingest_transcript("s2", str(path), project="p")
    memory.save("imported turn", project="p", type="turn", kind="turn", session_id="s2")
    path.write_bytes(b"")
    report = memory.ingest_transcript("s2")
    assert report.replaced_chunks > 0 and report.end_offset == 0
    left = memory.list_memories(project="p", session_id="s2", kinds=["turn"])
    assert [m.content for m in left] == ["imported turn"]
    assert memory.get_session("s2").transcript_offset == 0


def ids_are_dense(ids: list[str], session: str) -> bool:
    return sorted(ids, key=lambda s: int(s.rsplit(":", 1)[1])) == [
        f"{session}:{i}" for i in range(len(ids))
    ]


def test_interleaved_small_batches_keep_chunk_ids_dense(memory: Memory, settings: Settings) -> None:
    # Four ingests of one session, one turn per transaction: their batches interleave,
    # so each must notice when another moved the offset and count the chunks again.
    from memlane.capture.pipeline import ingest_transcript
    from memlane.service import open as open_memory

    path = DATA / "transcript.jsonl"
    memory.session_start("i", project="p", transcript_path=str(path))

    def ingest() -> None:
        with open_memory(settings=settings) as other:
            ingest_transcript(other.core, "i", batch_turns=1)

    threads = [threading.Thread(target=ingest) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reference = ingest_transcript(memory.core, "i-ref", str(path), project="p", batch_turns=1)
    ids = turns_of(memory, "i")
    assert len(ids) == len(set(ids)) == reference.chunks
    assert ids_are_dense(ids, "i")


def test_recall_injects_nothing_for_a_prompt_naming_only_things_memory_lacks(
    memory: Memory,
) -> None:
    from memlane.search.selection import holds_word

    memory.save(
        "Added a migration for the annotations table: a state column, default open.",
        project="spotter",
        session_id="old",
    )
    memory.save("The LiveView tests needed lazy_html as a test dependency.", project="spotter")
    memory.save("The report service wrote temporary PDFs to the node disk.", project="infra")
    assert holds_word(memory.store, "lazy_html") and holds_word(memory.store, "LiveView")
    assert holds_word(memory.store, "PDF")  # the start of a longer word: "PDFs"
    assert not holds_word(memory.store, "total_cents")

    def injected(prompt: str) -> list[SearchHit]:
        memory.record_prompt("new", prompt, project="spotter")  # as the hook does, first
        hits = memory.recall(prompt, project="spotter", limit=9, mode="keyword")
        return memory.select_recall(prompt, hits, session_id="new")

    assert injected("which migration did we add for the annotations table with a state column?")
    unknown = "which migration did we add for the orders table with a total_cents column?"
    assert injected(unknown) == []
    # Its ordinary words alone would have injected the annotations migration.
    hits = memory.recall(unknown, project="spotter", limit=9, mode="keyword")
    assert select_recall(unknown, hits, session_id="new", limit=3, min_score=0.3)
    assert injected("which test dependency did the LiveView tests need?")


def test_the_observation_and_the_unit_of_one_tool_call_are_shown_once(
    memory: Memory, tmp_path: Path
) -> None:
    """A web search recorded by PostToolUse (a digest) and by the transcript (its results)
    share few words, yet record one call: recall shows one of them and leaves the room to
    another memory (here the file that holds the answer); a search lists them as one hit."""
    query = "xterm.js scroll not working embedded page captures scroll events"
    results = "\n".join(
        f"- xterm.js issue {n}: wheel events and scroll captured by the terminal viewport"
        for n in range(12)
    )
    titles = ["Mouse wheel handling inside iframes", "Viewport overflow in embedded widgets"]
    memory.record_tool_event(
        "web",
        "WebSearch",
        {"query": query},
        {"query": query, "results": [{"title": t, "url": "https://example.org"} for t in titles]},
        project="p",
        tool_use_id="toolu_search1",
    )
    call = {
        "type": "tool_use",
        "id": "toolu_search1",
        "name": "WebSearch",
        "input": {"query": query},
    }
    answer = {"type": "tool_result", "tool_use_id": "toolu_search1", "content": results}
    path = tmp_path / "t.jsonl"
    records = [
        {"type": "user", "sessionId": "web", "message": {"role": "user", "content": "scroll?"}},
        {
            "type": "assistant",
            "sessionId": "web",
            "message": {"role": "assistant", "content": [call]},
        },
        {"type": "user", "sessionId": "web", "message": {"role": "user", "content": [answer]}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    memory.ingest_transcript("web", str(path), project="p")
    memory.save(
        "the terminal_scrolled event syncs the transcript when the xterm terminal scrolls",
        project="p",
    )

    prompt = "which event follows the xterm terminal scroll?"
    hits = memory.recall(prompt, project="p", limit=9, min_score=0.0, mode="keyword")
    unit, observation, note = (
        next(h for h in hits if h.type == kind) for kind in ("tool", "research", "note")
    )
    assert unit.call == observation.call == "toolu_search1" and note.call is None
    # Ranked as in the real session: the search above the memory holding the answer.
    chosen = select_recall(prompt, [unit, observation, note], session_id=None, limit=2)
    assert chosen == [unit, note]
    # A search lists the call once, standing for both (recall keeps them apart for
    # select_recall, which shows the first whose passage holds the prompt's words).
    found = memory.search(prompt, project="p", limit=9, mode="keyword")
    (call,) = (h for h in found if h.call == "toolu_search1")
    assert {unit.id, observation.id} <= set(call.members)


def test_a_file_write_that_did_not_fail_has_its_result_dropped_not_filtered(
    memory: Memory,
) -> None:
    """Nothing reads a successful write's or edit's result (often the file again): its
    unit and observation show the input. A result that says it failed, or may once
    filtered (it opens with a mark), is filtered and read as before."""
    from dataclasses import replace

    from memlane.capture.observations import derived_observations
    from memlane.capture.pipeline import _scrubbed
    from memlane.capture.transcript import ToolCall, Turn
    from memlane.capture.units import turn_units

    edit = {"file_path": "/p/app.py", "old_string": "x = 1", "new_string": "x = 2"}
    write = {"file_path": "/p/app.py", "content": "x = 1\nprint(x)\n"}
    shown = "The file /p/app.py has been updated. Here's the result:\n     1\u2192x = 1"
    calls = (
        ToolCall("Write", write, "t1", shown, answered=True),
        ToolCall("Edit", edit, "t2", "  " + shown, answered=True),
        ToolCall("Write", write, "t3", "<tool_use_error>File not read</tool_use_error>"),
        ToolCall("Edit", edit, "t4", "<private>a</private><tool_use_error>No</tool_use_error>"),
        ToolCall("Edit", edit, "t5", "String not found in file", is_error=True),
        ToolCall("Bash", {"command": "cat app.py"}, "t6", "x = 1\nprint(x)", answered=True),
    )
    turn = Turn("assistant", "", blocks=calls, cwd="/p", uuid="u1", tool_names=("Write",))
    clean, _ = _scrubbed(memory.core, turn)
    results = [block.result for block in clean.blocks if isinstance(block, ToolCall)]
    assert results[:2] == ["", ""]
    assert results[2:] == [memory.core.scrub(call.result) for call in calls[2:]]
    # Units and observations are those of the turn with every result filtered.
    whole = replace(
        turn, blocks=tuple(replace(call, result=memory.core.scrub(call.result)) for call in calls)
    )
    assert turn_units(clean) == turn_units(whole)
    observed = [d.observation for d in derived_observations([clean])]
    assert observed == [d.observation for d in derived_observations([whole])]
    assert [o.title for o in observed][:5] == [
        "Wrote app.py",
        "Edited app.py",
        "Failed to write app.py",
        "Failed to edit app.py",
        "Failed to edit app.py",
    ]
