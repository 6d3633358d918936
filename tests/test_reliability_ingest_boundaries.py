"""Incremental ingest loses nothing at batch boundaries (found by the transcript fuzzer).

One user record can close two turns: its tool results finish the open assistant
turn and its text starts a prompt, so both turns end at the same byte offset. A
batch that ended between them resumed after that offset and silently dropped the
prompt. Ingesting with every batch size must store exactly what one batch stores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane.capture.pipeline import ingest_transcript
from memlane.models import MemoryFilter
from memlane.service import Memory


def _write(path: Path) -> None:
    records = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "run the tests"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Running them."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "pytest -q"},
                    },
                ],
            },
        },
        {
            # Tool result and a new prompt in one record: two turns end here.
            "type": "user",
            "uuid": "u2",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"},
                    {"type": "text", "text": "great, now refactor the tokenizer"},
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "message": {
                "id": "m2",
                "role": "assistant",
                "content": [{"type": "text", "text": "Refactoring the tokenizer now."}],
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _contents(memory: Memory, session: str) -> list[str]:
    rows = memory.store.list_memories(
        MemoryFilter(session_id=session, kinds=("turn",)), limit=1000, newest_first=False
    )
    return [m.content for m in rows]


@pytest.mark.parametrize("batch_turns", [1, 2, 3, 400])
def test_every_batch_size_stores_the_same_turns(
    memory: Memory, tmp_path: Path, batch_turns: int
) -> None:
    transcript = tmp_path / "t.jsonl"
    _write(transcript)
    reference = tmp_path / "ref.jsonl"
    _write(reference)
    ingest_transcript(memory.core, "ref", str(reference), project="p", batch_turns=10_000)
    expected = _contents(memory, "ref")
    assert any("refactor the tokenizer" in text for text in expected)
    ingest_transcript(memory.core, "s", str(transcript), project="p", batch_turns=batch_turns)
    assert _contents(memory, "s") == expected
