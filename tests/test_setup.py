"""`memlane setup` / `memlane uninstall` from the outside, then the installed hooks at work."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memlane.integrations.settings_merge import is_memlane_command
from tests.conftest import MEMLANE_CMD, one_line_error, run_env, run_memlane

ROOT = Path(__file__).resolve().parents[1]
CLAUDE_EVENTS = {
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
}
FOREIGN = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


def cli(home: Path, user_home: Path, *args: str, cwd: Path | None = None) -> str:
    done = run_memlane(home, *args, env={"HOME": str(user_home)}, cwd=cwd or user_home)
    assert done.returncode == 0, done.stderr
    return done.stdout


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def ours(settings: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for hook in group["hooks"]:
                if is_memlane_command(hook.get("command")):
                    found.setdefault(event, []).append(hook)
    return found


def test_setup_merges_idempotently_and_uninstall_restores(home: Path, user_home: Path) -> None:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FOREIGN))
    cli(home, user_home, "setup")
    first = load(path)
    assert set(ours(first)) == CLAUDE_EVENTS
    assert {e: len(h) for e, h in ours(first).items()} == dict.fromkeys(CLAUDE_EVENTS, 1)
    assert ours(first)["PostToolUse"][0]["async"] is True
    assert ours(first)["Stop"][0]["async"] is True
    assert "async" not in ours(first)["UserPromptSubmit"][0]
    assert first["model"] == "opus" and first["permissions"] == FOREIGN["permissions"]
    assert first["hooks"]["Notification"] == FOREIGN["hooks"]["Notification"]
    assert first["hooks"]["PostToolUse"][0] == FOREIGN["hooks"]["PostToolUse"][0]
    backups = list(path.parent.glob("settings.json.memlane-backup*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == FOREIGN
    assert "already up to date" in cli(home, user_home, "setup")
    assert load(path) == first
    cli(home, user_home, "uninstall")
    assert load(path) == FOREIGN


def test_setup_says_what_it_changed_and_what_comes_next(home: Path, user_home: Path) -> None:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FOREIGN))
    out = cli(home, user_home, "setup")
    changed = out.splitlines()[0]
    assert changed.startswith(f"changed {path}: memlane's hooks added for ")
    assert all(event in changed for event in CLAUDE_EVENTS)
    assert f"the previous file is kept as {path}.memlane-backup" in out
    assert out.rstrip().splitlines()[-1].startswith("next: start a new Claude Code session")
    again = cli(home, user_home, "setup")
    assert "already up to date" in again and "next:" in again
    removed = cli(home, user_home, "uninstall")
    assert "memlane's hooks removed from " in removed and "SessionStart" in removed
    assert removed.rstrip().splitlines()[-1].startswith("next: restart running sessions")
    for _ in range(3):  # setup/uninstall cycles keep one backup, not one per run
        cli(home, user_home, "setup")
        assert (path.parent / "settings.json.memlane-backup").stat().st_mode & 0o777 == 0o600
        cli(home, user_home, "uninstall")
    # The file given back, its backup is gone with the hooks.
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]
    assert load(path) == FOREIGN
    dry = cli(home, user_home, "setup", "--dry-run")
    assert "would change" in dry and "memlane's hooks added for" in dry
    assert dry.rstrip().splitlines()[-1].startswith("nothing written (--dry-run)")


def test_dry_run_prints_the_change_and_writes_nothing(home: Path, user_home: Path) -> None:
    out = cli(home, user_home, "setup", "--dry-run")
    assert "would change" in out and '"UserPromptSubmit"' in out and "+" in out
    assert not (user_home / ".claude").exists()


def test_project_level_settings(home: Path, user_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    cli(home, user_home, "setup", "--project", cwd=project)
    assert set(ours(load(project / ".claude" / "settings.json"))) == CLAUDE_EVENTS
    assert not (user_home / ".claude").exists()


def test_other_agents(home: Path, user_home: Path, tmp_path: Path) -> None:
    out = cli(home, user_home, "setup", "--agent", "codex")
    codex = load(user_home / ".codex" / "hooks.json")
    # Codex 0.124+ runs hooks by default once trusted (/hooks); older ones need the flag.
    assert "open /hooks in Codex" in out and "codex_hooks = true" in out
    assert all(
        h[0]["command"].endswith(f"launch.py codex:{h[0]['command'].rsplit(':', 1)[1]}")
        and " -S " in h[0]["command"]
        for h in ours(codex).values()
    )
    assert "SessionStart" in ours(codex) and "SessionEnd" not in ours(codex)

    out = cli(home, user_home, "setup", "--agent", "gemini")
    assert "/hooks panel" in out and "hooksConfig.enabled" in out  # how to see they run
    gemini = ours(load(user_home / ".gemini" / "settings.json"))
    assert set(gemini) >= {"BeforeAgent", "AfterTool", "AfterAgent", "SessionStart"}
    assert gemini["BeforeAgent"][0]["timeout"] == 10_000  # milliseconds

    project = tmp_path / "proj"
    project.mkdir()
    cli(home, user_home, "setup", "--agent", "kiro", "--project", cwd=project)
    files = sorted((project / ".kiro" / "hooks").glob("*.kiro.hook"))
    triggers = {load(f)["when"]["type"] for f in files}
    assert triggers == {"promptSubmit", "agentStop"}
    assert all(" kiro:" in load(f)["then"]["command"] for f in files)
    assert all(is_memlane_command(load(f)["then"]["command"]) for f in files)
    (project / ".kiro" / "hooks" / "mine.kiro.hook").write_text("{}")
    cli(home, user_home, "uninstall", "--agent", "kiro", "--project", cwd=project)
    assert [f.name for f in (project / ".kiro" / "hooks").iterdir()] == ["mine.kiro.hook"]
    cli(home, user_home, "uninstall", "--agent", "gemini")
    assert not (user_home / ".gemini" / "settings.json").exists()  # memlane created it


GEMINI_JSONC = """{
  // my theme, kept
  "ui": {"theme": "GitHub"},
  /* a URL with // and a comma, in a string */
  "context": {"fileName": ["GEMINI.md", "https://example.com//a,]"],},
  "hooks": {
    "AfterTool": [
      {"matcher": "write_file", "hooks": [{"type": "command", "command": "lint-it"}]},
    ],
  },
}
"""


def test_gemini_settings_with_comments_are_read_and_left_as_they_are(
    home: Path, user_home: Path
) -> None:
    path = user_home / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(GEMINI_JSONC)
    env = {"HOME": str(user_home)}
    done = run_memlane(home, "setup", "--agent", "gemini", env=env, cwd=user_home)
    assert done.returncode == 2
    line = one_line_error(done, 2)
    assert f"{path} has comments" in line and 'to its "hooks" by hand' in line
    added = json.loads(done.stdout)["hooks"]  # what to add: memlane's entries only
    assert set(ours({"hooks": added})) == {
        "SessionStart",
        "BeforeAgent",
        "AfterTool",
        "AfterAgent",
        "PreCompress",
        "SessionEnd",
    }
    assert all("lint-it" not in json.dumps(groups) for groups in added.values())
    assert path.read_text() == GEMINI_JSONC
    assert not list(path.parent.glob("*.memlane-backup"))

    # Added by hand: setup finds them there, and uninstall says what to take out.
    user_after_tool = [
        {"matcher": "write_file", "hooks": [{"type": "command", "command": "lint-it"}]}
    ]
    merged = {**added, "AfterTool": user_after_tool + added["AfterTool"]}
    pasted = GEMINI_JSONC.replace(
        '"hooks": {\n    "AfterTool": [\n'
        '      {"matcher": "write_file", "hooks": [{"type": "command", "command": "lint-it"}]},\n'
        "    ],\n  },",
        '"hooks": ' + json.dumps(merged) + ",",
    )
    assert pasted != GEMINI_JSONC
    path.write_text(pasted)
    assert f"{path}: already up to date" in cli(home, user_home, "setup", "--agent", "gemini")
    done = run_memlane(home, "uninstall", "--agent", "gemini", env=env, cwd=user_home)
    line = one_line_error(done, 2)
    assert f"{path} has comments" in line and "take memlane's entries" in line
    assert done.stdout.strip() == ""
    assert path.read_text() == pasted

    # Without comments (a trailing comma only), the file is merged as JSON files are.
    path.write_text('{"ui": {"theme": "GitHub"},}\n')
    cli(home, user_home, "setup", "--agent", "gemini")
    assert load(path)["ui"] == {"theme": "GitHub"} and "BeforeAgent" in ours(load(path))


def test_uninstall_keeps_no_backup_holding_memlanes_hooks(home: Path, user_home: Path) -> None:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FOREIGN))
    cli(home, user_home, "setup")
    backup = path.with_name("settings.json.memlane-backup")
    assert load(backup) == FOREIGN  # the file before setup
    edited = load(path)
    edited["model"] = "sonnet"  # the user's edit after setup: the backup is not put back
    path.write_text(json.dumps(edited))
    cli(home, user_home, "uninstall")
    assert load(path) == {**FOREIGN, "model": "sonnet"}
    # The backup would hold the file uninstall changed, memlane's commands in it, and the
    # next setup would keep it as the user's file before memlane (the editor files' rule).
    assert not backup.exists()


def test_invalid_settings_file_is_reported_not_overwritten(home: Path, user_home: Path) -> None:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")
    env = run_env(home)
    env["HOME"] = str(user_home)
    done = subprocess.run(
        [*MEMLANE_CMD, "setup"], capture_output=True, text=True, env=env, check=False, timeout=60
    )
    assert done.returncode != 0
    assert "is not valid JSON" in done.stderr
    assert path.read_text() == "{not json"


def test_installed_hooks_capture_and_inject(home: Path, user_home: Path, tmp_path: Path) -> None:
    """Done-when: a fresh setup, then the commands it wrote, run as Claude Code runs them."""
    cli(home, user_home, "setup")
    hooks = ours(load(user_home / ".claude" / "settings.json"))
    project = tmp_path / "billing-api"
    (project / ".git").mkdir(parents=True)
    env = run_env(home)

    def fire(event: str, data: dict[str, Any]) -> str:
        data = {"cwd": str(project), "hook_event_name": event, **data}
        done = subprocess.run(
            hooks[event][0]["command"],
            shell=True,
            input=json.dumps(data),
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            check=False,
            timeout=60,
        )
        assert (done.returncode, done.stderr) == (0, "")
        return done.stdout

    fire("SessionStart", {"session_id": "one", "source": "startup"})
    fire(
        "UserPromptSubmit",
        {"session_id": "one", "prompt": "add jittered backoff to webhook retries"},
    )
    fire(
        "PostToolUse",
        {
            "session_id": "one",
            "tool_name": "Write",
            "tool_input": {"file_path": f"{project}/retry.py", "content": "backoff"},
            "tool_response": {"success": True},
        },
    )
    fire("Stop", {"session_id": "one", "last_assistant_message": "Next steps:\n- tune jitter"})
    fire("SessionEnd", {"session_id": "one", "reason": "exit"})
    start = json.loads(fire("SessionStart", {"session_id": "two", "source": "startup"}))
    assert "tune jitter" in start["hookSpecificOutput"]["additionalContext"]
    recall = json.loads(
        fire(
            "UserPromptSubmit", {"session_id": "two", "prompt": "how is webhook backoff jittered?"}
        )
    )
    assert "retry.py" in recall["hookSpecificOutput"]["additionalContext"]


def test_plugin_and_marketplace_files() -> None:
    manifest = load(ROOT / "plugin" / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == "memlane"
    # hooks/hooks.json and .mcp.json are loaded by convention; naming them again breaks loading.
    assert "hooks" not in manifest and "mcpServers" not in manifest
    hooks = load(ROOT / "plugin" / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == CLAUDE_EVENTS
    for event, groups in hooks.items():
        command = groups[0]["hooks"][0]["command"]
        assert command.startswith('"${CLAUDE_PLUGIN_ROOT}/hooks/memlane-hook" '), event
        assert is_memlane_command(command), event
    assert load(ROOT / "plugin" / ".mcp.json")["mcpServers"]["memlane"]["args"] == ["mcp"]
    market = load(ROOT / ".claude-plugin" / "marketplace.json")
    entry = market["plugins"][0]
    assert entry["name"] == "memlane"
    assert (ROOT / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("/home/u/.venv/bin/memlane hook stop", True),
        ("memlane hook codex:stop", True),
        ("/usr/bin/python3 -m memlane hook session-start", True),
        ("memlane --db /x.db hook stop", True),
        ("/v/bin/python -S /v/lib/site-packages/memlane/hooks/launch.py stop", True),
        ("'/a b/python' -S '/a b/memlane/hooks/launch.py' codex:stop", True),
        ("python -S /x/other/hooks/launch.py stop", False),
        ("notmemlane hook stop", False),
        ("prettier --write", False),
        ("memlane search hook", False),
        ('"${CLAUDE_PLUGIN_ROOT}/hooks/memlane-hook" session-start', True),
        ("MEMLANE_HOME=/x memlane hook stop", True),
        # the user's commands that pass through memlane's: theirs, left by setup/uninstall
        ("sh -c 'tee -a ~/stop.log | memlane hook stop'", False),
        ("tee -a ~/stop.log | memlane hook stop", False),
        ("memlane hook stop; notify-send done", False),
        ("cd /srv && /v/bin/python -S /v/memlane/hooks/launch.py stop", False),
        ("memlane hook stop 'unclosed", False),
    ],
)
def test_recognises_only_memlane_hooks(command: str, expected: bool) -> None:
    assert is_memlane_command(command) is expected


def test_setup_help_lists_agents(home: Path, user_home: Path) -> None:
    out = cli(home, user_home, "setup", "--help")
    for word in ("claude-code", "codex", "gemini", "kiro", "--dry-run", "--project", "--editor"):
        assert word in out
    # uninstall shares the options, not setup's words for them ("hooks to write").
    undo = " ".join(cli(home, user_home, "uninstall", "--help").split())
    assert "Agent whose hooks to remove" in undo and "unregister memlane's MCP server" in undo
    assert "write" not in undo and "Also register" not in undo


def test_folders_setup_creates_are_private_whatever_the_umask(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """Under a umask of 000 a plain mkdir made ``~/.claude`` (and the others) 0777: any
    user could then put their own hook command in the agent's settings."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    env = {"HOME": str(user_home)}
    runs = [
        ((), user_home),
        (("--agent", "codex"), user_home),
        (("--agent", "gemini"), user_home),
        (("--agent", "kiro", "--project"), checkout),
        (("--editor", "all"), checkout),
    ]
    for args, cwd in runs:
        done = run_memlane(home, "setup", *args, env=env, umask=0, cwd=cwd)
        assert done.returncode == 0, (args, done.stderr)
    created = [
        p
        for root in (user_home, checkout)
        for p in root.rglob("*")
        if p.is_dir() and not p.is_relative_to(home)
    ]
    assert {p.relative_to(user_home).parts[0] for p in created if p.is_relative_to(user_home)} >= {
        ".claude",
        ".codex",
        ".gemini",
    }
    assert any(p.is_relative_to(checkout) for p in created)
    loose = {str(p): oct(p.stat().st_mode & 0o777) for p in created if p.stat().st_mode & 0o077}
    assert loose == {}


