"""A config that cannot be used stops every caller: never defaults in its place.

An unreadable config.toml and an invalid secret pattern are refused by config loading
(memlane.config.load_settings) for the CLI, the scheduled maintenance and the hooks
alike; a hook logs one line, prints nothing, exits 0 and stores nothing.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_memlane

BROKEN = "recall_limit = 3,\n[maintenance]\nmax_age_days = 3650\n"
BAD_PATTERNS = 'secret_patterns = ["hunter[0-9", "MYTOKEN-[0-9]+"]\n'


def _count(home: Path) -> int:
    with sqlite3.connect(home / "memlane.db") as db:
        return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])


def _hook_lines(home: Path) -> list[str]:
    log = home / "logs" / "hooks.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_a_config_file_that_is_not_toml_stops_maintenance_instead_of_pruning(
    home: Path,
) -> None:
    # With `recall_limit = 3,` added, maintenance read no file and pruned with the
    # default 90 days what the user's 3650 days kept.
    for text in ("ran the billing migration", "rotated the keys", "pinned numpy 2"):
        saved = run_memlane(home, "--project", "p1", "save", text, "--type", "command")
        assert saved.returncode == 0, saved.stderr
    days_ago = (datetime.now(UTC) - timedelta(days=200)).timestamp()
    with sqlite3.connect(home / "memlane.db") as db:
        db.execute("UPDATE memories SET created_at = ?, updated_at = ?", (days_ago, days_ago))
    config = home / "config.toml"
    config.write_text("[maintenance]\nmax_age_days = 3650\n", encoding="utf-8")
    kept = run_memlane(home, "maintain", "--dry-run")
    assert kept.returncode == 0 and "3650" in kept.stdout, kept
    config.write_text(BROKEN, encoding="utf-8")
    enabled = {"MEMLANE_MAINTENANCE_ENABLED": "true"}
    for args in (("maintain",), ("stats",), ("--project", "p1", "save", "one more")):
        line = one_line_error(run_memlane(home, *args, env=enabled), 2)
        assert f"cannot read {config}" in line and "fix the file" in line, line
    background = run_memlane(home, "maintain", "--background", env=enabled)
    assert background.returncode == 2
    assert "not run: config: cannot read" in background.stderr, background.stderr
    assert _count(home) == 3
    assert run_memlane(home, "config", "path").stdout.strip() == str(config)


def test_an_invalid_secret_pattern_refuses_the_cli_and_the_hook_stores_nothing(
    home: Path, tmp_path: Path
) -> None:
    # The bad pattern was skipped with a warning: "hunter22" was stored unmasked.
    assert run_memlane(home, "--project", "p1", "save", "a first note").returncode == 0
    config = home / "config.toml"
    config.write_text(BAD_PATTERNS, encoding="utf-8")
    secret = "pw hunter22 and MYTOKEN-1234 here"
    line = one_line_error(run_memlane(home, "--project", "p1", "save", secret), 2)
    assert "secret_patterns" in line and "is not a regular expression" in line, line
    assert "secret_patterns" in one_line_error(run_memlane(home, "config", "show"), 2)
    cwd = tmp_path / "project"
    cwd.mkdir()
    event = {
        "session_id": "s1",
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_1",
        "tool_input": {"command": "echo $PW"},
        "tool_response": {"stdout": secret, "stderr": "", "exit_code": 0},
    }
    before = _hook_lines(home)
    hook = run_memlane(home, "hook", "post-tool-use", stdin=json.dumps(event), cwd=cwd)
    assert hook.returncode == 0 and hook.stdout == "" and hook.stderr == "", hook
    new = _hook_lines(home)[len(before) :]
    assert len(new) == 1 and "secret_patterns" in new[0], new
    config.unlink()
    from_env = {"MEMLANE_SECRET_PATTERNS": "\udcff("}  # the bytes b"\xff(" in the environment
    line = one_line_error(run_memlane(home, "--project", "p1", "save", secret, env=from_env), 2)
    assert "MEMLANE_SECRET_PATTERNS" in line and "not UTF-8 text" in line, line
    with sqlite3.connect(home / "memlane.db") as db:
        texts = [row[0] for row in db.execute("SELECT content FROM memories")]
    assert texts == ["a first note"], texts


def test_config_set_repairs_a_bad_pattern_and_refuses_bytes_in_one_line(home: Path) -> None:
    home.mkdir(parents=True)
    config = home / "config.toml"
    config.write_text(BAD_PATTERNS, encoding="utf-8")
    fixed = run_memlane(home, "config", "set", "secret_patterns", "hunter[0-9]+")
    assert fixed.returncode == 0, fixed.stderr
    before = config.read_text(encoding="utf-8")
    for key, value in (("secret_patterns", "\udcff"), ("exclude_projects", "a\udcff")):
        # A 35-line UnicodeEncodeError traceback when the file was written.
        line = one_line_error(run_memlane(home, "config", "set", key, value), 2)
        assert key in line and "(not UTF-8 text); nothing was changed" in line, line
    assert config.read_text(encoding="utf-8") == before


def test_a_pattern_only_the_filters_regex_reads_is_taken_and_masks(home: Path) -> None:
    """The config checks patterns with ``re``; the filter runs them with ``regex``, which
    reads more (``\\p{Lu}``): such a pattern was refused although it masks."""
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text('secret_patterns = ["tok\\\\p{Lu}{3}"]\n', encoding="utf-8")
    done = run_memlane(home, "--project", "p1", "save", "the key is tokABC today")
    assert done.returncode == 0, done.stderr
    listed = run_memlane(home, "--project", "p1", "timeline", "--json")
    assert "tokABC" not in listed.stdout and "[REDACTED:custom]" in listed.stdout, listed.stdout


def test_a_pattern_re_warns_about_prints_nothing(home: Path) -> None:
    """``re`` warns about a POSIX class (``[[:alpha:]]``: FutureWarning "Possible nested
    set") on stderr, which a hook must never write; the filter's ``regex`` reads it."""
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text('secret_patterns = ["[[:alpha:]]+-key"]\n', "utf-8")
    for args in (("config", "show"), ("--project", "p1", "save", "a note")):
        done = run_memlane(home, *args)
        assert done.returncode == 0 and done.stderr == "", done


def test_a_pattern_refused_with_a_plain_value_error_is_named_in_the_one_wording(
    home: Path,
) -> None:
    """``regex`` refuses "(?V1)[[a]--b]" and ``re`` refuses "(?u)(?a)x" with a plain
    ValueError, not their ``error``; the refusal lost its "pattern N is not a regular
    expression" (the second was not even asked of ``regex``)."""
    home.mkdir(mode=0o700)
    config = home / "config.toml"
    cases = {
        "(?V1)[[a]--b]": "VERSION0 and VERSION1 flags are mutually incompatible",
        "(?u)(?a)x": "ASCII, LOCALE and UNICODE flags are mutually incompatible",
        "a{4294967296}": "repeat count too big",
    }
    for pattern, reason in cases.items():
        config.write_text(f'secret_patterns = ["ok", {json.dumps(pattern)}]\n', "utf-8")
        line = one_line_error(run_memlane(home, "config", "show"), 2)
        wording = f"(pattern 2 is not a regular expression: {reason}"
        assert "secret_patterns" in line and wording in line, line


def test_a_pattern_re_refuses_by_recursion_is_asked_of_the_filter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``re``'s RecursionError is a refusal like its others: the filter's compiler gives
    it its wording (it escaped config as a traceback)."""
    from memlane import config, secret_rules

    asked: list[tuple[str, int]] = []
    monkeypatch.setattr(secret_rules, "compile_custom", lambda p, n: asked.append((p, n)))
    deep = "(" * 1000 + "a" + ")" * 1000
    config._patterns.cache_clear()
    config._patterns(("ok", deep))
    config._patterns.cache_clear()
    assert asked == [(deep, 2)]


def test_a_pattern_nested_too_deep_is_refused_in_one_line(home: Path) -> None:
    """``re`` and ``regex`` refuse a pattern nested 1,000 deep with a RecursionError:
    a traceback from every command."""
    home.mkdir(mode=0o700)
    deep = "(" * 1000 + "a" + ")" * 1000
    (home / "config.toml").write_text(f"secret_patterns = [{json.dumps(deep)}]\n", "utf-8")
    line = one_line_error(run_memlane(home, "stats"), 2)
    assert "pattern 1 is not a regular expression" in line, line


def test_a_config_file_named_by_memlane_config_that_is_missing_stops_every_caller(
    home: Path, tmp_path: Path
) -> None:
    """MEMLANE_CONFIG naming a file that is not there: the user expects its settings (a
    longer retention); a warning and the defaults took its place."""
    assert run_memlane(home, "--project", "p1", "save", "a first note").returncode == 0
    gone = tmp_path / "moved" / "memlane.toml"
    named = {"MEMLANE_CONFIG": str(gone), "MEMLANE_MAINTENANCE_ENABLED": "true"}
    for args in (("stats",), ("maintain",), ("--project", "p1", "save", "one more")):
        line = one_line_error(run_memlane(home, *args, env=named), 2)
        assert f"no config file at {gone} (named by MEMLANE_CONFIG)" in line, line
        assert "unset MEMLANE_CONFIG" in line, line
    background = run_memlane(home, "maintain", "--background", env=named)
    assert background.returncode == 2
    assert f"not run: config: no config file at {gone}" in background.stderr
    cwd = tmp_path / "project"
    cwd.mkdir()
    event = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "UserPromptSubmit"}
    before = _hook_lines(home)
    prompt = {**event, "prompt": "remember the ledger wants cents"}
    hook = run_memlane(home, "hook", "user-prompt-submit", stdin=json.dumps(prompt), env=named)
    assert hook.returncode == 0 and hook.stdout == "" and hook.stderr == "", hook
    new = _hook_lines(home)[len(before) :]
    assert len(new) == 1 and "no config file at" in new[0], new
    assert _count(home) == 1
    # Only the named file must exist: without the variable, a missing config.toml is fine.
    assert run_memlane(home, "stats").returncode == 0


def test_a_hooks_missing_config_file_is_said_to_be_named_by_its_config_option(
    home: Path, tmp_path: Path
) -> None:
    """``memlane --config X hook …`` (a hook command in an agent's settings) with X gone:
    the hook's line named MEMLANE_CONFIG and told to unset it, a variable the user never
    set (the option was copied into it)."""
    assert run_memlane(home, "--project", "p1", "save", "a first note").returncode == 0
    gone = tmp_path / "moved" / "memlane.toml"
    cwd = tmp_path / "project"
    cwd.mkdir()
    prompt = {"session_id": "s1", "cwd": str(cwd), "prompt": "the ledger wants cents"}
    args = ("--config", str(gone), "hook", "user-prompt-submit")
    hook = run_memlane(home, *args, stdin=json.dumps(prompt))
    assert hook.returncode == 0 and hook.stdout == "" and hook.stderr == "", hook
    [line] = _hook_lines(home)
    assert f"no config file at {gone} (named by --config)" in line, line
    assert "give another --config" in line and "MEMLANE_CONFIG" not in line, line
    assert _count(home) == 1
