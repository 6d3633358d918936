"""Grouping of search hits: only pieces of one split record, and a group shows them all."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlane.config import Settings
from memlane.models import TRANSCRIPT_SOURCE, Memory
from memlane.search.grouping import group_pieces
from memlane.service import open as open_memory
from tests.conftest import MEMLANE_CMD, run_env

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def piece(
    id_: int,
    *,
    session: str | None = "s1",
    source: str = TRANSCRIPT_SOURCE,
    at: datetime = T0,
    **metadata: Any,
) -> Memory:
    return Memory(
        id=id_,
        project="p",
        kind="turn",
        type="turn",
        content=f"piece {id_}",
        created_at=at,
        updated_at=at,
        session_id=session,
        source=source,
        metadata=metadata,
    )


def members(groups: list[Any]) -> list[list[int]]:
    return [[m.id for m in g.members] for g in groups]


def test_chunks_of_one_turn_group_and_list_every_piece() -> None:
    a = piece(1, chunk_index=0, role="assistant")
    b = piece(2, chunk_index=1, role="assistant")
    c = piece(3, chunk_index=2, role="assistant")
    far = piece(4, chunk_index=9, role="assistant")
    groups = group_pieces([(b, 0.4), (far, 0.5), (c, 0.9), (a, 0.1)])
    assert [g.best.id for g in groups] == [3, 4]
    assert groups[0].score == 0.9
    assert members(groups) == [[1, 2, 3], [4]]


def test_a_question_and_its_answer_stay_apart() -> None:
    q = piece(1, chunk_index=0, role="user")
    a = piece(2, chunk_index=1, role="assistant")
    assert members(group_pieces([(q, 0.9), (a, 0.8)])) == [[1], [2]]


def test_units_group_only_parts_of_one_block() -> None:
    # Two tool calls of one turn, the second cut in two parts; then the next turn.
    call_a = piece(1, chunk_index=0, role="assistant", turn="t1", part=0)
    call_b = piece(2, chunk_index=1, role="assistant", turn="t1", part=0)
    call_b2 = piece(3, chunk_index=2, role="assistant", turn="t1", part=1)
    next_turn = piece(4, chunk_index=3, role="assistant", turn="t2", part=1)
    groups = group_pieces([(call_a, 0.9), (call_b, 0.8), (call_b2, 0.7), (next_turn, 0.6)])
    assert members(groups) == [[1], [2, 3], [4]]


def test_nothing_but_transcript_pieces_is_grouped() -> None:
    # Imported chat turns: one timestamp per session, even a chunk index in the
    # user's metadata. Each is its own evidence.
    imported = [piece(i, source="jsonl", chunk_index=i, role="user") for i in range(4)]
    same_time = [piece(10 + i, source="memlane") for i in range(3)]
    no_session = [piece(20 + i, session=None, chunk_index=i, role="user") for i in range(2)]
    hits = [(m, 1.0 - 0.01 * i) for i, m in enumerate(imported + same_time + no_session)]
    assert all(len(g.members) == 1 for g in group_pieces(hits))
    assert group_pieces([]) == []


def recorded_call(
    id_: int, call: str, *, kind: str, content: str, title: str, session: str = "s1"
) -> Memory:
    """A memory recording one tool call: the hook's observation or a transcript unit."""
    source = TRANSCRIPT_SOURCE if kind == "turn" else "memlane"
    memory = piece(id_, session=session, source=source, call=call)
    return replace(memory, kind=kind, content=content, title=title)


def test_the_observation_and_the_units_of_one_call_are_one_hit() -> None:
    observation = recorded_call(
        1, "toolu_1", kind="observation", title="Ran: bd close x", content="Ran: bd close x: ok"
    )
    unit = recorded_call(
        7, "toolu_1", kind="turn", title="$ bd close x", content="$ bd close x\nok"
    )
    other_call = recorded_call(8, "toolu_2", kind="turn", title="$ bd list", content="$ bd list")
    elsewhere = recorded_call(
        9, "toolu_1", kind="turn", title="$ bd close x", content="$ bd close x", session="s2"
    )
    groups = group_pieces([(observation, 0.9), (other_call, 0.85), (unit, 0.8), (elsewhere, 0.7)])
    # One call in one session is one answer; a call id says nothing across sessions.
    assert members(groups) == [[1, 7], [8], [9]]
    assert groups[0].best is observation and groups[0].score == 0.9


def test_a_call_is_shown_by_the_member_that_shows_what_it_did() -> None:
    """A transcript-captured session's observation of a Read holds only ``Read <file>``;
    scored first, it stood in for the unit of the same call, which shows the lines."""
    named = recorded_call(
        1, "toolu_r", kind="observation", title="Read lib/app.ex", content="Read lib/app.ex"
    )
    read = recorded_call(
        5, "toolu_r", kind="turn", title="Read lib/app.ex", content="Read lib/app.ex\ndef run"
    )
    (group,) = group_pieces([(named, 0.9), (read, 0.6)])
    assert group.best is read and group.score == 0.9
    # Of two members that both show something, the better scored stays.
    digest = replace(named, content="Read lib/app.ex (12 lines)\ndef run")
    (group,) = group_pieces([(digest, 0.9), (read, 0.6)])
    assert group.best is digest