def test_the_next_step_promises_only_what_the_setup_does(home: Path, user_home: Path) -> None:
    on = {"HOME": str(user_home), "MEMLANE_WORKER_AUTOSTART": "true"}

    def last_line(*args: str, env: dict[str, str] | None = None) -> str:
        done = run_memlane(home, *args, env=env or {"HOME": str(user_home)}, cwd=user_home)
        assert done.returncode == 0, done.stderr
        return done.stdout.rstrip().splitlines()[-1]

    hooks = last_line("setup", env=on)  # SessionStart and prompts start the worker; hooks capture
    assert "`memlane status` shows the worker it starts" in hooks
    assert hooks.endswith("`memlane search WORDS` what it captured")
    no_worker = last_line("setup")  # worker.autostart off: no worker to show
    assert "status" not in no_worker and "`memlane search WORDS` shows what it" in no_worker
    kiro = last_line("setup", "--agent", "kiro", env=on)  # no SessionStart, prompts only
    assert "after your first prompt, `memlane status` shows the worker" in kiro
    assert "the prompts it captured" in kiro
    # An editor gets an MCP server and rules, no hooks: no worker, nothing captured by itself.
    cursor = last_line("setup", "--editor", "cursor", env=on)
    assert cursor.startswith("next: restart Cursor so it starts memlane's MCP server;")
    assert "status" not in cursor and "what it captured" not in cursor  # both were promised
    assert "nothing is captured automatically" in cursor
    both = last_line("setup", "--editor", "all", "--claude-code-mcp", env=on)
    assert "restart Cursor, Windsurf, VS Code (for Cline) and Claude Code so they start" in both
    # Claude Code's hooks are installed (the first setup above): they capture, as said;
    # the editors' clients, without hooks, do not.
    assert "memlane's hooks, already installed for Claude Code, capture as before" in both
    assert "; Cursor, Windsurf and Cline capture nothing automatically;" in both
    mcp = last_line("setup", "--claude-code-mcp", env=on)
    assert "nothing is captured" not in mcp and "already installed for Claude Code" in mcp
    assert "(no memlane hooks found)" in last_line("setup", "--editor", "windsurf", env=on)
    last_line("setup", "--agent", "cursor", env=on)
    assert "already installed for Cursor," in last_line("setup", "--editor", "cursor", env=on)


