"""The `memlane` command from the outside: real subprocesses and click's runner."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane.cli import cli
from memlane.service import Memory
from tests.conftest import MEMLANE_CMD, one_line_error, run_env


def run(
    home: Path, *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMLANE_CMD, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=run_env(home),
        cwd=cwd,
        timeout=60,
        check=False,
    )


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_then_search_returns_source_ids(home: Path, tmp_path: Path) -> None:
    data = write_jsonl(
        tmp_path / "notes.jsonl",
        [
            json.dumps(
                {
                    "id": "n1",
                    "text": "We picked SQLite WAL for concurrent hooks",
                    "session": "s1",
                    "timestamp": "2026-01-02T03:04:05Z",
                }
            ),
            json.dumps(
                {
                    "id": "n2",
                    "content": "The dashboard renders text, never HTML",
                    "speaker": "assistant",
                    "tags": ["security"],
                }
            ),
        ],
    )
    imported = run(home, "import", "jsonl", str(data), "--project", "P")
    assert imported.returncode == 0, imported.stderr
    assert "imported 2 new" in imported.stdout
    found = run(home, "search", "SQLite WAL", "--project", "P", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["source_id"] == "n1"
    assert hits[0]["session_id"] == "s1"
    assert hits[0]["created_at"].startswith("2026-01-02T03:04:05")
    assert "normalized_hash" not in hits[0]
    again = run(home, "import", "jsonl", str(data), "--project", "P")
    assert "imported 0 new" in again.stdout
    assert "2 already present" in again.stdout


def test_import_reports_bad_lines_and_keeps_good_ones(home: Path, tmp_path: Path) -> None:
    data = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            json.dumps({"text": "good one"}),
            "{not json",
            json.dumps({"text": ""}),
            json.dumps({"text": "bad date", "timestamp": "yesterday-ish"}),
            json.dumps(["an", "array"]),
            json.dumps({"text": "good two", "tags": "not-a-list"}),
            json.dumps({"text": "good three"}),
        ],
    )
    result = run(home, "import", "jsonl", str(data), "--project", "P")
    assert result.returncode == 2
    assert "imported 2 new" in result.stdout
    for number in (2, 3, 4, 5, 6):
        assert f"line {number}:" in result.stderr
    listed = run(home, "search", "good", "--project", "P", "--json")
    assert len(json.loads(listed.stdout)) == 2


def test_a_partial_import_says_what_went_in_and_why_a_line_was_refused(
    home: Path, tmp_path: Path
) -> None:
    data = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            json.dumps({"text": "good one"}),
            json.dumps({"text": 5}),
            json.dumps({"content": ["a", "list"]}),
            json.dumps({"text": "   "}),
            json.dumps({"title": "no text at all"}),
            json.dumps({"text": "good two"}),
        ],
    )
    partial = run(home, "import", "jsonl", str(data), "--project", "P")
    assert partial.returncode == 2  # bad lines were left out: a script must notice
    errors = partial.stderr.splitlines()
    assert "line 2: 'text' is a number: a non-empty string is required" in errors[0]  # said missing
    assert "line 3: 'content' is an array" in errors[1]
    assert "line 4: 'text' is empty" in errors[2]
    assert "line 5: missing 'text' (or 'content')" in errors[3]
    assert (
        errors[-1]
        == "error: 4 bad lines left out; the 2 good lines were imported (or already present)"
    )
    again = run(home, "import", "jsonl", str(data), "--project", "P", "--json")
    assert again.returncode == 2 and json.loads(again.stdout)["skipped"] == 2
    bad_only = write_jsonl(tmp_path / "bad.jsonl", [json.dumps({"text": None})])
    refused = run(home, "import", "jsonl", str(bad_only))
    assert "line 1: 'text' is null" in refused.stderr
    assert refused.stderr.splitlines()[-1] == "error: 1 bad line left out; nothing was imported"
    good_only = write_jsonl(tmp_path / "good.jsonl", [json.dumps({"text": "good three"})])
    fine = run(home, "import", "jsonl", str(good_only))
    assert fine.returncode == 0 and fine.stderr == ""


def test_save_stdin_json_and_get(home: Path) -> None:
    saved = run(
        home,
        "save",
        "-",
        "--type",
        "decision",
        "--project",
        "P",
        "--json",
        stdin="Adopt ruff for linting",
    )
    assert saved.returncode == 0, saved.stderr
    result = json.loads(saved.stdout)
    assert result["status"] == "created"
    shown = run(home, "get", str(result["id"]), "--json")
    record = json.loads(shown.stdout)
    assert record["content"] == "Adopt ruff for linting"
    assert record["kind"] == "knowledge"
    assert "normalized_hash" not in record


def test_get_shows_the_content_once(home: Path) -> None:
    text = "Retries back off exponentially.\nThe cap is 30 seconds."
    saved = json.loads(run(home, "save", text, "--title", "Retry policy", "--json").stdout)
    shown = run(home, "get", str(saved["id"])).stdout
    assert shown.count("Retries back off exponentially.") == 1  # a preview, then the body
    head, title, blank, *body = shown.splitlines()
    assert head.startswith(f"#{saved['id']}  ") and title == "  Retry policy" and blank == ""
    assert body == text.splitlines()


def test_saving_empty_text_says_it_is_empty(home: Path) -> None:
    for blank in ("", "  \n "):
        refused = run(home, "save", blank)
        assert refused.returncode == 2
        assert refused.stderr == "error: nothing to save: the content is empty\n"  # no filter
    private = run(home, "save", "<private>all of it</private>")
    assert private.returncode == 2 and "empty after privacy filtering" in private.stderr


def test_identical_topic_key_resave_is_deduplicated(home: Path) -> None:
    """An iLAB-style re-save of the same text: no revision, the memory stays in its session."""
    args = ["save", "Tokens live in the OS keychain", "--type", "decision", "--project", "P"]
    first = run(home, *args, "--topic-key", "auth/tokens", "--session", "s1", "--json")
    assert first.returncode == 0, first.stderr
    again = run(home, *args, "--topic-key", "auth/tokens", "--session", "s2")
    memory_id = json.loads(first.stdout)["id"]
    assert again.stdout.strip() == f"deduplicated #{memory_id}"
    record = json.loads(run(home, "get", str(memory_id), "--json").stdout)
    assert (record["revision_count"], record["session_id"]) == (0, "s1")
    changed = run(home, "save", "Tokens live in the keychain, per user", *args[2:],
                  "--topic-key", "auth/tokens", "--session", "s2", "--json")  # fmt: skip
    assert json.loads(changed.stdout) == {
        "status": "updated",
        "id": memory_id,
        "kept_type": None,
        "notice": None,
    }
    record = json.loads(run(home, "get", str(memory_id), "--json").stdout)
    assert (record["revision_count"], record["session_id"]) == (1, "s2")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["get", "999"], "no memory with id 999"),
        (["search", "x", "--as-of", "not-a-date"], "bad date"),
        (["delete", "--before", "tomorrowish", "--yes"], "bad date"),
        (["prune", "--older-than", "soon"], "bad duration"),
        (["import", "jsonl", "/nonexistent/file.jsonl"], "no such file"),
        (["import", "jsonl", "/dev/null"], "not a regular file: /dev/null"),
        (["delete", "--yes"], "say what to delete"),
    ],
)
def test_bad_input_one_clear_line(home: Path, args: list[str], message: str) -> None:
    result = run(home, *args)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr


def test_an_edit_without_a_change_names_the_options_edit_has(home: Path) -> None:
    memory_id = json.loads(run(home, "save", "kept as it is", "--json").stdout)["id"]
    refused = run(home, "edit", str(memory_id))
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: nothing to change: give --content, --title or --type")
    assert "tags" not in refused.stderr  # edit has no --tag or --file option


def test_delete_asks_for_confirmation(home: Path) -> None:
    run(home, "save", "temporary", "--project", "P")
    refused = run(home, "delete", "--project", "P", stdin="n\n")
    assert refused.returncode != 0
    assert "1" in run(home, "stats").stdout
    accepted = run(home, "delete", "--project", "P", "--yes")
    assert "deleted 1" in accepted.stdout


def test_edit_timeline_list_stats_export(home: Path, tmp_path: Path) -> None:
    created = json.loads(
        run(home, "save", "first", "--project", "P", "--session", "s1", "--json").stdout
    )
    edited = run(home, "edit", str(created["id"]), "--content", "first, revised")
    assert "revision 1" in edited.stdout
    timeline = json.loads(run(home, "timeline", "--project", "P", "--json").stdout)
    assert timeline[0]["content"] == "first, revised"
    sessions = json.loads(run(home, "list", "--project", "P", "--json").stdout)
    assert sessions[0]["id"] == "s1"
    stats = json.loads(run(home, "stats", "--json").stdout)
    assert stats["memories"] == 1
    for fmt in ("jsonl", "json", "markdown"):
        out = run(home, "export", "--format", fmt)
        assert out.returncode == 0
        assert "first, revised" in out.stdout


def test_an_edit_to_an_empty_type_is_refused_with_one_line(home: Path) -> None:
    created = json.loads(run(home, "save", "kept as it is", "--project", "P", "--json").stdout)
    for blank in ("", "  "):
        refused = run(home, "edit", str(created["id"]), "--type", blank)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.strip() == (
            "error: the type is empty: give one such as note, decision or bugfix"
        )
    shown = json.loads(run(home, "get", str(created["id"]), "--json").stdout)
    assert shown["type"] == "note" and shown["revision_count"] == 0
    # `save --type ''` and `search --type ''` are refused the same way (`save` stored a note,
    # `search` matched nothing with rc 0: probe D10); a save without --type is a note.
    for args in (("save", "x", "--type", " "), ("search", "kept", "--type", "")):
        refused = run(home, *args, "--project", "P")
        assert refused.stderr.strip() == (
            "error: the type is empty: give one such as note, decision or bugfix"
        ), args
        assert refused.returncode == 2
    saved = json.loads(run(home, "save", "x", "--project", "P", "--json").stdout)
    assert json.loads(run(home, "get", str(saved["id"]), "--json").stdout)["type"] == "note"
    # The same text again with another type: deduplicated, and the output says the type
    # was not applied (it was dropped without a word).
    again = run(home, "save", "x", "--type", "idea", "--project", "P")
    assert again.returncode == 0 and again.stdout.strip() == f"deduplicated #{saved['id']}"
    assert "as type 'note'; the type 'idea' was not applied" in again.stderr
    # The CLI's step in its one form, as the search's (`(run `memlane embed --backfill`)`).
    assert f"(run `memlane edit {saved['id']} --type idea`)" in again.stderr
    # `--json` carries the kept type and the same note (HTTP and MCP answer with it too).
    answer = json.loads(run(home, "save", "x", "--type", "Idea", "--project", "P", "--json").stdout)
    assert answer["kept_type"] == "note" and answer["notice"] in again.stderr


def test_prune_dry_run_matches(home: Path, tmp_path: Path) -> None:
    data = write_jsonl(
        tmp_path / "old.jsonl",
        [json.dumps({"text": f"old {i}", "timestamp": "2020-01-01T00:00:00Z"}) for i in range(3)]
        + [json.dumps({"text": "fresh"})],
    )
    run(home, "import", "jsonl", str(data), "--project", "P")
    dry = run(home, "prune", "--older-than", "90d", "--dry-run")
    assert "would prune 3" in dry.stdout
    done = run(home, "prune", "--older-than", "90d", "--yes")
    assert "pruned 3" in done.stdout


def test_a_dry_run_of_delete_and_prune_lists_what_would_go(home: Path, tmp_path: Path) -> None:
    old = [
        {"text": f"old note {i}", "title": f"Old {i}", "type": "decision", "id": f"o{i}"}
        | {"timestamp": 1_577_836_800 + i * 86_400}  # 2020-01-01, then a day apart
        for i in range(53)
    ]
    data = write_jsonl(tmp_path / "old.jsonl", [json.dumps(record) for record in old])
    run(home, "import", "jsonl", str(data), "--project", "P")
    saved = json.loads(run(home, "save", "one fresh\nnote", "--project", "Q", "--json").stdout)
    one = run(home, "delete", "--project", "Q", "--dry-run").stdout.splitlines()
    assert one[0] == "would delete 1 memory:"  # was "would delete 1 memories", nothing listed
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert one[1:] == [f"  #{saved['id']}  {today}  note  one fresh note"]
    dry = run(home, "prune", "--older-than", "90d", "--dry-run").stdout.splitlines()
    assert dry[0] == "would prune 53 memories:"
    assert dry[1].endswith("  2020-01-01  decision  Old 0") and dry[1].startswith("  #")
    assert len(dry) == 1 + 50 + 1 and dry[-1] == "  … and 3 more"
    assert "would delete 53 memories:" in run(home, "delete", "--project", "P", "--dry-run").stdout
    asked = run(home, "delete", "--project", "Q", stdin="n\n")
    assert asked.stdout.startswith("selected 1 memory:\n  #")  # listed before the question
    assert "delete 1 memory? [y/N]" in asked.stdout
    done = run(home, "delete", "--project", "Q", "--yes")
    assert done.stdout == "deleted 1 memory\n"


def test_config_show_set_and_validation(home: Path) -> None:
    assert run(home, "config", "path").stdout.strip() == str(home / "config.toml")
    ok = run(home, "config", "set", "recall_limit", "5")
    assert ok.returncode == 0, ok.stderr
    shown = json.loads(run(home, "config", "show", "--json").stdout)
    assert shown["recall_limit"] == 5
    bad = run(home, "config", "set", "scope", "galaxy")
    assert bad.returncode != 0
    assert "scope" in bad.stderr
    unknown = run(home, "config", "set", "nope", "1")
    assert "unknown setting" in unknown.stderr
    assert (home / "config.toml").stat().st_mode & 0o777 == 0o600


def test_config_show_states_the_keyword_recall_margin_the_code_uses(home: Path) -> None:
    from memlane.config import KEYWORD_RECALL_MARGIN

    shown = run(home, "config", "show").stdout.splitlines()
    (floor,) = [line for line in shown if line.startswith("min_relevance_score =")]
    assert f"keyword-only recall needs {KEYWORD_RECALL_MARGIN:.2f} more" in floor  # said 0.10


def test_a_huge_bad_since_is_quoted_short(home: Path) -> None:
    found = run(home, "search", "anything", "--since", "x" * 100_000)
    assert found.returncode == 2
    assert found.stderr.startswith("error: --since: bad date 'xxxx")
    assert len(found.stderr) < 300 and "…" in found.stderr  # was the whole 100 kB


def test_config_set_takes_a_negative_number_and_a_refusal_says_nothing_changed(
    home: Path,
) -> None:
    assert run(home, "config", "set", "min_relevance_score", "0.4").returncode == 0
    before = (home / "config.toml").read_text()
    negative = run(home, "config", "set", "min_relevance_score", "-0.5")
    # Read as a value (was click's "No such option '-0.5'"), and out of range: refused,
    # not saved clamped (`maintenance.max_db_size_mb -1` saved 5 MB, a cap maintenance
    # would then prune the store down to; `recall_limit -5` turned recall off).
    assert negative.returncode == 2 and "No such option" not in negative.stderr
    assert "is outside [0" in negative.stderr and "nothing was changed" in negative.stderr
    assert (home / "config.toml").read_text() == before
    refused = run(home, "config", "set", "recall_limit", "-5x")
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: bad value '-5x' for recall_limit")
    assert refused.stderr.rstrip().endswith("nothing was changed")
    assert "using default" not in refused.stderr
    assert (home / "config.toml").read_text() == before
    huge = run(home, "config", "set", "recall_limit", "9" * 4000)
    assert huge.returncode == 2
    assert len(huge.stderr) < 400 and "…" in huge.stderr
    token = "ghp_FzTOGODgSs0zd1AVfMvEt5unEn5ackVMNGCZ"  # a secret in the wrong key: not echoed
    secret = run(home, "config", "set", "recall_limit", token)
    assert secret.returncode == 2 and token[4:] not in secret.stderr, secret.stderr
    assert (home / "config.toml").read_text() == before


def test_retired_setting_in_an_old_config_warns_once_and_breaks_nothing(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("recall_limit = 4\n[worker]\nrecall_timeout_ms = 300\n")
    shown = run(home, "config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["recall_limit"] == 4
    assert "recall_timeout_ms" not in shown.stdout
    notices = shown.stderr.splitlines()
    assert len(notices) == 1
    assert "worker.recall_timeout_ms" in notices[0] and "no longer used" in notices[0]
    refused = run(home, "config", "set", "worker.recall_timeout_ms", "500")
    assert refused.returncode != 0
    assert refused.stderr.startswith("error: worker.recall_timeout_ms is no longer used")
    assert refused.stderr.count("\n") == 1
    assert "Traceback" not in refused.stderr


def test_db_file_and_dirs_are_private(home: Path) -> None:
    run(home, "save", "x", "--project", "P")
    assert (home / "memlane.db").stat().st_mode & 0o777 == 0o600
    assert home.stat().st_mode & 0o777 == 0o700


def test_global_db_option(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "elsewhere.db"
    run(home, "--db", str(db), "save", "elsewhere", "--project", "P")
    assert db.exists()
    assert not (home / "memlane.db").exists()


def test_demo_runs() -> None:
    result = CliRunner().invoke(cli, ["demo"])
    assert result.exit_code == 0, result.output
    assert "sample memories" in result.output
    assert "認証トークン" in result.output


def test_the_demo_reads_none_of_the_users_state(home: Path, tmp_path: Path) -> None:
    """The demo's throw-away home took the rest of the environment: MEMLANE_CONFIG naming a
    missing file stopped it (exit 2), and MEMLANE_DB got the sample memories."""
    user_db = tmp_path / "mine.db"
    env = {
        **run_env(home),
        "MEMLANE_CONFIG": str(tmp_path / "gone.toml"),
        "MEMLANE_DB": str(user_db),
    }
    for flags in ((), ("--config", str(tmp_path / "gone.toml"))):
        done = subprocess.run(
            [*MEMLANE_CMD, *flags, "demo"], capture_output=True, text=True, env=env, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "Loaded" in done.stdout and "sample memories" in done.stdout
        assert not user_db.exists() and not (tmp_path / "gone.toml").exists()


def test_help_texts() -> None:
    runner = CliRunner()
    top = runner.invoke(cli, ["--help"])
    assert top.exit_code == 0
    for command in (
        "save",
        "search",
        "get",
        "timeline",
        "list",
        "stats",
        "edit",
        "delete",
        "prune",
        "export",
        "import",
        "config",
        "demo",
        "hook",
    ):
        assert command in top.output
        sub = runner.invoke(cli, [command, "--help"])
        assert sub.exit_code == 0, command
        assert "Usage:" in sub.output


def test_stats_of_one_project(home: Path) -> None:
    env = run_env(home)
    for project, text in (("api", "retry with idempotency keys"), ("web", "css grid layout")):
        done = subprocess.run(
            [*MEMLANE_CMD, "save", text, "--project", project],
            env=env, capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [*MEMLANE_CMD, "stats", "--project", "api", "--json"],
        env=env, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    data = json.loads(done.stdout)
    assert data["memories"] == 1 and data["projects"] == {"api": 1}


def test_global_config_option_precedence_and_errors(home: Path, tmp_path: Path) -> None:
    """--config PATH: flags > MEMLANE_* env > that file > defaults; errors name file and key."""
    for project, text in (("api", "Rotate the signing key monthly"), ("web", "signing key in CI")):
        assert run(home, "save", text, "--project", project, "--type", "lesson").returncode == 0
    config = tmp_path / "team.toml"
    config.write_text('scope = "project"\nrecall_limit = 7\n', encoding="utf-8")
    (home / "config.toml").write_text("recall_limit = 2\n", encoding="utf-8")  # not read

    def projects(*args: str, env: dict[str, str] | None = None) -> set[str]:
        cmd = [*MEMLANE_CMD, "--config", str(config), "search", "signing key", *args]
        done = subprocess.run(
            [*cmd, "--project", "api", "--json", "--mode", "keyword"],
            capture_output=True,
            text=True,
            env={**run_env(home), **(env or {})},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return {hit["project"] for hit in json.loads(done.stdout)}

    assert projects() == {"api"}  # the file's scope over the default (tiered)
    assert projects(env={"MEMLANE_SCOPE": "all"}) == {"api", "web"}  # env over the file
    assert projects("--scope", "all", env={"MEMLANE_SCOPE": "project"}) == {"api", "web"}
    shown = run(home, "--config", str(config), "config", "show", "--json")
    assert json.loads(shown.stdout)["recall_limit"] == 7
    assert run(home, "--config", str(config), "config", "path").stdout.strip() == str(config)
    # MEMLANE_CONFIG names the file too (hooks and spawned workers read it).
    env = {**run_env(home), "MEMLANE_CONFIG": str(config)}
    by_env = subprocess.run(
        [*MEMLANE_CMD, "config", "show", "--json"], capture_output=True, text=True, env=env
    )
    assert json.loads(by_env.stdout)["recall_limit"] == 7

    nope = tmp_path / "nope.toml"
    missing = run(home, "--config", str(nope), "stats")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == (
        f"error: config: no config file at {nope} (named by --config); create it or give"
        " another --config (memlane does not run on defaults in its place)\n"
    )
    # The CLI checked the file before load_settings, in other words, and refused `config
    # set`, which creates it (as it does for MEMLANE_CONFIG).
    assert run(home, "--config", str(nope), "config", "path").stdout.strip() == str(nope)
    made = run(home, "--config", str(nope), "config", "set", "recall_limit", "4")
    assert made.returncode == 0, made.stderr
    assert nope.read_text(encoding="utf-8") == "recall_limit = 4\n"
    config.write_text("scope = = 1\n", encoding="utf-8")
    broken = run(home, "--config", str(config), "stats")
    assert broken.returncode != 0 and broken.stderr.count("\n") == 1
    assert str(config) in broken.stderr and "line 1" in broken.stderr
    config.write_text('scope = "galaxy"\nrecal_limit = 3\n', encoding="utf-8")
    warned = run(home, "--config", str(config), "config", "show", "--json")
    assert warned.returncode == 0
    lines = warned.stderr.splitlines()
    assert len(lines) == 2 and all(str(config) in line for line in lines)
    assert "for scope in" in lines[0] and "'recal_limit'" in lines[1]
    assert json.loads(warned.stdout)["scope"] == "tiered"


def test_hooks_read_the_config_named_on_their_command_line(
    home: Path, project: Path, tmp_path: Path
) -> None:
    from tests.test_hooks import hook, payload, rows

    config = tmp_path / "quiet.toml"
    config.write_text(f'exclude_projects = ["{project}"]\n', encoding="utf-8")
    values = {"session": "s-1", "cwd": str(project)}
    env = run_env(home)
    done = subprocess.run(
        [*MEMLANE_CMD, "--config", str(config), "hook", "user-prompt-submit"],
        input=payload("user_prompt_submit", **values),
        capture_output=True,
        env=env,
        cwd=project,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'prompt'") in ([], [(0,)])
    # Without the file the same prompt is captured: the option made the difference.
    assert hook(home, "user-prompt-submit", payload("user_prompt_submit", **values), cwd=project)
    assert rows(home, "SELECT count(*) FROM memories WHERE kind = 'prompt'") == [(1,)]


def test_a_bad_command_line_is_one_filtered_line(home: Path) -> None:
    """Click printed the usage, a blank line and its error, the value given whole: a
    10,000-character value, or a token put in the wrong place."""
    token = "ghp_FzTOGODgSs0zd1AVfMvEt5unEn5ackVMNGCZ"
    for args, says in (
        (["list", "--limit", token], "Invalid value for '--limit'"),
        (["list", "--limit", "9x" * 5000], "Invalid value for '--limit'"),
        (["list", "--nope"], "No such option '--nope'"),
        (["search"], "Missing argument 'QUERY'"),
    ):
        done = run(home, *args)
        assert done.returncode == 2
        [line] = done.stderr.splitlines()
        assert line.startswith(f"error: {says}") and line.endswith(f"`memlane {args[0]} --help`)")
        assert token[4:] not in line and len(line) < 400


def test_export_to_a_dash_writes_to_stdout(home: Path, tmp_path: Path) -> None:
    # "-o -" wrote a file named "-" in the working directory.
    assert run(home, "save", "the retry queue drains", "--project", "P").returncode == 0
    for args in (["export", "-o", "-"], ["index", "export", "-o", "-", "--project", "P"]):
        done = run(home, *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("{"), done.stdout[:200]
        assert not (tmp_path / "-").exists()


def test_an_error_naming_a_path_does_not_repeat_a_secret_in_it(home: Path) -> None:
    token = "ghp_FzTOGODgSs0zd1AVfMvEt5unEn5ackVMNGCZ"
    done = run(home, "import", "jsonl", f"/tmp/token={token}/x.jsonl")
    assert done.returncode != 0
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and token[4:] not in line


# Every command that takes --project, with what it needs besides (probe s28 F10).
PROJECT_COMMANDS = [
    ("save", "a note for the empty project"),
    ("search", "note"),
    ("stats",),
    ("delete", "--yes"),
    ("prune", "--older-than", "1d", "--yes"),
    ("timeline",),
    ("list",),
    ("export", "--format", "jsonl"),
]


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_project_name_is_refused_by_every_command(
    home: Path, tmp_path: Path, name: str
) -> None:
    """``--project ''`` was read three ways: the current directory's project by save and
    search (a note went to `api`), a project named '' by stats, delete and prune
    (nothing matched, exit 0), and ``stats --project ' '`` was accepted too."""
    work = tmp_path / "api"
    work.mkdir()
    saved = run(home, "save", "kept where it belongs", cwd=work)
    assert saved.returncode == 0, saved.stderr
    for command, *rest in PROJECT_COMMANDS:
        for args in ([command, "--project", name, *rest], ["--project", name, command, *rest]):
            done = run(home, *args, cwd=work)
            line = one_line_error(done, 2)
            assert "the project name is empty" in line, (args, line)
    assert json.loads(run(home, "stats", "--json").stdout)["memories"] == 1


def test_stats_delete_and_prune_take_the_global_project(home: Path) -> None:
    """`memlane --project P stats|delete|prune` ignored P: stats counted, and prune
    deleted in, every project."""
    for project in ("api", "web"):
        assert run(home, "--project", project, "save", f"a note in {project}").returncode == 0
    assert json.loads(run(home, "--project", "api", "stats", "--json").stdout)["memories"] == 1
    for command in (["prune", "--older-than", "0s"], ["delete"]):
        assert run(home, "--project", "web", "save", "a note in web again").returncode == 0
        done = run(home, "--project", "web", *command, "--yes")
        assert done.returncode == 0, done.stderr
        assert json.loads(run(home, "stats", "--json").stdout)["projects"] == {"api": 1}


def test_content_over_a_memory_is_refused_by_save_edit_and_import(
    home: Path, tmp_path: Path
) -> None:
    # `save` and `import jsonl` stored the first 64,000 of 70,000 characters, rc 0, while
    # MCP refused the same text (probe D4): one rule now, a refusal naming the limit.
    long = "q" * 70_000
    saved = run(home, "save", long)
    assert "a memory holds at most 64,000" in one_line_error(saved, 2)
    assert "nothing saved" in saved.stderr
    assert run(home, "save", "fits", "--project", "p").returncode == 0
    edited = run(home, "edit", "1", "--content", long)
    assert "70,000 characters" in one_line_error(edited, 2)
    data = write_jsonl(
        tmp_path / "long.jsonl",
        [json.dumps({"text": "j" * 70_000}), json.dumps({"text": "short one"})],
    )
    imported = run(home, "import", "jsonl", str(data), "--project", "p")
    assert imported.returncode == 2, imported.stderr
    assert "line 1" in imported.stderr and "at most 64,000" in imported.stderr
    listed = run(home, "--project", "p", "export", "--format", "jsonl")
    texts = [json.loads(line).get("text") for line in listed.stdout.splitlines()[1:]]
    assert sorted(t for t in texts if t) == ["fits", "short one"]


def test_an_output_in_a_missing_folder_is_refused(home: Path, tmp_path: Path) -> None:
    # `export -o /nonexistent/x` made /nonexistent (0700) and wrote there; so did `index
    # export -o` and `serve --log-file`, while `backup` refuses a missing folder (probe D7).
    from tests.test_web_support import free_port

    assert run(home, "save", "a decision", "--project", "p").returncode == 0
    missing = tmp_path / "typo" / "deeper"
    for args in (
        ("export", "--format", "jsonl", "-o", str(missing / "x.jsonl")),
        ("index", "export", "--project", "p", "-o", str(missing / "i.json")),
        ("serve", "--port", str(free_port()), "--log-file", str(missing / "w.log")),
    ):
        refused = run(home, *args)
        assert "does not exist; create it first" in one_line_error(refused, 2), args
    assert not (tmp_path / "typo").exists()
    (tmp_path / "typo").mkdir()
    done = run(home, "export", "--format", "jsonl", "-o", str(tmp_path / "typo" / "x.jsonl"))
    assert done.returncode == 0 and (tmp_path / "typo" / "x.jsonl").is_file()


def test_an_output_whose_folder_is_a_file_is_refused_as_backup_refuses_it(
    home: Path, tmp_path: Path
) -> None:
    """``export -o file/x`` said "… is not a directory; create it first" (no folder can be
    made where a file is); ``backup`` worded it apart. One rule now (paths.output_folder)."""
    assert run(home, "save", "a decision", "--project", "p").returncode == 0
    a_file = tmp_path / "notes.txt"
    a_file.write_text("the user's\n")
    exported = one_line_error(run(home, "export", "--format", "jsonl", "-o", f"{a_file}/x"), 2)
    backed_up = one_line_error(run(home, "backup", f"{a_file}/b.db"), 2)
    for refused, what in ((exported, "the export"), (backed_up, "the backup")):
        assert f"the folder {a_file} of {what} {a_file}/" in refused, refused
        assert refused.endswith("is not a directory"), refused
    assert a_file.read_text() == "the user's\n"


def test_the_search_table_shows_a_title_its_snippet_repeats_once(home: Path) -> None:
    """A title is often the content's first line, cut: the table showed "X…: X…"."""
    text = (
        "Continuing with gqc.6 — I need to add tests for the close_review_session event,"
        " then run quality checks and commit the review page work before the push."
    )
    title = "Continuing with gqc.6 — I need to add tests for the…"
    saved = run(home, "save", text, "--title", title, "--project", "P")
    assert saved.returncode == 0, saved.stderr
    found = run(home, "search", "close_review_session quality", "--project", "P")
    assert found.returncode == 0, found.stderr
    shown = " ".join(found.stdout.replace("│", " ").split())
    assert shown.count("Continuing with gqc.6") == 1, found.stdout


