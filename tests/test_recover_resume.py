"""`memlane recover` after a run stopped between a file's ingest and its wrap-up.

A Ctrl-C (or a crash, or a kill) that came after the ingest of a transcript had committed
its last batch, before the session's summary and end were written, left a file the next
run took as captured (its stored offset was the file's size): the summary was never
written and the past session never ended. One that came in the middle of the ingest left
a session the next run read on from its offset, then only summarized: it was no longer
unknown, so it was never ended either.

The half-done states are made here with the steps recover takes before its wrap-up (the
session started when its transcript did, the transcript ingested) on a real SQLite file;
then the real command runs over the real transcript.
"""

from __future__ import annotations

from pathlib import Path

from memlane.capture.sources import find_session_files
from memlane.project import project_name
from memlane.service import Memory
from tests.test_capture_end_to_end import DATA, SESSION, memlane, recover, rows

RECORDED = DATA / "webhook-retry.jsonl"


def on_disk(home: Path, text: str) -> Path:
    """The recorded session where Claude Code keeps it, holding ``text``."""
    folder = home / ".claude" / "projects" / "-home-dev-payments"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def ingested_as_recover_does(memory: Memory, home: Path) -> None:
    """What recover does with a session it does not know before its wrap-up: the session
    started when its transcript did, then the transcript read up to its end."""
    [found] = find_session_files(home / ".claude" / "projects", home / "no-codex")
    memory.session_start(
        SESSION,
        project=project_name(found.cwd),
        agent=found.agent,
        transcript_path=found.path,
        now=found.started,
    )
    report = memory.ingest_transcript(
        SESSION, found.path, project=project_name(found.cwd), summarize=False
    )
    assert report.end_offset == found.size > 0


def wrapped_up(home: Path) -> tuple[int, str, bool]:
    """The session's summaries, its status, and whether it ended at its last activity."""
    [(summaries,)] = rows(
        home, "SELECT count(*) FROM memories WHERE kind = 'summary' AND session_id = ?", (SESSION,)
    )
    [(status, ended_at, last)] = rows(
        home, "SELECT status, ended_at, last_activity_at FROM sessions WHERE id = ?", (SESSION,)
    )
    return summaries, status, ended_at == last


def test_a_file_read_to_its_end_but_not_wrapped_up_is_finished_once(
    home: Path, tmp_path: Path, memory: Memory
) -> None:
    on_disk(home, RECORDED.read_text(encoding="utf-8"))
    ingested_as_recover_does(memory, home)
    memory.close()
    assert wrapped_up(home) == (0, "active", False)
    [(units,)] = rows(home, "SELECT count(*) FROM memories")
    done = memlane(home, tmp_path, "recover", "--dry-run")
    assert done.stdout.decode() == "would read 1 session file of 1 found\n"

    first = recover(home, tmp_path)
    assert (first["sessions"], first["units"], first["unchanged"]) == (1, 0, 0)
    assert wrapped_up(home) == (1, "ended", True)
    assert rows(home, "SELECT count(*) FROM memories") == [(units + 1,)]  # the summary only

    again = recover(home, tmp_path)
    assert (again["sessions"], again["unchanged"]) == (0, 1)
    assert rows(home, "SELECT count(*) FROM memories") == [(units + 1,)]
    done = memlane(home, tmp_path, "recover", "--dry-run")
    assert done.stdout.decode().startswith("would read 0 session files of 1 found")


def test_a_past_session_stopped_in_its_ingest_is_ended_once_the_rest_is_read(
    home: Path, tmp_path: Path, memory: Memory
) -> None:
    lines = RECORDED.read_text(encoding="utf-8").splitlines(keepends=True)
    path = on_disk(home, "".join(lines[:12]))
    ingested_as_recover_does(memory, home)  # the batches committed before the Ctrl-C
    memory.close()
    with path.open("a", encoding="utf-8") as rest:
        rest.write("".join(lines[12:]))

    first = recover(home, tmp_path)
    assert (first["sessions"], first["unchanged"]) == (1, 0)
    assert wrapped_up(home) == (1, "ended", True)
    again = recover(home, tmp_path)
    assert (again["sessions"], again["unchanged"]) == (0, 1)