# Each agent whose hooks live in a JSON settings file, and that file under HOME.
JSON_SETTINGS = {
    "claude-code": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "cursor": ".cursor/hooks.json",
    "windsurf": ".codeium/windsurf/hooks.json",
}


@pytest.mark.parametrize("agent", sorted(JSON_SETTINGS))
def test_setup_again_leaves_a_settings_file_byte_for_byte_as_the_user_keeps_it(
    home: Path, user_home: Path, agent: str
) -> None:
    path = user_home / JSON_SETTINGS[agent]

    def rerun(*args: str) -> bytes:
        before = path.read_bytes()
        assert "already up to date" in cli(home, user_home, *args, "--agent", agent)
        assert path.read_bytes() == before
        return before

    cli(home, user_home, "setup", "--agent", agent)
    # The user adds a key after "hooks", in their own style: setup again writes nothing.
    settings = {**load(path), "statusLine": {"type": "command", "command": "~/bin/line"}}
    path.write_text(json.dumps(settings, indent=4) + "\n", encoding="utf-8")
    rerun("setup")
    # Their own hook after memlane's in an event, and an event of their own after ours.
    first = next(iter(settings["hooks"]))
    flat = "command" in settings["hooks"][first][0]
    hook = {"type": "command", "command": "notify-send done"}
    theirs = hook if flat else {"hooks": [hook]}
    settings["hooks"][first].append(theirs)
    settings["hooks"]["TheirEvent"] = [theirs]
    path.write_text(json.dumps(settings, indent=4) + "\n", encoding="utf-8")
    rerun("setup")

    cli(home, user_home, "uninstall", "--agent", agent)
    left = load(path)
    expected = {**settings, "hooks": {first: [theirs], "TheirEvent": [theirs]}}
    assert json.dumps(left) == json.dumps(expected)  # the same keys in the same order
    rerun("uninstall")
    cli(home, user_home, "setup", "--agent", agent)
    rerun("setup")


