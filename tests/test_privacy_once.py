"""Filtering a transcript once: units cut from a scrubbed turn, vouched for by privacy.

The write path filters any content it is given, except text the privacy module
itself vouches for (:class:`memlane.privacy.Scrubbed`, made only by
:meth:`memlane.privacy.CleanSource.vouch`). These tests check that nothing else can
carry that label, that a vouched unit shows nothing the turn's filter removed (a
``<private>`` block and a private key spanning unit boundaries), and that the stored
rows are the same as when the write path filters every unit again.
"""

from __future__ import annotations

import itertools
import json
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memlane import memories, privacy
from memlane.capture import pipeline
from memlane.capture.transcript import iter_turns
from memlane.capture.units import turn_units
from memlane.config import Settings
from memlane.models import MemoryFilter
from memlane.service import Memory
from tests.conftest import FIXTURES

KEY_LINES = [
    f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAB{n:04d}wAAAAdzc2gtcn"
    for n in range(40)
]
PRIVATE_KEY = "\n".join(
    ["-----BEGIN OPENSSH PRIVATE KEY-----", *KEY_LINES, "-----END OPENSSH PRIVATE KEY-----"]
)
PRIVATE_WORDS = ("staging-root-plan", "vault-door-seven")


def _record(role: str, n: int, content: Any) -> dict[str, Any]:
    return {
        "type": role,
        "sessionId": "spans",
        "uuid": f"{role[0]}{n}",
        "timestamp": f"2026-01-01T00:00:{n:02d}Z",
        "message": {"role": role, "id": f"m{n}", "content": content},
    }