def test_a_live_session_read_to_its_end_is_left_to_its_hooks(
    home: Path, tmp_path: Path, memory: Memory
) -> None:
    """A session the hooks capture, as Stop leaves it before its wrap-up (or a subagent's,
    which the hooks never summarize): active now, so neither summarized nor ended."""
    path = on_disk(home, RECORDED.read_text(encoding="utf-8"))
    memory.session_start(SESSION, project="payments", agent="claude-code")
    memory.ingest_transcript(SESSION, str(path), project="payments", summarize=False)
    memory.close()

    done = recover(home, tmp_path)
    assert (done["sessions"], done["unchanged"]) == (0, 1)
    assert wrapped_up(home)[:2] == (0, "active")


def test_a_transcript_rewritten_shorter_is_read_again_and_reported(
    home: Path, tmp_path: Path
) -> None:
    """A transcript replaced by a shorter one (its end offset under the stored one) is read
    from its start, its old units dropped: that run read a session, not nothing."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines(keepends=True)
    path = on_disk(home, "".join(lines))
    assert recover(home, tmp_path)["sessions"] == 1
    [(before,)] = rows(home, "SELECT count(*) FROM memories WHERE kind = 'turn'")
    path.write_text("".join(lines[:12]), encoding="utf-8")

    again = recover(home, tmp_path)
    [(after,)] = rows(home, "SELECT count(*) FROM memories WHERE kind = 'turn'")
    assert 0 < after < before
    assert (again["sessions"], again["units"], again["unchanged"]) == (1, after, 0)


def prompt_count(home: Path) -> int:
    [(count,)] = rows(home, "SELECT prompt_count FROM sessions WHERE id = ?", (SESSION,))
    return int(count)


def test_recover_counts_a_past_sessions_prompts_from_its_transcript(
    home: Path, tmp_path: Path
) -> None:
    """A session recover read was listed with `prompts 0`: only the prompt hook counted
    prompts. The transcript's count now, read in one run or in two."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines(keepends=True)
    second = next(i for i, line in enumerate(lines) if "Which queue should" in line)
    path = on_disk(home, "".join(lines[:second]))
    assert recover(home, tmp_path)["sessions"] == 1
    assert prompt_count(home) == 1
    with path.open("a", encoding="utf-8") as rest:  # the session resumed, no hooks yet
        rest.write("".join(lines[second:]))
    assert recover(home, tmp_path)["sessions"] == 1
    assert prompt_count(home) == 2
    listed = memlane(home, tmp_path, "list", "--all-projects").stdout.decode()
    assert f"{SESSION}  payments  ended" in listed and "prompts 2" in listed
    assert recover(home, tmp_path)["unchanged"] == 1 and prompt_count(home) == 2
    path.write_text("".join(lines[:second]), encoding="utf-8")  # rewritten shorter
    recover(home, tmp_path)
    assert prompt_count(home) == 1  # counted anew, as its units are stored anew


def test_recover_keeps_the_prompt_count_of_a_session_its_hook_counted(
    home: Path, tmp_path: Path, memory: Memory
) -> None:
    """The prompt hook counted the session's prompts (and the harness's, which a
    transcript does not show as prompts): the transcript adds none of its own."""
    on_disk(home, RECORDED.read_text(encoding="utf-8"))
    for prompt in ("The webhook retry test fails on CI.", "<task-notification>done", "Push?"):
        memory.record_prompt(SESSION, prompt, project="payments", agent="claude-code")
    memory.close()
    assert recover(home, tmp_path)["sessions"] == 1
    assert prompt_count(home) == 3
