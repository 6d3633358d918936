"""Rows and tool calls the ingest builds directly (``dataclasses.replace`` costs
microseconds a call) hold what ``replace`` would have made of them."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from memlane.capture import pipeline
from memlane.capture.transcript import ToolCall, Turn
from memlane.models import NewMemory
from memlane.service import Memory


def test_an_indexed_unit_row_is_replace_of_every_other_field() -> None:
    row = NewMemory(
        project="p",
        kind="turn",
        type="tool",
        content="c",
        normalized_hash="h",
        created_at=datetime(2026, 12, 2, tzinfo=UTC),
        title="t",
        session_id="s",
        files=("a.py",),
        tags=("Bash",),
        topic_key="k",
        source="transcript",
        source_id="s:0",
        metadata={"chunk_index": 0, "role": "assistant"},
    )
    # Every field differs from its default, so a field the copy left out would show.
    defaults = NewMemory("", "", "", "", "", datetime(2000, 1, 1, tzinfo=UTC))
    for field in dataclasses.fields(NewMemory):
        assert getattr(row, field.name) != getattr(defaults, field.name), field.name
    built = pipeline._indexed(row, "s:7", 7)
    expected = dataclasses.replace(
        row, source_id="s:7", metadata={"chunk_index": 7, "role": "assistant"}
    )
    assert built == expected
    assert row.metadata["chunk_index"] == 0  # the prepared row is left as it was


def test_a_scrubbed_tool_call_keeps_every_field_but_its_filtered_text(memory: Memory) -> None:
    call = ToolCall(
        name="Bash",
        input={"command": "export API_TOKEN=ghp_" + "a" * 36},
        id="toolu_1",
        result="password = hunter2hunter2",
        is_error=True,
        answered=True,
    )
    defaults = ToolCall("", None)
    for field in dataclasses.fields(ToolCall):
        assert getattr(call, field.name) != getattr(defaults, field.name), field.name
    turn = Turn(role="assistant", text="x", blocks=("a reply", call), cwd="/w")
    scrubbed, _ = pipeline._scrubbed(memory.core, turn)
    block = scrubbed.blocks[1]
    assert isinstance(block, ToolCall)
    scrub = memory.core.scrub
    assert block == dataclasses.replace(
        call, input=pipeline._scrub_payload(scrub, call.input), result=scrub(call.result)
    )
    assert "ghp_" not in str(block.input) and "hunter2" not in block.result