def _spanning_transcript(path: Path) -> str:
    """A transcript whose assistant text holds a <private> block and a private key, each
    longer than a unit, so the units cut from it split both."""
    private = "\n\n".join(
        [
            "<private>",
            " ".join([PRIVATE_WORDS[0]] * 70),
            " ".join([PRIVATE_WORDS[1]] * 70),
            "</private>",
        ]
    )
    text = "\n\n".join(
        [
            "Setting up the deploy for the billing service. " * 8,
            private,
            "The deploy key follows.",
            PRIVATE_KEY,
            "Deploy finished; the retry bug is fixed. " * 6,
        ]
    )
    records = [
        _record("user", 1, "deploy the billing service"),
        _record("assistant", 2, [{"type": "text", "text": text}]),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return text


def _unit_rows(memory: Memory, session: str) -> list[tuple[Any, ...]]:
    store = memory.core.store
    ids = store.memory_ids(MemoryFilter(session_id=session))
    rows = []
    for m in sorted(store.get_memories(ids), key=lambda m: (m.kind, m.source_id or "")):
        source_id = (m.source_id or "").removeprefix(session)
        rows.append(
            (
                m.kind,
                m.type,
                source_id,
                m.title,
                m.content,
                m.normalized_hash,
                m.files,
                m.tags,
                json.dumps(m.metadata, sort_keys=True),
            )
        )
    return rows


# -- the label --------------------------------------------------------------------


def test_only_privacy_makes_scrubbed_text() -> None:
    with pytest.raises(TypeError, match=r"memlane\.privacy only"):
        privacy.Scrubbed("sk-ant-api03-" + "A" * 40, (), object())
    with pytest.raises(TypeError, match=r"privacy\.Filter"):
        privacy.CleanSource(lambda text: text)  # type: ignore[arg-type]


def test_vouch_labels_only_what_the_filter_returned() -> None:
    key = "sk-ant-api03-" + "B" * 40
    source = privacy.CleanSource(privacy.Filter())
    clean = source.scrub(f"run the tests\n$ export ANTHROPIC_API_KEY={key}\n    12→def retry():")
    assert key not in clean

    piece = source.vouch("run the tests\ndef retry():")  # a line, and a piece of one
    assert isinstance(piece, privacy.Scrubbed) and privacy.vouched(piece)
    framed = source.vouch("$ run the tests")
    assert privacy.vouched(framed)
    # The raw secret, or any line the filter never returned, is not vouched for.
    for text in (f"ANTHROPIC_API_KEY={key}", "run the tests\nsomething else", f"$ {key}"):
        assert not privacy.vouched(source.vouch(text))
    # Another source's text is not this source's to vouch for.
    assert not privacy.vouched(privacy.CleanSource(privacy.Filter()).vouch("run the tests"))


def test_vouch_knows_how_units_show_lines_and_nothing_more() -> None:
    source = privacy.CleanSource(privacy.Filter())
    source.scrub("/work/app/lib/retry.ex")
    source.scrub("     7\u2192def retry(attempts):\n     8\u2192  backoff(attempts)")
    source.scrub("Run the unit tests")
    shown = "Write /work/app/lib/retry.ex (2 lines)\ndef retry(attempts):\n(Run the unit tests)"
    assert privacy.vouched(source.vouch(shown))
    # The same shapes around text the filter never returned are not vouched for, nor a
    # piece cut inside a run of characters (the relative path: filtered again).
    for text in (
        "Write lib/retry.ex (2 lines)",
        "Write lib/other.ex (2 lines)",
        "Write lib/retry.ex (2 lines) and more",
        "(Run the unit tests now)",
        "Deploy lib/retry.ex",
        "7\u2192def retry(attempts): pass",
    ):
        assert not privacy.vouched(source.vouch(text)), text


def test_vouch_takes_the_lines_units_and_outputs_add() -> None:
    source = privacy.CleanSource(privacy.Filter())
    source.scrub("def retry(attempts):\n  end\n  backoff(attempts)\nexport TOKEN=")
    left = privacy.left_out(142)
    assert left == "\u2026 142 lines left out \u2026"
    shown = f"def retry(attempts):\n{left}\n  {privacy.repeated('end', 3)}\n  backoff(attempts)"
    assert privacy.vouched(source.vouch(shown))
    assert privacy.vouched(source.vouch(privacy.left_out(1)))
    # Other words in their places, a count that is not one, a repeat of a line the filter
    # never returned: filtered again.
    for text in (
        "\u2026 142 lines left out: TOKEN=abc \u2026",
        "\u2026 1 lines left out \u2026",
        "\u2026 \u0663 lines left out \u2026",
        privacy.repeated("other", 2),
        "end (\u00d7\u0663)",
        "end (\u00d72) and more",
        # A crafted run of digits too long for int(): not a count, and no exception.
        f"\u2026 {'9' * 5000} lines left out \u2026",
        f"end (\u00d7{'9' * 5000})",
    ):
        assert not privacy.vouched(source.vouch(text)), text
    # A repeated line the filter would change (the count read as a value): filtered again,
    # so the row is the one the write path makes of it.
    repeated = privacy.repeated("export TOKEN=", 2)
    assert privacy.scrub(repeated) != repeated
    assert not privacy.vouched(source.vouch(repeated))


def test_a_piece_cut_inside_a_run_of_characters_is_filtered_again() -> None:
    # The whole line holds no mailchimp key (the hex run is 33 long); a piece cut inside
    # it does. Vouched for, the piece would be stored unmasked.
    line = "key " + "a" * 33 + "-us12 done"
    source = privacy.CleanSource(privacy.Filter())
    assert source.scrub(line) == line
    piece = "a" * 32 + "-us12"
    assert privacy.scrub(piece) != piece
    assert not privacy.vouched(source.vouch(piece))
    # A piece between spaces is still vouched for.
    assert privacy.vouched(source.vouch("a" * 33 + "-us12 done"))


def test_the_label_is_lost_by_any_change_and_by_a_copy() -> None:
    source = privacy.CleanSource(privacy.Filter())
    source.scrub("a plain line of text")
    text = source.vouch("a plain line of text")
    assert privacy.vouched(text)
    for changed in (text + "!", text.strip(), text[:5], text.replace("a", "b"), f"{text}"):
        assert not privacy.vouched(changed)
    copied = pickle.loads(pickle.dumps(text))
    assert copied == text and type(copied) is str


def test_the_label_holds_only_under_the_same_patterns() -> None:
    source = privacy.CleanSource(privacy.Filter())
    source.scrub("the code is hunter42")
    text = source.vouch("the code is hunter42")
    assert privacy.vouched(text, ())
    assert not privacy.vouched(text, ("hunter[0-9]+",))


def test_the_write_path_filters_all_but_vouched_text(memory: Memory, settings: Settings) -> None:
    core = memory.core
    key = "sk-ant-api03-" + "C" * 40
    plain = memories.prepare(core, memories.Draft(f"deploy with {key}", project="p"))
    assert key not in plain.content
    # Vouched under other patterns than the core's: filtered again with the core's.
    source = privacy.CleanSource(privacy.Filter())
    source.scrub("the code is hunter42")
    vouched = source.vouch("the code is hunter42")
    core.settings = replace(settings, secret_patterns=("hunter[0-9]+",))
    row = memories.prepare(core, memories.Draft(vouched, title=vouched, project="p"))
    assert "hunter42" not in row.content and "hunter42" not in row.title
    assert "[REDACTED:custom]" in row.content


# -- spanning unit boundaries -------------------------------------------------------


def test_private_block_and_key_spanning_units_never_reach_the_store(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    _spanning_transcript(path)
    # Cut without the turn's filter, the block and the key each span several units:
    # filtering unit by unit would find neither.
    raw_units = [u.text for turn in iter_turns(str(path)) for u in turn_units(turn)]
    assert sum(PRIVATE_WORDS[0] in t or PRIVATE_WORDS[1] in t for t in raw_units) >= 2
    assert sum(any(line in t for line in KEY_LINES) for t in raw_units) >= 2
    assert not any("<private>" in t and "</private>" in t for t in raw_units)

    # The units the ingest prepares are cut from the scrubbed turn and vouched for.
    batch = pipeline._BatchReader(memory.core, str(path), "spans", 400).batch(0, "p")
    units = itertools.chain.from_iterable(batch.parts)
    vouched = [u.draft.content for u in units if privacy.vouched(u.draft.content)]
    assert len(vouched) >= 2

    report = memory.ingest_transcript("spans", str(path), project="p")
    assert report.chunks >= 3
    stored = [row[4] for row in _unit_rows(memory, "spans")]
    assert any("[REDACTED:private-key]" in text for text in stored)
    assert any("Deploy finished" in text for text in stored)
    for text in stored:
        assert "private>" not in text
        assert not any(word in text for word in PRIVATE_WORDS)
        assert not any(line in text for line in KEY_LINES)
        assert "OPENSSH PRIVATE KEY-----\n" not in text


# -- lines units compose ------------------------------------------------------------


def _call(
    n: int, name: str, args: dict[str, Any], result: str, *, error: bool = False
) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": f"t{n}", "name": name, "input": args}
    answer = {"type": "tool_result", "tool_use_id": f"t{n}", "content": result, "is_error": error}
    return [_record("assistant", n, [use]), _record("user", n + 1, [answer])]


def _composing_transcript(
    path: Path, kind: str = "explorer", about: str = "Find the retry"
) -> Path:
    """Calls whose units open with a line made of strings filtered apart: a background
    command's output (``Output of $ … (…)``, its task's status), a subagent's kind and
    description, a failure's status and first error."""
    envelope = "<status>completed</status>\n<exit_code>1</exit_code>\n<output>\n"
    records = [
        _record("user", 1, "run the suite, then find the retry code"),
        *_call(
            2,
            "Bash",
            {"command": "mix test", "description": "Run the tests", "run_in_background": True},
            "Command running in background with ID: bd0afab. Output is being written to: "
            "/tmp/claude-1000/-work-app/tasks/bd0afab.output",
        ),
        *_call(4, "TaskOutput", {"task_id": "bd0afab"}, envelope + "3 tests, 1 failure\n</output>"),
        *_call(6, "Task", {"subagent_type": kind, "description": about}, "It is lib/retry.ex."),
        *_call(
            8,
            "Bash",
            {"command": "git push", "description": "Push the branch"},
            "Exit code 128\nfatal: The current branch retry has no upstream branch.",
            error=True,
        ),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_units_opening_with_a_composed_line_are_vouched_for(memory: Memory, tmp_path: Path) -> None:
    path = _composing_transcript(tmp_path / "composed.jsonl")
    batch = pipeline._BatchReader(memory.core, str(path), "c", 400).batch(0, "p")
    shown = {u.draft.content.split("\n")[0]: u.draft.content for u in batch.parts[0]}
    for head in (
        "Output of $ mix test (Run the tests)",
        "Task (explorer): Find the retry",
        "$ git push",  # then "failed (exit code 128): fatal: The current branch …"
    ):
        assert privacy.vouched(shown[head]), shown[head]
    assert "failed (exit code 128): fatal:" in shown["$ git push"]
    assert "completed, exit code 1" in shown["Output of $ mix test (Run the tests)"]


def test_a_secret_only_the_composed_line_shows_is_masked(memory: Memory, tmp_path: Path) -> None:
    # Neither the subagent's kind nor its description is a secret alone; "(db_password):
    # Quartz.9024!" is one. The composed line the source holds is the masked one, so the
    # unit showing the raw one is not vouched for, and the write path masks it.
    for alone in ("db_password", "Quartz.9024!"):
        assert privacy.scrub(alone) == alone
    path = _composing_transcript(tmp_path / "secret.jsonl", "db_password", "Quartz.9024!")
    batch = pipeline._BatchReader(memory.core, str(path), "s", 400).batch(0, "p")
    task = next(u.draft.content for u in batch.parts[0] if u.draft.content.startswith("Task ("))
    assert "Quartz.9024!" in task and not privacy.vouched(task)
    memory.ingest_transcript("s", str(path), project="p")
    ((_, _, _, title, content, *_),) = [r for r in _unit_rows(memory, "s") if r[2] == ":3"]
    assert content.startswith("Task (db_password): [REDACTED:") and title in content
    assert "Quartz.9024!" not in content + title


# -- the same rows ----------------------------------------------------------------------


def _transcripts() -> list[Path]:
    here = Path(__file__).parent / "data"
    paths = [here / "hooks" / "transcript.jsonl", here / "transcripts" / "webhook-retry.jsonl"]
    if FIXTURES.exists():
        paths.extend(sorted(FIXTURES.glob("*.jsonl")))
    return paths


@pytest.mark.parametrize("path", _transcripts(), ids=lambda p: p.name)
def test_rows_are_the_same_when_every_unit_is_filtered_again(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    once = memory.ingest_transcript("once", str(path), project="once")
    with monkeypatch.context() as patch:
        # Nothing vouched for: the write path filters every unit a second time.
        patch.setattr(privacy.CleanSource, "vouch", lambda self, text: text)
        twice = memory.ingest_transcript("twice", str(path), project="twice")
    assert (once.chunks, once.turns) == (twice.chunks, twice.turns)
    assert once.chunks > 0
    assert _unit_rows(memory, "once") == _unit_rows(memory, "twice")
    store = memory.core.store
    for word in ("test", "error", "retry", "REDACTED", "file"):
        hits = [
            sorted(
                (h.type, h.title, h.content)
                for h in memory.search(word, project=p, mode="keyword", limit=500)
            )
            for p in ("once", "twice")
        ]
        assert hits[0] == hits[1], word
    assert store.count_memories(MemoryFilter(projects=("once",))) == store.count_memories(
        MemoryFilter(projects=("twice",))
    )


def test_rows_are_the_same_with_composed_lines_vouched_for(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _composing_transcript(tmp_path / "composed.jsonl")
    test_rows_are_the_same_when_every_unit_is_filtered_again(memory, monkeypatch, path)
