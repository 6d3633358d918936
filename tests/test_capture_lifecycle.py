"""Session wrap-ups on a real SQLite file: the summary and checkpoint that Stop,
PreCompact, an idle close and ``recover`` write, and what they must leave alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from memlane.mcp_server import build_server
from memlane.models import Summary
from memlane.service import Memory


def _agent_summary(session_id: str) -> Summary:
    return Summary(
        session_id=session_id,
        project="p",
        is_auto_generated=False,
        request="wire redis streams into the billing worker",
        learned=("consumer groups need XACK or entries stay pending",),
        next_steps=("retry pending entries with XAUTOCLAIM",),
    )


def test_the_summary_the_agent_wrote_outlives_stop_and_the_idle_close(memory: Memory) -> None:
    t0 = datetime.now(UTC)  # the summary saved below is activity at the real time
    memory.session_start("s", project="p", now=t0)
    memory.record_prompt("s", "how do redis stream consumer groups work?", project="p", now=t0)
    assert memory.save_summary(_agent_summary("s")).status == "created"
    memory.save("ran the worker tests", project="p", session_id="s", type="change", created_at=t0)

    assert memory.refresh_summary("s") is None  # what Stop does after the agent's summary
    memory.session_start("next", project="p", now=t0 + timedelta(hours=10))  # closes "s" idle
    assert memory.get_session("s").status == "auto_closed"

    kept = memory.get_summary("s")
    assert kept is not None
    assert kept.is_auto_generated is False
    assert kept.learned == ("consumer groups need XACK or entries stay pending",)
    hits = memory.search("consumer groups XACK", project="p", mode="keyword", kinds=("summary",))
    assert [hit.id for hit in hits] == [kept.id]


def test_a_summary_the_agent_writes_replaces_the_rule_based_one(memory: Memory) -> None:
    memory.session_start("s", project="p")
    memory.record_prompt("s", "how do redis stream consumer groups work?", project="p")
    ruled = memory.refresh_summary("s")
    assert ruled is not None and ruled.is_auto_generated
    memory.save_summary(_agent_summary("s"))
    summary = memory.get_summary("s")
    assert summary is not None and not summary.is_auto_generated


def test_a_refresh_without_a_message_keeps_the_checkpoints_next_steps(memory: Memory) -> None:
    memory.session_start("s", project="p")
    memory.record_prompt("s", "migrate the billing worker to redis streams", project="p")
    answer = (
        "The consumer is in.\n\nNext steps:\n1. Add XAUTOCLAIM retries\n2. Load-test the group"
        "\n\nShould we keep the old queue for a week?"
    )
    memory.refresh_checkpoint("s", answer)
    memory.save("edited worker.py", project="p", session_id="s", type="file-write")

    kept = memory.refresh_checkpoint("s", None)  # PreCompact: Claude Code sends no message
    assert kept is not None
    assert kept.next_steps == ("Add XAUTOCLAIM retries", "Load-test the group")
    assert kept.questions == ("Should we keep the old queue for a week?",)

    cleared = memory.refresh_checkpoint("s", "All done: the group is load-tested.")
    assert cleared is not None and cleared.next_steps == () and cleared.questions == ()


def test_a_session_of_saved_knowledge_closed_idle_has_a_summary(memory: Memory) -> None:
    t0 = datetime.now(UTC)
    memory.session_start("s", project="p", now=t0)
    memory.save(
        "Use Redis streams, not Kafka: one broker fewer",
        type="decision",
        session_id="s",
        project="p",
    )
    memory.save("XACK every entry or it stays pending", type="lesson", session_id="s", project="p")
    memory.save("Added the dead-letter stream", type="feature", session_id="s", project="p")
    memory.save("The worker retries three times", session_id="s", project="p")  # a note
    memory.session_start("next", project="p", now=t0 + timedelta(hours=10))  # closes "s" idle

    summary = memory.get_summary("s")
    assert summary is not None and summary.is_auto_generated
    assert summary.completed == ("Added the dead-letter stream",)
    assert summary.learned == (
        "Use Redis streams, not Kafka: one broker fewer",
        "XACK every entry or it stays pending",
        "The worker retries three times",
    )


def test_imported_notes_naming_a_session_get_it_no_summary(memory: Memory, tmp_path: Path) -> None:
    """An import's records that name a session (a chat export's `session`) were not saved
    in a session memlane saw: its idle close writes no summary restating them."""
    records = tmp_path / "notes.jsonl"
    records.write_text(
        "".join(
            f'{{"id": "n{i}", "session": "conv-{i}", "text": "fact number {i} about the cellar",'
            f' "timestamp": "2024-05-01T10:00:00+00:00"}}\n'
            for i in range(3)
        ),
        encoding="utf-8",
    )
    memory.import_jsonl(str(records), project="p")
    memory.session_start("now", project="p", now=datetime.now(UTC) + timedelta(days=1))
    assert all(memory.get_summary(f"conv-{i}") is None for i in range(3))


def test_a_session_of_mcp_saves_ended_over_mcp_is_resumed_with_its_summary(
    memory: Memory,
) -> None:
    server = build_server(lambda: memory, default_project="p")

    async def call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(name, args)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content

    async def session() -> dict[str, Any]:
        async with Client(server) as client:
            await call(client, "session_start", {"session_id": "m"})
            for content in ("consumer groups need XACK", "XAUTOCLAIM takes pending entries"):
                await call(client, "save_observation", {"content": content, "type": "discovery"})
            await call(client, "session_end", {})
            return await call(client, "resume_session", {"session_id": "m"})

    resumed = anyio.run(session)
    assert resumed["summary"]["learned"] == [
        "consumer groups need XACK",
        "XAUTOCLAIM takes pending entries",
    ]


def test_a_transcript_ingested_through_the_python_api_is_summed_up(
    memory: Memory, transcript: Path
) -> None:
    memory.session_start("s", project="p")
    assert memory.ingest_transcript("s", str(transcript), project="p").chunks
    summary = memory.get_summary("s")
    assert summary is not None and summary.is_auto_generated and summary.request

    memory.session_start("other", project="p")
    memory.save_summary(_agent_summary("other"))  # a session the agent summed up itself
    memory.ingest_transcript("other", str(transcript), project="p")
    kept = memory.get_summary("other")
    assert kept is not None and not kept.is_auto_generated


def _turn(kind: str, uuid: str, text: str, at: str) -> str:
    """One Claude Code transcript line: a user's prompt or an assistant's text."""
    message: dict[str, Any] = (
        {"role": "user", "content": text}
        if kind == "user"
        else {"role": "assistant", "content": [{"type": "text", "text": text}]}
    )
    return json.dumps(
        {"type": kind, "sessionId": "s", "uuid": uuid, "timestamp": at, "message": message}
    )


def test_a_session_read_from_its_transcript_alone_resumes_with_the_answers_next_steps(
    memory: Memory, tmp_path: Path
) -> None:
    """Without ``last_assistant_message`` (``memlane recover``, a Claude Code before the
    field, PreCompact) the next steps are read from the last answer as stored."""
    answer = (
        "The consumer group is wired into the billing worker and its tests pass.\n\n"
        + "It reads with XREADGROUP and acknowledges each entry after the charge. " * 14
        + "\n\nNext steps:\n- Add XAUTOCLAIM retries for pending entries\n"
        "- Load-test the consumer group\n\nShould we keep the old queue for a week?"
    )
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                _turn(
                    "user",
                    "u1",
                    "wire redis streams into the billing worker",
                    "2026-01-10T09:00:00Z",
                ),
                _turn("assistant", "a1", "Reading the worker first.", "2026-01-10T09:00:05Z"),
                _turn("user", "u2", "go on and finish it", "2026-01-10T09:10:00Z"),
                _turn("assistant", "a2", answer, "2026-01-10T09:20:00Z"),
            ]
        )
        + "\n"
    )
    memory.session_start("s", project="p")
    assert memory.ingest_transcript("s", str(path), project="p").chunks

    checkpoint = memory.refresh_checkpoint("s")
    assert checkpoint is not None
    assert checkpoint.next_steps == (
        "Add XAUTOCLAIM retries for pending entries",
        "Load-test the consumer group",
    )
    assert checkpoint.questions == ("Should we keep the old queue for a week?",)

    # A message, when the agent sends one, is what the checkpoint reads.
    told = memory.refresh_checkpoint("s", "All done: the group is load-tested.")
    assert told is not None and told.next_steps == () and told.questions == ()


def test_a_later_message_without_steps_is_not_undone_by_an_older_stored_answer(
    memory: Memory, tmp_path: Path
) -> None:
    """The checkpoint a later message built stays when a refresh comes without one: the
    transcript's last stored turn may be older than that message (written late)."""
    path = tmp_path / "s.jsonl"
    older = "The group is wired.\n\nNext steps:\n- Add XAUTOCLAIM retries"
    path.write_text(
        "\n".join(
            [
                _turn("user", "u1", "wire redis streams in", "2026-01-10T09:00:00Z"),
                _turn("assistant", "a1", older, "2026-01-10T09:20:00Z"),
            ]
        )
        + "\n"
    )
    memory.session_start("s", project="p")
    memory.ingest_transcript("s", str(path), project="p")
    done = memory.refresh_checkpoint("s", "Both done, nothing left.")  # a Stop's message
    assert done is not None and done.next_steps == ()
    again = memory.refresh_checkpoint("s")  # SessionEnd, PreCompact: no message
    assert again is not None and again.next_steps == () and again.questions == ()


def test_a_reply_kept_without_a_transcript_gives_steps_from_its_answer_not_its_prompt(
    memory: Memory,
) -> None:
    memory.session_start("s", project="p")
    memory.record_prompt(
        "s", "Should we drop the legacy queue? Wire the worker first.", project="p"
    )
    memory.record_reply(
        "s",
        "The worker is wired.\n\nNext steps:\n- Drop the legacy queue",
        key="turn-1",
        agent="codex",
        project="p",
    )
    checkpoint = memory.refresh_checkpoint("s")
    assert checkpoint is not None
    assert checkpoint.next_steps == ("Drop the legacy queue",)
    assert checkpoint.questions == ()  # the prompt's question is not the answer's