def test_import_jsonl_of_a_json_export_says_so_in_one_line(home: Path, tmp_path: Path) -> None:
    for text in ("the first note", "the second note", "the third note"):
        assert run(home, "save", text, "--project", "P").returncode == 0
    export = tmp_path / "all.json"
    done = run(home, "export", "--format", "json", "-o", str(export))
    assert done.returncode == 0, done.stderr
    refused = run(home, "import", "jsonl", str(export))
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.splitlines()  # not one "not valid JSON" per line of it
    assert line == (
        f"error: {export} is one JSON document, not JSON Lines (one record a line); nothing"
        f" imported: a memlane JSON export is imported with `memlane import memlane {export}`"
    )
    assert run(home, "import", "memlane", str(export)).returncode == 0


@pytest.mark.parametrize(
    "first",
    [
        '{"content": "note one", "format": "markdown"}',  # a key of the user's own
        '{"content": "broken',  # one bad line, reported by its number
        '{"content": "' + "long " * 7_000_000 + '"}',  # longer than a line may be
    ],
    ids=["format-key", "broken", "too-long"],
)
def test_import_jsonl_reads_lines_whatever_the_first_one(
    home: Path, tmp_path: Path, first: str
) -> None:
    data = tmp_path / "notes.jsonl"
    data.write_text(first + '\n{"content": "note two"}\n{"content": "note three"}\n')
    done = run(home, "import", "jsonl", str(data), "--project", "P", "--json")
    assert "one JSON document" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["created"] == (3 if "markdown" in first else 2), report