@pytest.mark.parametrize("agent", sorted(JSON_SETTINGS))
def test_uninstall_never_puts_a_used_or_stale_backup_over_the_users_file(
    home: Path, user_home: Path, agent: str
) -> None:
    """The backup beside a file given back stayed, and an uninstall of a file without
    memlane's hooks put the backup's bytes over the user's (swapping them at each run)."""
    path = user_home / JSON_SETTINGS[agent]
    backup = path.with_name(path.name + ".memlane-backup")
    path.parent.mkdir(parents=True)
    theirs = b'{"theme": "dark", "hooks": {"Other": []}}'
    path.write_bytes(theirs)
    cli(home, user_home, "setup", "--agent", agent)
    assert backup.read_bytes() == theirs
    cli(home, user_home, "uninstall", "--agent", agent)
    assert path.read_bytes() == theirs and not backup.exists()  # used, then removed
    # The user's later edit (the same settings in their new style) is theirs to keep.
    edited = json.dumps(json.loads(theirs), indent=4).encode() + b"\n"
    cli(home, user_home, "setup", "--agent", agent)
    path.write_bytes(edited)  # memlane's hooks taken out by hand: no write of memlane's left
    for _ in range(2):
        assert "already up to date" in cli(home, user_home, "uninstall", "--agent", agent)
        assert path.read_bytes() == edited


