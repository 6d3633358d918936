"""`memlane recover` over trees it did not make (the s26 probe, defects 6, 9 and 10).

One file it could not read, or a session whose directory lies under a folder the user may
not enter, stopped the whole run (exit 4, the later files not recovered); the error lines
printed a crafted file name's escape sequences raw; and folder links were followed out
of ``~/.claude/projects``: run as root, another user's 0600 transcript was stored.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import MEMLANE_CMD, run_env, without_dac_override


def record(session: str, cwd: Path, text: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": session,
            "cwd": str(cwd),
            "uuid": f"u-{session}",
            "timestamp": "2026-11-01T00:00:00Z",
            "message": {"role": "user", "content": text},
        }
    )


def transcript(path: Path, session: str, cwd: Path, text: str, *, age: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record(session, cwd, text) + "\n", encoding="utf-8")
    if age:
        os.utime(path, (1_700_000_000 - age, 1_700_000_000 - age))
    return path


def recover(
    home: Path, claude: Path, *, json_out: bool = True, unprivileged: bool = False
) -> subprocess.CompletedProcess[str]:
    """The real `memlane recover` over ``claude`` (``unprivileged``: a root run's DAC
    override dropped, so what mode 000 forbids is forbidden)."""
    codex = claude.parent / "no-codex"
    codex.mkdir(exist_ok=True)
    command = [*(without_dac_override() if unprivileged else []), *MEMLANE_CMD, "recover"]
    command += ["--claude-dir", str(claude), "--codex-dir", str(codex)]
    command += ["--json"] if json_out else []
    env = run_env(home) | {"HOME": str(home)}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def report(done: subprocess.CompletedProcess[str], code: int = 0) -> dict[str, Any]:
    assert done.returncode == code, done.stderr
    return dict(json.loads(done.stdout))


def found(home: Path, word: str) -> int:
    done = subprocess.run(
        [*MEMLANE_CMD, "search", word, "--all-projects", "--mode", "keyword", "--json"],
        env=run_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    return len(hits["hits"] if isinstance(hits, dict) else hits)


def test_an_unreadable_file_is_one_error_line_and_the_rest_is_recovered(
    home: Path, tmp_path: Path
) -> None:
    claude, work = tmp_path / "claude", tmp_path / "work"
    work.mkdir()
    locked = transcript(claude / "p" / "a.jsonl", "a", work, "locked away", age=20)
    locked.chmod(0)
    transcript(claude / "p" / "b.jsonl", "b", work, "the lime session", age=10)
    hidden = claude / "q"
    transcript(hidden / "c.jsonl", "c", work, "behind a closed folder")
    hidden.chmod(0)
    try:
        done = report(recover(home, claude, unprivileged=True), 2)  # some input not read
    finally:
        hidden.chmod(0o700)
    assert sorted(done["errors"]) == [
        f"{locked}: Permission denied; check its permissions",
        f"{hidden}: Permission denied; check its permissions",
    ]
    assert done["sessions"] == 1
    assert found(home, "lime") > 0


def test_a_file_it_could_not_read_makes_recover_exit_2_errors_before_the_summary(
    home: Path, tmp_path: Path
) -> None:
    claude, work = tmp_path / "claude", tmp_path / "work"
    work.mkdir()
    locked = transcript(claude / "p" / "a.jsonl", "a", work, "locked away", age=20)
    locked.chmod(0)
    transcript(claude / "p" / "b.jsonl", "b", work, "the lemon session", age=10)
    codex = tmp_path / "no-codex"
    codex.mkdir()
    command = [*without_dac_override(), *MEMLANE_CMD, "recover"]
    command += ["--claude-dir", str(claude), "--codex-dir", str(codex)]
    done = subprocess.run(
        command,
        env=run_env(home) | {"HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream: the order the user reads
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout
    error, summary = done.stdout.splitlines()
    assert error == f"error: {locked}: Permission denied; check its permissions"
    assert summary.startswith("read 1 session (") and summary.endswith("; 1 error above")
    assert found(home, "lemon") > 0  # what could be read is kept


def test_a_directory_under_a_folder_closed_to_the_user_is_one_error_line(
    home: Path, tmp_path: Path
) -> None:
    claude, work = tmp_path / "claude", tmp_path / "work"
    closed = tmp_path / "closed"
    (closed / "proj").mkdir(parents=True)
    work.mkdir()
    first = transcript(
        claude / "p" / "a.jsonl", "a", closed / "proj", "its opt-out unknown", age=20
    )
    transcript(claude / "p" / "b.jsonl", "b", work, "the lychee session", age=10)
    closed.chmod(0)
    try:
        done = report(recover(home, claude, unprivileged=True), 2)
    finally:
        closed.chmod(0o700)
    [error] = done["errors"]
    assert error.startswith(f"{first}: not read: its working directory {closed / 'proj'} cannot")
    assert error.endswith("Permission denied; check its permissions)")
    assert done["sessions"] == 1
    assert found(home, "lychee") > 0


def test_error_lines_show_a_file_names_escape_sequences(home: Path, tmp_path: Path) -> None:
    claude, work = tmp_path / "claude", tmp_path / "work"
    work.mkdir()
    folder = claude / "p\x1b]0;PWNED\x07"
    # A session id the privacy filter refuses: the error names the file.
    transcript(folder / "evil\nname\x1b[2J.jsonl", "api password=hunter2hunter2", work, "x")
    transcript(folder / "ok.jsonl", "ok", work, "the guava session")
    done = recover(home, claude, json_out=False)
    assert done.returncode == 2, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {claude}/p\\x1b]0;PWNED\\x07/evil\\nname\\x1b[2J.jsonl: ")
    assert found(home, "guava") > 0


def test_folder_links_are_followed_only_to_the_users_own_folders(
    home: Path, tmp_path: Path, other_user: pwd.struct_passwd
) -> None:
    claude, work = tmp_path / "claude", tmp_path / "work"
    work.mkdir()
    # Another user's folder, 0700, with a 0600 transcript and a subagent's.
    theirs = tmp_path / "theirs"
    transcript(theirs / "victim.jsonl", "victim", work, "their zebra secret")
    transcript(theirs / "agent-x1.jsonl", "s1", work, "their subagent zebra")
    for path in (theirs, theirs / "victim.jsonl", theirs / "agent-x1.jsonl"):
        os.chown(path, other_user.pw_uid, other_user.pw_gid)
        path.chmod(0o700 if path.is_dir() else 0o600)
    claude.mkdir()
    (claude / "linked-project").symlink_to(theirs)
    transcript(claude / "p" / "s1.jsonl", "s1", work, "an ordinary session")
    (claude / "p" / "s1").mkdir()
    (claude / "p" / "s1" / "subagents").symlink_to(theirs)
    # A project kept in the user's dotfiles, linked into the tree: theirs, so read.
    dotfiles = tmp_path / "dotfiles" / "claude-project"
    transcript(dotfiles / "kept.jsonl", "kept", work, "the dotfiles quokka session")
    (claude / "from-dotfiles").symlink_to(dotfiles)

    done = report(recover(home, claude))
    assert done["errors"] == []
    assert found(home, "zebra") == 0
    assert found(home, "ordinary") > 0
    assert found(home, "quokka") > 0


def test_an_agent_folder_given_for_its_sessions_folder_gets_a_hint(
    home: Path, tmp_path: Path
) -> None:
    dot_claude = tmp_path / ".claude"
    transcript(dot_claude / "projects" / "p" / "s-hint.jsonl", "s-hint", tmp_path, "hello")
    done = recover(home, dot_claude, json_out=False)
    assert done.returncode == 0, done.stderr
    assert f"did you mean --claude-dir {dot_claude / 'projects'}?" in done.stderr
    right = recover(home, dot_claude / "projects", json_out=False)
    assert right.returncode == 0 and "hint" not in right.stderr