@pytest.mark.parametrize(
    "document",
    [
        '[\n{"content": "note one"},\n{"content": "note two"}\n]\n',
        '{\n  "memories": [{"content": "note one"}]\n}\n',
        '{"memories": [\n{"content": "note one"},\n{"content": "note two"}\n]}\n',
    ],
    ids=["list", "lone-brace", "object-over-lines"],
)
def test_import_jsonl_refuses_a_json_document(home: Path, tmp_path: Path, document: str) -> None:
    data = tmp_path / "notes.json"
    data.write_text(document)
    refused = run(home, "import", "jsonl", str(data))
    assert refused.returncode == 2
    assert "is one JSON document, not JSON Lines" in refused.stderr, refused.stderr


def test_import_jsonl_refuses_a_json_export_written_on_one_line(home: Path, tmp_path: Path) -> None:
    assert run(home, "save", "the only note", "--project", "P").returncode == 0
    export = tmp_path / "all.json"
    assert run(home, "export", "--format", "json", "-o", str(export)).returncode == 0
    export.write_text(json.dumps(json.loads(export.read_text())) + "\n")
    refused = run(home, "import", "jsonl", str(export))
    assert refused.returncode == 2
    assert "is one JSON document, not JSON Lines" in refused.stderr, refused.stderr
    assert run(home, "import", "memlane", str(export)).returncode == 0


