"""The one write path (memlane.memories), seen from every entry point that writes.

Every row, however it arrived (save, prompt, tool event, transcript, summary,
checkpoint, JSONL, memlane's own export, a JSONL store, claude-mem, an index,
a sync pull), is stored scrubbed, clipped with the visible mark and hashed on
exactly the text stored; titles are derived from scrubbed text; metadata keys
and topic keys are filtered too; a lossless copy keeps its counters.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import memories, privacy
from memlane.config import Settings
from memlane.errors import InvalidInput
from memlane.memories import MAX_CONTENT_CHARS, TRUNCATION_MARK, Draft
from memlane.models import Memory as MemoryRecord
from memlane.service import Memory
from memlane.service import open as open_memory
from tests.conftest import one_line_error, run_memlane
from tests.test_import_claude_mem import build_db

P = "write-path"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
# Any 12 characters of the token: what a cut-then-scrub would have left behind.
FRAGMENTS = [TOKEN[i : i + 12] for i in range(len(TOKEN) - 11)]
DATA = Path(__file__).parent / "data" / "hooks"


def leaks(text: str) -> bool:
    return any(fragment in text for fragment in FRAGMENTS)


def stored_text(row: MemoryRecord) -> str:
    """Every stored text field of a row, as one string."""
    return "\n".join(
        [
            row.content,
            row.title,
            row.topic_key or "",
            *row.files,
            *row.tags,
            json.dumps(row.metadata, ensure_ascii=False),
        ]
    )


@pytest.fixture
def other(settings: Settings, tmp_path: Path) -> Iterator[Memory]:
    """A second database in the same home (another instance id): the receiving side."""
    memory = open_memory(str(tmp_path / "other.db"), settings=settings)
    yield memory
    memory.close()


def test_every_entry_point_hashes_exactly_what_it_stored(
    memory: Memory, other: Memory, tmp_path: Path
) -> None:
    memory.save("a decision about retries", project=P, type="decision", tags=["retry"])
    memory.record_prompt("s1", "Make the webhook retries idempotent please", project=P)
    memory.record_tool_event(
        "s1", "Bash", {"command": "pytest -q"}, {"stdout": "3 passed"}, cwd=None, project=P
    )
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((DATA / "transcript.jsonl").read_bytes())
    assert memory.ingest_transcript("s2", str(transcript), project=P).chunks > 0
    assert memory.refresh_summary("s1") is not None
    assert memory.refresh_checkpoint("s1", "Next: run the migration") is not None
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"text": "imported note", "id": "n1", "project": P}) + "\n")
    assert memory.import_jsonl(str(records)).created == 1
    store = tmp_path / "store"
    store.mkdir()
    (store / "lessons.jsonl").write_text(json.dumps({"lesson": "Pin Node in CI"}) + "\n")
    assert memory.import_jsonl_store(str(store), project=P).created == 1
    claude = tmp_path / "claude-mem.db"
    build_db(claude)
    assert memory.import_claude_mem(str(claude), into=P).created > 0
    export = io.StringIO()
    memory.export_records(export)
    (tmp_path / "export.jsonl").write_text(export.getvalue())
    index = io.StringIO()
    memory.export_index(index, project=P)
    (tmp_path / "index.json").write_text(index.getvalue())
    memory.sync_push(str(tmp_path / "sync"), create=True)

    assert other.import_export(str(tmp_path / "export.jsonl")).created > 0
    assert other.sync_pull(str(tmp_path / "sync")).errors == ()
    assert other.import_index(str(tmp_path / "index.json"), project="from-index").created > 0

    for mem in (memory, other):
        rows = list(mem.iter_all(None))
        assert len(rows) > 10
        for row in rows:
            assert row.normalized_hash == privacy.hash_scrubbed(row.content), row.id
            assert row.content == privacy.scrub(row.content)


def test_a_secret_across_the_content_cut_is_masked_not_cut(
    memory: Memory, other: Memory, tmp_path: Path
) -> None:
    # The token starts 20 characters before the cut: clipping first would keep 20 of its
    # characters, which no rule recognises any more.
    cut = MAX_CONTENT_CHARS - len(TRUNCATION_MARK)
    text = "x " * ((cut - 21) // 2) + " " + TOKEN + " and more" * 20
    assert text.index(TOKEN) < cut < text.index(TOKEN) + len(TOKEN)
    # Captured text is clipped (what a person gives is refused over the limit instead).
    saved = memory.get(memories.save(memory.core, Draft(text, project=P)).id)
    assert saved.content.endswith(TRUNCATION_MARK) and len(saved.content) <= MAX_CONTENT_CHARS
    assert not leaks(saved.content)
    records = tmp_path / "long.jsonl"
    records.write_text(json.dumps({"text": text, "id": "long", "project": "jsonl"}) + "\n")
    [refused] = other.import_jsonl(str(records)).errors
    assert "a memory holds at most" in refused.message and not leaks(refused.message)


# Given text that fits, and outgrows a memory once masked: "4821" becomes "[REDACTED:pin]".
OTP_LINE = "the OTP code is 4821\n"
GROWING = (OTP_LINE * (MAX_CONTENT_CHARS // len(OTP_LINE)))[: MAX_CONTENT_CHARS - 10] + "THE END."


def test_given_text_that_outgrows_a_memory_once_masked_is_refused_not_clipped(
    home: Path, tmp_path: Path
) -> None:
    """A save of 63,995 characters was stored clipped once its codes were masked (94,465):
    "created", its end gone, the mark the only sign. What a person or a client gives is
    refused whole; captured text is still clipped, marked."""
    assert len(GROWING) <= MAX_CONTENT_CHARS < len(privacy.scrub(GROWING))
    line = one_line_error(run_memlane(home, "save", "-", "--project", P, stdin=GROWING), 2)
    assert f"once its secrets are masked; a memory holds at most {MAX_CONTENT_CHARS:,}" in line
    assert "nothing saved" in line
    saved = run_memlane(home, "save", "a short note", "--project", P, "--json")
    assert saved.returncode == 0, saved.stderr
    memory_id = str(json.loads(saved.stdout)["id"])
    line = one_line_error(run_memlane(home, "edit", memory_id, "--content", "-", stdin=GROWING), 2)
    assert "once its secrets are masked" in line
    records = tmp_path / "growing.jsonl"
    records.write_text(json.dumps({"text": GROWING, "id": "g", "project": P}) + "\n")
    done = run_memlane(home, "import", "jsonl", str(records))
    assert done.returncode != 0 and "once its secrets are masked" in done.stdout + done.stderr
    listed = run_memlane(home, "search", "OTP", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    shown = run_memlane(home, "get", memory_id, "--json")
    assert json.loads(shown.stdout)["content"] == "a short note"


def test_an_exported_copy_that_outgrows_a_memory_once_masked_is_refused(
    memory: Memory, other: Memory, tmp_path: Path
) -> None:
    memory.save("exported short", project=P)
    out = io.StringIO()
    memory.export_records(out, project=P)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    for line in lines:
        if line.get("record") == "memory":
            line["text"] = GROWING
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    report = other.import_export(str(path))
    assert report.created == 0
    [refused] = report.errors
    assert "once its secrets are masked" in refused.message


def test_captured_text_that_outgrows_a_memory_once_masked_is_clipped_marked(
    memory: Memory,
) -> None:
    record = memory.record_prompt("grows", GROWING, project=P)
    assert record.saved is not None
    row = memory.get(record.saved.id)
    assert row.content.endswith(TRUNCATION_MARK) and len(row.content) == MAX_CONTENT_CHARS


def test_a_prompt_title_comes_from_the_scrubbed_prompt(memory: Memory) -> None:
    # A title cut at 80 characters before filtering kept 20 characters of the token.
    prompt = "Please deploy with " + "a" * 41 + " " + TOKEN + " today"
    assert prompt.index(TOKEN) < 80 < prompt.index(TOKEN) + len(TOKEN)
    record = memory.record_prompt("s", prompt, project=P)
    assert record.saved is not None
    row = memory.get(record.saved.id)
    assert row.title and not leaks(row.title) and not leaks(row.content)
    assert "[REDACTED:" in row.content


def test_every_text_field_is_filtered_keys_included(memory: Memory) -> None:
    result = memory.save(
        "deploy notes",
        project=P,
        title=f"deploy with {TOKEN}",
        topic_key=f"deploy-{TOKEN}",
        tags=[f"tag {TOKEN}"],
        files=[f"secrets/{TOKEN}.txt"],
        metadata={f"key {TOKEN}": {"nested": [f"value {TOKEN}"], TOKEN: 1}},
    )
    row = memory.get(result.id)
    assert not leaks(stored_text(row))
    # The scrubbed topic key is stable: saving under the same key again updates in place.
    again = memory.save("deploy notes, revised", project=P, topic_key=f"deploy-{TOKEN}")
    assert (again.status, again.id) == ("updated", result.id)


def test_metadata_strings_a_run_has_seen_are_cleaned_as_under_their_own_key(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A value is a secret by its key ({"db_password": …}), not by itself: what a run
    # remembers (an ingest's ``seen``) is the value under that key, never the value alone.
    core = memory.core
    drafts = [
        {"db_password": "Quartz.9024!", "note": "Quartz.9024!", "role": "user"},
        {"note": "Quartz.9024!", "db_password": "Quartz.9024!", "items": ["Quartz.9024!"]},
        {"role": "user", "": "Quartz.9024!", "password": {"db_password": "Quartz.9024!"}},
        {f"key {TOKEN}": "x", "deep": [{"db_password": "Quartz.9024!"}], "n": 1.5},
    ]
    seen: memories.Seen = {}
    for metadata in drafts * 2:
        assert memories.clean_metadata(core, metadata, seen=seen) == memories.clean_metadata(
            core, metadata
        )
    clean = memories.clean_metadata(core, drafts[0], seen=seen)
    assert clean["db_password"] != "Quartz.9024!" and clean["note"] == "Quartz.9024!"
    # Every short string was answered from the run once seen: the filter is not asked again.
    asked: list[tuple[str, str]] = []
    scrub_under = memories.scrub_under

    def counted(core: object, key: str, value: str) -> str:
        asked.append((key, value))
        return scrub_under(memory.core, key, value)

    monkeypatch.setattr(memories, "scrub_under", counted)
    for metadata in drafts:
        memories.clean_metadata(core, metadata, seen=seen)
    assert asked == []
    memories.clean_metadata(core, drafts[0])
    assert ("db_password", "Quartz.9024!") in asked


def test_a_lossless_copy_keeps_its_counters_and_is_filtered(
    memory: Memory, other: Memory, tmp_path: Path
) -> None:
    created = datetime(2025, 5, 1, 12, tzinfo=UTC)
    saved = memory.save("kept as exported", project=P, created_at=created)
    memory.update(saved.id, title="edited once")
    memory.get(saved.id, record_access=True)
    original = memory.get(saved.id)
    out = io.StringIO()
    memory.export_records(out, project=P)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    for line in lines:
        if line.get("record") == "memory":
            line["title"] = f"exported with {TOKEN}"
            line["metadata"] = {f"k {TOKEN}": TOKEN}
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert other.import_export(str(path)).created == 1
    [copy] = other.list_memories(project=P)
    assert (copy.created_at, copy.updated_at) == (original.created_at, original.updated_at)
    assert (copy.revision_count, copy.access_count) == (1, 1)
    assert not leaks(stored_text(copy))
    # Imported twice: nothing new, the copy found by its identity.
    again = other.import_export(str(path))
    assert (again.created, again.updated, again.skipped) == (0, 0, 1)


def test_long_turns_are_clipped_with_the_mark_and_titled(memory: Memory) -> None:
    core = memory.core
    long_text = "word " * (MAX_CONTENT_CHARS // 4)
    with memories.batch(core) as writer:
        result = writer.save(
            Draft(long_text, project=P, type="turn", kind="turn", session_id="t", derive_title=True)
        )
    row = memory.get(result.id)
    assert row.content.endswith(TRUNCATION_MARK) and len(row.content) == MAX_CONTENT_CHARS
    assert row.title.startswith("word word") and row.title.endswith("…") and len(row.title) <= 80
    assert row.normalized_hash == privacy.hash_scrubbed(row.content)


def test_a_batch_counts_once_as_activity_over_its_span(memory: Memory) -> None:
    core = memory.core
    first = datetime(2026, 1, 1, 9, tzinfo=UTC)
    with memories.batch(core) as writer:
        for minute in (5, 0, 30):
            writer.save(
                Draft(
                    f"turn {minute}",
                    project=P,
                    session_id="span",
                    kind="turn",
                    type="turn",
                    created_at=first + timedelta(minutes=minute),
                )
            )
    session = memory.get_session("span")
    assert session.started_at == first
    assert session.last_activity_at == first + timedelta(minutes=30)
    # A write that is not activity leaves the clock alone.
    memories.save(
        core,
        Draft(
            "auto summary",
            project=P,
            session_id="span",
            created_at=first + timedelta(days=1),
            activity=False,
        ),
    )
    assert memory.get_session("span").last_activity_at == first + timedelta(minutes=30)


def test_an_empty_text_is_refused_and_writes_nothing(memory: Memory) -> None:
    from memlane.errors import NothingToStore

    with pytest.raises(NothingToStore):
        memory.save("<private>only this</private>", project=P, session_id="quiet")
    assert memory.find_session("quiet") is None
    assert memory.record_prompt("quiet", "<private>nothing</private>", project=P).saved is None


def test_search_notices_belong_to_their_result(settings: Settings, tmp_path: Path) -> None:
    """The worker shares one Memory across threads: a notice travels with its result."""
    mem = open_memory(str(tmp_path / "n.db"), settings=settings)
    try:
        mem.save("alpha beta gamma", project=P)
        fell_back = mem.search("beta", project=P)
        keyword = mem.search("beta", project=P, mode="keyword")
        assert fell_back.notice is not None and keyword.notice is None
        assert fell_back.notice is not None  # not overwritten by the later search
        assert isinstance(fell_back, list) and fell_back[0].content == "alpha beta gamma"
    finally:
        mem.close()


def test_new_secret_patterns_apply_to_texts_seen_clean_before(memory: Memory) -> None:
    assert memory.scrub("build id internal-7731") == "build id internal-7731"
    memory.settings = replace(memory.settings, secret_patterns=(r"internal-\d+",))
    assert memory.scrub("build id internal-7731") == "build id [REDACTED:custom]"


def test_new_secret_patterns_apply_to_names_accepted_before(memory: Memory) -> None:
    """Core.plain_name remembers the names it accepted, under the filter that judged them."""
    memory.save("the build passed", project=P, session_id="internal-7731")
    memory.settings = replace(memory.settings, secret_patterns=(r"internal-\d+",))
    with pytest.raises(InvalidInput, match="session id holds a secret"):
        memory.save("the build passed again", project=P, session_id="internal-7731")


def test_an_identical_topic_resave_is_a_duplicate_that_stays_put(memory: Memory) -> None:
    """A re-save that changes nothing: no revision, no new version time, no session move."""
    first = memory.save(
        "Tokens live in the OS keychain", project=P, type="decision",
        topic_key="auth/tokens", session_id="ilab-1", tags=("auth",),
    )  # fmt: skip
    before = memory.get(first.id)
    again = memory.save(
        "Tokens live in the OS keychain", project=P, type="decision",
        topic_key="auth/tokens", session_id="ilab-2",
    )  # fmt: skip
    assert (again.status, again.id) == ("deduplicated", first.id)
    after = memory.get(first.id)
    assert (after.revision_count, after.session_id) == (0, "ilab-1")
    assert (after.updated_at, after.tags) == (before.updated_at, ("auth",))
    # A new title is something to record: a real update, which moves the memory (invariant 4).
    titled = memory.save(
        "Tokens live in the OS keychain", project=P, type="decision",
        topic_key="auth/tokens", session_id="ilab-2", title="Token storage",
    )  # fmt: skip
    assert titled.status == "updated"
    stored = memory.get(first.id)
    assert (stored.revision_count, stored.session_id, stored.title) == (
        1,
        "ilab-2",
        "Token storage",
    )
