"""A hook's hard cases, through the installed command (``python -S …/launch.py``): stdin
that is not UTF-8, a prompt too large for an ASCII-escaped spool, a damaged database, a
spool of bad files, a project whose name holds a secret. Each keeps what can be kept and
writes one hook log line that says what happened (real SQLite files, real processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlane.config import Settings
from memlane.hooks import dispatch, spool
from memlane.hooks.log import log_note
from memlane.memories import MAX_CONTENT_CHARS, clip
from memlane.worker.relay_server import HookRelay
from tests.test_hook_relay import handled, launch_hook
from tests.test_hooks import log_lines, ok
from tests.test_hooks_spool import event_of, prompts, spooled, write_lock_held


def forget_log(home: Path) -> None:
    """Remove the hook log (lines a test's own set-up wrote)."""
    (home / "logs" / "hooks.log").unlink(missing_ok=True)


def prompt_payload(project: Path, prompt: bytes) -> bytes:
    return (
        b'{"session_id":"s1","cwd":'
        + json.dumps(str(project)).encode()
        + b',"prompt":"%s"}' % (prompt)
    )


# A stray byte pair, and a lone surrogate escaped in the JSON: each costs its characters.
BAD_UTF8 = [(b"\xff\xfe retry the refunds", "\ufffd\ufffd retry the refunds")]
BAD_UTF8 += [(b"\\ud800 retry the refunds", "\ufffd retry the refunds")]


@pytest.mark.parametrize(("prompt", "stored"), BAD_UTF8)
def test_invalid_utf8_in_stdin_costs_its_characters_not_the_prompt(
    home: Path, project: Path, prompt: bytes, stored: str
) -> None:
    ok(launch_hook(home, "user-prompt-submit", prompt_payload(project, prompt), cwd=project))
    assert [content for content, _, _ in prompts(home)] == [stored]
    assert log_lines(home) == []


@pytest.mark.parametrize(("prompt", "stored"), BAD_UTF8)
def test_invalid_utf8_relayed_to_the_worker_is_decoded_the_same_way(
    home: Path, project: Path, relay_worker: HookRelay, prompt: bytes, stored: str
) -> None:
    ok(launch_hook(home, "user-prompt-submit", prompt_payload(project, prompt), cwd=project))
    assert handled(home, relay_worker) == 1
    assert [content for content, _, _ in prompts(home)] == [stored]
    assert log_lines(home) == []


def test_a_large_non_ascii_prompt_given_up_on_is_spooled_and_stored_as_it_would_be(
    home: Path, project: Path
) -> None:
    """4.2 MB of CJK: ASCII-escaped, its spool record was 8.4 MB, over the cap, and the
    prompt was lost; the spool keeps what the database would store."""
    prompt = "長い" * 700_000
    ok(launch_hook(home, "user-prompt-submit", prompt_payload(project, b"first"), cwd=project))
    with write_lock_held(home / "memlane.db", mode="EXCLUSIVE"):
        data = prompt_payload(project, prompt.encode())
        assert len(data) > 4_000_000
        ok(launch_hook(home, "user-prompt-submit", data, cwd=project))
        assert len(spooled(home)) == 1
    [line] = log_lines(home)
    assert "prompt kept in the spool" in line
    ok(launch_hook(home, "user-prompt-submit", prompt_payload(project, b"third"), cwd=project))
    stored = [content for content, _, _ in prompts(home)]
    assert stored == ["first", clip(prompt, MAX_CONTENT_CHARS), "third"]
    assert spooled(home) == []


def test_a_hook_failing_on_a_damaged_database_writes_one_line_that_says_so(
    home: Path, project: Path, settings: Settings
) -> None:
    """A spool file waiting, a database file that is not one: the replay, the hook and the
    spooling wrote three lines, the last "not stored in time" (it was never slow)."""
    assert spool.keep(event_of(project, "waiting prompt"), "billing-api", settings, 1.7e9, notes=[])
    home.mkdir(parents=True, exist_ok=True)
    (home / "memlane.db").write_bytes(bytes(range(256)) * 32)
    forget_log(home)
    data = prompt_payload(project, b"a prompt for a damaged database")
    ok(launch_hook(home, "user-prompt-submit", data, cwd=project))
    [line] = log_lines(home)
    assert "hook user-prompt-submit: StoreError: " in line
    assert "; prompt kept in the spool (" in line and "in time" not in line
    assert len(spooled(home)) == 2  # the waiting prompt and this one


def test_a_hooks_replay_reads_a_bounded_number_of_bad_files_and_logs_one_line(
    home: Path, project: Path, settings: Settings
) -> None:
    kept = spool.keep(event_of(project, "a prompt"), "billing-api", settings, 1.7e9, notes=[])
    assert kept is not None
    record = json.loads(kept.read_bytes())
    kept.unlink()
    for n in range(50):
        name = f"{1_700_000_000_000_000 + n:017d}-1-1.json"
        (kept.parent / name).write_text(json.dumps({**record, "db": "another"}))
    forget_log(home)
    ok(launch_hook(home, "user-prompt-submit", prompt_payload(project, b"now"), cwd=project))
    # The worker moves the rest; the hook's prompt waits after them (their order).
    assert len(spooled(home)) == 50 - dispatch.REPLAY_IN_HOOK + 1
    [line] = log_lines(home)
    aside = f"moved to {kept.parent / spool.REJECTED} (and {dispatch.REPLAY_IN_HOOK - 1} more)"
    assert f"named for another database; {aside}" in line
    assert json.loads(spooled(home)[-1].read_bytes())["prompt"] == "now"
    assert prompts(home) == []


def test_a_project_named_like_a_key_is_refused_with_a_whole_log_line(
    home: Path, tmp_path: Path
) -> None:
    """The refusal's message named the ``<private>`` tag, which the log's privacy filter
    read as an unclosed block: the line ended at "holds a secret or a "."""
    folder = tmp_path / "AKIAIOSFODNN7EXAMPLE"
    (folder / ".git").mkdir(parents=True)
    ok(launch_hook(home, "user-prompt-submit", prompt_payload(folder, b"hello"), cwd=folder))
    [line] = log_lines(home)
    assert line.endswith(
        "InvalidInput: the project name holds a secret or a private block;"
        " memlane stores no secret: use another project name"
    )
    assert prompts(home) == []
    log_note("user-prompt-submit", "before <private>hidden</private> after")
    scrubbed = log_lines(home)[-1]  # a real block is still removed from a log line
    assert scrubbed.endswith(" after") and "before" in scrubbed and "hidden" not in scrubbed