def test_list_says_auto_closed_once(memory: Memory, home: Path) -> None:
    """An idle-closed session read "auto_closed (auto-closed)"."""
    memory.session_start("s-idle", project="p", agent="claude-code")
    later = datetime(2100, 1, 1, tzinfo=UTC)
    assert memory.close_idle_sessions(project="p", now=later) == ["s-idle"]
    listed = CliRunner(env=run_env(home)).invoke(cli, ["list", "--project", "p"])
    assert listed.exit_code == 0, listed.output
    line = next(line for line in listed.output.splitlines() if line.startswith("s-idle"))
    assert "auto-closed" in line and line.count("auto") == 1, line


def test_context_of_an_empty_project_says_so_instead_of_a_blank_line(home: Path) -> None:
    done = run(home, "context", "--project", "fresh")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == "nothing stored for project 'fresh' yet\n"


def test_context_prints_the_pack_http_and_mcp_give(memory: Memory, home: Path) -> None:
    memory.save("Deploys go through the blue-green script", project="api", type="decision")
    runner = CliRunner(env=run_env(home))
    shown = runner.invoke(cli, ["context", "--project", "api"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.strip() == memory.context(project="api").strip()
    assert "blue-green" in shown.output
    as_json = json.loads(runner.invoke(cli, ["context", "--project", "  api ", "--json"]).output)
    assert as_json == {"project": "api", "text": memory.context(project="api")}  # as used