def test_equal_scores_keep_the_first_and_the_input_order() -> None:
    a = piece(1, chunk_index=0, role="assistant")
    b = piece(2, chunk_index=1, role="assistant")
    lone = piece(3, session="s2", chunk_index=0, role="assistant")
    groups = group_pieces([(b, 0.5), (lone, 0.5), (a, 0.5)])
    assert [g.best.id for g in groups] == [2, 3]


def chat(with_chunk_index: bool) -> list[dict[str, Any]]:
    """Plain JSONL records of a two-person chat: one timestamp per session."""
    lines = [
        ("s1", "Caroline", "I went to the pottery workshop on Saturday."),
        ("s1", "Melanie", "Pottery sounds fun, did you make a bowl at the workshop?"),
        ("s1", "Caroline", "Yes, a blue bowl, and I signed up for the next pottery class."),
        ("s1", "Melanie", "My kids painted pottery at camp last summer."),
        ("s2", "Caroline", "The adoption agency called me back about the interview."),
        ("s2", "Melanie", "Good luck with the adoption interview next week!"),
        ("s2", "Caroline", "Thanks! I bought a new pottery wheel for the studio too."),
        ("s3", "Melanie", "We camped by the lake and the kids loved it."),
        ("s3", "Caroline", "I want to take my pottery to the lake next time."),
    ]
    stamps = {"s1": "2023-05-08T13:56:00", "s2": "2023-05-25T10:00:00", "s3": "2023-06-09T18:30:00"}
    records = []
    for i, (session, speaker, text) in enumerate(lines):
        record: dict[str, Any] = {
            "id": f"{session}#{i}",
            "session": session,
            "speaker": speaker,
            "text": text,
            "timestamp": stamps[session],
        }
        if with_chunk_index:
            record["metadata"] = {"chunk_index": i}
        records.append(record)
    return records


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_the_same_chat_with_and_without_chunk_index_gives_the_same_hits(
    settings: Settings, tmp_path: Path, mode: str
) -> None:
    tops = []
    for with_index in (False, True):
        path = tmp_path / f"chat-{with_index}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in chat(with_index)) + "\n")
        mem = open_memory(
            str(tmp_path / f"chat-{with_index}.db"), settings=replace(settings, embedder="toy")
        )
        try:
            assert mem.import_jsonl(str(path), project="chat").created == 9
            mem.embed_backfill()
            hits = mem.search("pottery workshop bowl", project="chat", limit=10, mode=mode)
            tops.append([(h.source_id, h.source_ids) for h in hits])
        finally:
            mem.close()
    assert tops[0] == tops[1]
    # Every pottery turn is its own hit, although a session shares one timestamp.
    assert len(tops[0]) >= 6
    assert all(ids == (sid,) for sid, ids in tops[0])


def long_reply_transcript(path: Path) -> None:
    """A Claude Code transcript whose assistant reply is cut into several chunks."""
    paragraphs = [
        f"Step {i}: the ReviewTokenStore keeps review tokens in a sqlite table "
        + "with an expiry column. " * 12
        for i in range(12)
    ]
    events = [
        {
            "type": "user",
            "sessionId": "long",
            "cwd": "/work/review",
            "uuid": "u-1",
            "timestamp": "2026-01-10T09:00:00.000Z",
            "message": {"role": "user", "content": "How does the review token store work?"},
        },
        {
            "type": "assistant",
            "sessionId": "long",
            "cwd": "/work/review",
            "uuid": "a-1",
            "timestamp": "2026-01-10T09:00:05.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": "\n\n".join(paragraphs)}],
            },
        },
    ]
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")


def test_search_json_shows_the_members_of_a_group(
    settings: Settings, home: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "long.jsonl"
    long_reply_transcript(transcript)
    mem = open_memory(settings=settings)
    try:
        # The transcript's pieces only: no summary among the hits.
        report = mem.ingest_transcript("long", str(transcript), project="review", summarize=False)
        pieces = [
            m
            for m in mem.list_memories(project="review", session_id="long", kinds=["turn"])
            if "ReviewTokenStore" in m.content
        ]
    finally:
        mem.close()
    assert report.chunks >= 3 and len(pieces) >= 3
    out = subprocess.run(
        [*MEMLANE_CMD, "search", "ReviewTokenStore", "--project", "review", "--json"],
        capture_output=True,
        text=True,
        env=run_env(home),
        timeout=120,
        check=True,
    )
    hits = json.loads(out.stdout)
    grouped = [h for h in hits if len(h["members"]) > 1]
    assert grouped, hits
    covered = {m for h in hits for m in h["members"]}
    assert covered >= {m.id for m in pieces}
    for hit in hits:
        assert hit["id"] in hit["members"]
        assert len(hit["source_ids"]) == len(hit["members"])


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_speaker_is_searchable_after_a_plain_import(
    settings: Settings, tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in chat(False)) + "\n")
    mem = open_memory(str(tmp_path / "speaker.db"), settings=replace(settings, embedder="toy"))
    try:
        mem.import_jsonl(str(path), project="chat")
        mem.embed_backfill()
        melanie = {r["id"] for r in chat(False) if r["speaker"] == "Melanie"}
        hits = mem.search("Melanie", project="chat", mode=mode)
        assert {h.source_id for h in hits[: len(melanie)]} == melanie
        assert all(h.title == "Melanie" for h in hits[: len(melanie)])
        if mode == "keyword":
            asked = mem.search("What did Melanie say about camp?", project="chat", mode=mode)
            assert asked[0].source_id == "s1#3"
    finally:
        mem.close()