def test_uninstall_removes_the_empty_folders_setup_created_and_no_other(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """Uninstall left `.kiro/hooks/`, `.codex/`, `.clinerules/hooks/`… empty behind. It
    removes a folder setup created once it is empty; never one of the user's, even empty."""
    checkout = tmp_path / "checkout"
    (checkout / ".claude").mkdir(parents=True)  # the user's, empty
    agents = ("claude-code", "kiro", "codex", "cline")
    for agent in agents:
        cli(home, user_home, "setup", "--agent", agent, "--project", cwd=checkout)
    (checkout / ".codex" / "notes.md").write_text("mine\n")  # the user's file in memlane's
    # `.kiro` made again by the user around memlane's `.kiro/hooks`: another folder now.
    (checkout / ".kiro").rename(tmp_path / "old-kiro")
    (checkout / ".kiro").mkdir()
    (tmp_path / "old-kiro" / "hooks").rename(checkout / ".kiro" / "hooks")
    preview = cli(home, user_home, "uninstall", "--agent", "kiro", "--project", "--dry-run",
                  cwd=checkout)  # fmt: skip
    assert "removed" not in preview and (checkout / ".kiro" / "hooks").is_dir()
    said = "".join(
        cli(home, user_home, "uninstall", "--agent", agent, "--project", cwd=checkout)
        for agent in agents
    )
    assert sorted(p.name for p in checkout.iterdir()) == [".claude", ".codex", ".kiro"]
    assert not any((checkout / ".kiro").iterdir()) and not any((checkout / ".claude").iterdir())
    assert [p.name for p in (checkout / ".codex").iterdir()] == ["notes.md"]
    for gone in (".kiro/hooks", ".clinerules/hooks", ".clinerules"):
        assert f"removed {checkout / gone}: memlane created it and it is empty now" in said
    assert f"removed {checkout / '.kiro'}:" not in said


def test_uninstall_keeps_a_folder_the_user_made_again_with_the_same_inode(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """`rm -rf .kiro; mkdir -p .kiro/hooks` can give the user's new folders the inodes of
    those setup made (ext4 does): uninstall removed them, empty, as memlane's. A setup that
    finds a recorded folder already there forgets it."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    cli(home, user_home, "setup", "--agent", "kiro", "--project", cwd=checkout)
    [record] = home.rglob("setup-folders.json")
    shutil.rmtree(checkout / ".kiro")
    (checkout / ".kiro" / "hooks").mkdir(parents=True)  # the user's own now
    # Their inodes are those setup recorded, as when the file system reuses them.
    folders = (checkout / ".kiro", checkout / ".kiro" / "hooks")
    made = {str(folder): [folder.stat().st_dev, folder.stat().st_ino] for folder in folders}
    record.write_text(json.dumps(made))
    cli(home, user_home, "setup", "--agent", "kiro", "--project", cwd=checkout)
    said = cli(home, user_home, "uninstall", "--agent", "kiro", "--project", cwd=checkout)
    assert "deleted" in said and "removed" not in said
    assert (checkout / ".kiro" / "hooks").is_dir()


def test_an_untrusted_folder_record_is_warned_about_and_changes_nothing(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """A record another user can write raised UnsafePath after uninstall had deleted the
    hook files (their "deleted" lines never printed, rc 2): it is warned about once and
    not used, so the folders stay and the record is left as it is."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    cli(home, user_home, "setup", "--agent", "kiro", "--project", cwd=checkout)
    [record] = home.rglob("setup-folders.json")
    record.chmod(0o666)
    before = record.read_bytes()
    for action in ("uninstall", "setup", "uninstall"):
        done = run_memlane(
            home, action, "--agent", "kiro", "--project", env={"HOME": str(user_home)},
            cwd=checkout,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert str(record) in done.stderr and done.stderr.count("\n") == 1  # one line
        assert action == "setup" or "deleted" in done.stdout
        assert "removed" not in done.stdout and (checkout / ".kiro" / "hooks").is_dir()
    assert record.read_bytes() == before and record.stat().st_mode & 0o777 == 0o666


def test_setup_of_an_mcp_client_does_not_fail_on_the_projects_hook_settings(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """`setup --claude-code-mcp` in a project whose `.claude` is a link wrote
    `~/.claude.json` and then exited 2: looking for the project's hooks, only to word the
    next step, refused the link. A place that cannot be read has no hooks to name."""
    checkout = tmp_path / "checkout"
    (tmp_path / "elsewhere").mkdir()
    checkout.mkdir()
    (checkout / ".claude").symlink_to(tmp_path / "elsewhere")
    said = cli(home, user_home, "setup", "--claude-code-mcp", cwd=checkout)
    assert "mcpServers" in (user_home / ".claude.json").read_text()
    assert "nothing is captured automatically" in said


def test_editor_uninstall_says_which_folders_it_removed(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """Agent uninstall says "removed X: memlane created it…"; the editors' removed the
    folders setup created for them without a word."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    cli(home, user_home, "setup", "--editor", "cursor", "--claude-code-mcp", cwd=checkout)
    said = cli(home, user_home, "uninstall", "--editor", "cursor", cwd=checkout)
    for folder in (user_home / ".cursor", checkout / ".cursor" / "rules", checkout / ".cursor"):
        assert f"removed {folder}: memlane created it and it is empty now" in said
        assert not folder.exists()
    said = cli(home, user_home, "uninstall", "--claude-code-mcp", cwd=checkout)
    assert not (user_home / ".claude.json").exists() and "removed" not in said
    # The file memlane created is said deleted, as the agents' hooks files are.
    claude = user_home / ".claude.json"
    assert f"deleted {claude}: memlane created it and nothing else is in it" in said
    assert f"changed {claude}" not in said


def test_editor_uninstall_dry_run_says_which_files_it_would_delete(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """The dry run said "would change" of every file, the ones uninstall then deletes
    (created by memlane, nothing else in them) too: it says what the run does."""
    checkout = tmp_path / "checkout"
    (checkout / ".git" / "info").mkdir(parents=True)
    exclude = checkout / ".git" / "info" / "exclude"
    exclude.write_text("# git ls-files --others\n", "utf-8")
    codex = user_home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('model = "o3"\n', "utf-8")  # the user's: changed, not deleted
    cli(home, user_home, "setup", "--editor", "cursor", "--claude-code-mcp", cwd=checkout)
    cli(home, user_home, "setup", "--editor", "codex", cwd=checkout)
    made = "memlane created it and nothing else is in it"
    rules = checkout / ".cursor" / "rules"
    for args, expected in (
        (
            ("--editor", "cursor", "--claude-code-mcp"),
            [
                f"would delete {user_home / '.cursor' / 'mcp.json'}: {made}",
                f"would delete {rules / 'memlane-context.mdc'}: {made}",
                f"would delete {rules / 'memlane.mdc'}: {made}",
                f"would change {exclude}",
                f"would delete {user_home / '.claude.json'}: {made}",
            ],
        ),
        (("--editor", "codex"), [f"would change {codex}"]),
    ):
        preview = cli(home, user_home, "uninstall", *args, "--dry-run", cwd=checkout)
        assert [line for line in preview.splitlines() if line.startswith("would ")] == expected
        said = cli(home, user_home, "uninstall", *args, cwd=checkout)
        done = [line for line in said.splitlines() if line.startswith(("changed", "deleted"))]
        verbs = {"would delete": "deleted", "would change": "changed"}
        assert done == [verbs[line[:12]] + line[12:] for line in expected]  # as the run did


@pytest.mark.parametrize("agent", sorted(JSON_SETTINGS))
def test_uninstall_deletes_a_settings_file_memlane_created_and_keeps_the_users_bytes(
    home: Path, user_home: Path, agent: str
) -> None:
    path = user_home / JSON_SETTINGS[agent]
    backup = path.with_name(path.name + ".memlane-backup")
    # Nor the folder setup made for the file (`~/.codex`), once it is empty.
    cli(home, user_home, "setup", "--agent", agent)
    cli(home, user_home, "uninstall", "--agent", agent)
    assert not path.parent.exists()
    # No file before setup (twice: an upgrade's backup is memlane's own file): none after.
    cli(home, user_home, "setup", "--agent", agent)
    settings = load(path)
    first = next(iter(settings["hooks"]))
    entry = settings["hooks"][first][0]
    entry = entry["hooks"][0] if "hooks" in entry else entry  # in a group, or flat
    entry["command"] += " --old"  # an earlier version's command
    path.write_text(json.dumps(settings), encoding="utf-8")
    cli(home, user_home, "setup", "--agent", agent)
    assert backup.exists()
    assert "deleted" in cli(home, user_home, "uninstall", "--agent", agent)
    assert not path.exists() and not backup.exists()
    # The second setup found the folder there: it could be one the user made again (with
    # the same inode), so it is no longer memlane's to remove.
    assert path.parent.is_dir()
    # The user's own file, even one with nothing but what memlane would write, in their
    # style: the same bytes after setup and uninstall.
    for theirs in (b'{"version": 1}', b"{ }", b'{\n    "hooks": {"Other": []}\n}'):
        path.write_bytes(theirs)
        cli(home, user_home, "setup", "--agent", agent)
        cli(home, user_home, "uninstall", "--agent", agent)
        assert path.read_bytes() == theirs
        assert "already up to date" in cli(home, user_home, "uninstall", "--agent", agent)
    # A file without memlane's hooks is never deleted by uninstall.
    path.write_bytes(b"{}")
    cli(home, user_home, "uninstall", "--agent", agent)
    assert path.read_bytes() == b"{}"


def test_setup_refuses_a_config_that_refuses_commands_before_writing_and_uninstall_works(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """MEMLANE_CONFIG naming a missing file refuses every command and stores nothing from
    a hook: setup wrote the hooks, then exited 2 on reading the settings, leaving hooks
    that store nothing. Uninstall must still take them out under such a config."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    gone = {"HOME": str(user_home), "MEMLANE_CONFIG": str(tmp_path / "gone.toml")}
    for args in (
        ("setup",),
        ("setup", "--agent", "codex"),
        ("setup", "--editor", "cursor", "--claude-code-mcp"),
        ("setup", "--dry-run"),
        ("--config", str(tmp_path / "gone.toml"), "setup"),
    ):
        done = run_memlane(home, *args, env=gone, cwd=checkout)
        line = one_line_error(done, 2)
        assert "no config file at" in line and done.stdout == "", (args, done.stdout)
        assert sorted(user_home.iterdir()) == [] and sorted(checkout.iterdir()) == [], args
    cli(home, user_home, "setup", "--editor", "cursor", "--claude-code-mcp", cwd=checkout)
    cli(home, user_home, "setup", "--agent", "codex", cwd=checkout)
    for args in (
        ("uninstall", "--editor", "cursor", "--claude-code-mcp"),
        ("uninstall", "--agent", "codex"),
    ):
        done = run_memlane(home, *args, env=gone, cwd=checkout)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    assert sorted(user_home.iterdir()) == [] and sorted(checkout.iterdir()) == []


def test_plain_uninstall_takes_claude_codes_mcp_server_out_with_its_hooks(
    home: Path, user_home: Path
) -> None:
    claude = user_home / ".claude.json"
    claude.write_text('{"numStartups": 3}', "utf-8")
    cli(home, user_home, "setup")
    quiet = cli(home, user_home, "uninstall")  # no MCP server registered: not a word of it
    assert str(claude) not in quiet and "MCP" not in quiet
    cli(home, user_home, "setup", "--agent", "claude-code", "--claude-code-mcp")
    assert "memlane" in load(claude)["mcpServers"]
    said = cli(home, user_home, "uninstall")
    assert f"changed {claude}" in said
    assert load(claude) == {"numStartups": 3}
    assert not (user_home / ".claude" / "settings.json").exists()  # memlane created it


def test_setup_says_the_recovery_it_skipped_at_the_end_of_input(
    home: Path, user_home: Path
) -> None:
    """On a terminal, setup asks to capture the sessions on disk; the end of input (Ctrl-D)
    declines it, and setup says so and names the command instead of saying nothing."""
    import os
    import pty

    # A session on disk as Claude Code keeps it (the tests' own transcript: the run may
    # have no ../shared).
    transcript = Path(__file__).parent / "data" / "hooks" / "transcript.jsonl"
    folder = user_home / ".claude" / "projects" / "-work-demo"
    folder.mkdir(parents=True)
    shutil.copy(transcript, folder / "0d4c1b2a-5e6f-4a7b-8c9d-0e1f2a3b4c5d.jsonl")
    main, terminal = pty.openpty()
    env = run_env(home) | {"HOME": str(user_home)}
    proc = subprocess.Popen(
        [*MEMLANE_CMD, "setup"], stdin=terminal, stdout=terminal, stderr=terminal,
        env=env, cwd=user_home,
    )  # fmt: skip
    os.close(terminal)
    said = b""
    while b"[Y/n]" not in said:
        said += os.read(main, 4096)
    os.write(main, b"\x04")  # the end of input, as Ctrl-D gives it
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed: every process on it exited
            break
        if not chunk:
            break
        said += chunk
    os.close(main)
    assert proc.wait(60) == 0
    text = said.decode()
    assert "skipped: 1 existing session not captured yet: run `memlane recover`" in text
