"""`memlane setup --editor …` writes valid files, is idempotent, and uninstall restores them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memlane.errors import ConfigError, InvalidInput
from memlane.integrations import editors
from memlane.integrations.editors import (
    install_claude_code_mcp,
    install_editor,
    refresh_cursor_context,
    server_entry,
    uninstall_claude_code_mcp,
    uninstall_editor,
)
from memlane.service import Memory
from tests.conftest import run_memlane

CLINE_DIR = Path(".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "webshop"
    (path / ".git" / "info").mkdir(parents=True)
    (path / "README.md").write_text("shop\n", encoding="utf-8")
    return path


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` with its bytes (directories included as b'<dir>')."""
    files: dict[str, bytes] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            files[str(path)] = path.read_bytes() if path.is_file() else b"<dir>"
    return files


def memlane_entry(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    entry = data["mcpServers"]["memlane"]
    assert isinstance(entry, dict)
    return entry


def front_matter(text: str) -> dict[str, str]:
    assert text.startswith("---\n")
    block = text.split("---\n")[1]
    return dict(line.split(":", 1) for line in block.strip().splitlines())


def test_cursor_writes_config_rules_and_context(
    memory: Memory, home: Path, user_home: Path, project: Path
) -> None:
    memory.save("Prices are stored in cents", project="webshop", type="decision")
    changed = install_editor("cursor", project_dir=project, home=user_home, memory=memory)
    config = user_home / ".cursor" / "mcp.json"
    rules = project / ".cursor" / "rules" / "memlane.mdc"
    context = project / ".cursor" / "rules" / "memlane-context.mdc"
    exclude = project / ".git" / "info" / "exclude"
    assert set(changed) == {str(config), str(rules), str(context), str(exclude)}
    entry = memlane_entry(config)
    assert entry["args"][-1] == "mcp"  # type: ignore[index]
    assert Path(str(entry["command"])).exists()
    assert entry["env"] == {"MEMLANE_HOME": str(home)}  # the editor's server sees our database
    assert config.stat().st_mode & 0o077 == 0
    meta = front_matter(rules.read_text(encoding="utf-8"))
    assert meta["alwaysApply"].strip() == "true"
    body = rules.read_text(encoding="utf-8")
    for tool in ("get_context", "resume_session", "save_observation", "save_knowledge"):
        assert tool in body
    assert 'project: "webshop"' in body
    context_text = context.read_text(encoding="utf-8")
    assert front_matter(context_text)["alwaysApply"].strip() == "true"
    assert "Prices are stored in cents" in context_text
    assert context.stat().st_mode & 0o077 == 0
    assert "/.cursor/rules/memlane-context.mdc" in exclude.read_text(encoding="utf-8").splitlines()


def test_windsurf_and_cline_files(memory: Memory, user_home: Path, project: Path) -> None:
    changed = install_editor("windsurf", project_dir=project, home=user_home, memory=memory)
    windsurf = user_home / ".codeium" / "windsurf" / "mcp_config.json"
    windsurf_rules = project / ".windsurf" / "rules" / "memlane.md"
    assert set(changed) == {str(windsurf), str(windsurf_rules)}
    assert memlane_entry(windsurf)["args"][-1] == "mcp"  # type: ignore[index]
    assert front_matter(windsurf_rules.read_text(encoding="utf-8"))["trigger"].strip() == (
        "always_on"
    )

    changed = install_editor("cline", project_dir=project, home=user_home, memory=memory)
    cline = user_home / CLINE_DIR / "cline_mcp_settings.json"
    cline_rules = project / ".clinerules" / "memlane.md"
    assert set(changed) == {str(cline), str(cline_rules)}
    entry = memlane_entry(cline)
    assert entry["disabled"] is False
    assert "search" in entry["alwaysAllow"]  # type: ignore[operator]
    assert "delete_memory" not in entry["alwaysAllow"]  # type: ignore[operator]
    assert "save_summary" in cline_rules.read_text(encoding="utf-8")


def test_cline_goes_to_every_vscode_build_that_has_it(
    memory: Memory, user_home: Path, project: Path
) -> None:
    insiders = user_home / ".config/Code - Insiders/User/globalStorage/saoudrizwan.claude-dev"
    cursor_host = user_home / ".config/Cursor/User/globalStorage/saoudrizwan.claude-dev"
    insiders.mkdir(parents=True)
    cursor_host.mkdir(parents=True)
    install_editor("cline", project_dir=project, home=user_home, memory=memory)
    assert (insiders / "settings" / "cline_mcp_settings.json").is_file()
    assert (cursor_host / "settings" / "cline_mcp_settings.json").is_file()
    assert not (user_home / CLINE_DIR).exists()


def test_all_is_idempotent_and_uninstall_restores_everything(
    memory: Memory, user_home: Path, project: Path
) -> None:
    # Pre-existing configs with other servers and keys, formatted the user's way.
    cursor = user_home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text('{"mcpServers": {"github": {"command": "gh-mcp"}}, "x": 1}', "utf-8")
    cursor.chmod(0o640)
    windsurf = user_home / ".codeium" / "windsurf" / "mcp_config.json"
    windsurf.parent.mkdir(parents=True)
    windsurf.write_text('{\n    "theme": "dark"\n}\n', "utf-8")
    (project / ".git" / "info" / "exclude").write_text("# git ls-files --others\n", "utf-8")
    before = snapshot(user_home, project)

    first = install_editor("all", project_dir=project, home=user_home, memory=memory)
    assert len(first) == 8
    data = json.loads(cursor.read_text(encoding="utf-8"))
    assert data["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert data["x"] == 1
    assert cursor.stat().st_mode & 0o777 == 0o640  # the user's mode is kept
    assert json.loads(windsurf.read_text(encoding="utf-8"))["theme"] == "dark"
    assert (cursor.parent / "mcp.json.memlane-backup").read_bytes() == before[str(cursor)]

    after_first = snapshot(user_home, project)
    assert install_editor("all", project_dir=project, home=user_home, memory=memory) == []
    assert snapshot(user_home, project) == after_first

    preview = uninstall_editor("all", project_dir=project, home=user_home, dry_run=True)
    assert sorted(preview) == sorted(first)
    assert snapshot(user_home, project) == after_first

    removed = uninstall_editor("all", project_dir=project, home=user_home)
    assert sorted(removed) == sorted(first)
    assert snapshot(user_home, project) == before
    assert uninstall_editor("all", project_dir=project, home=user_home) == {}


def test_uninstall_keeps_changes_made_after_install(
    memory: Memory, user_home: Path, project: Path
) -> None:
    config = user_home / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"mcpServers": {}}', "utf-8")
    install_editor("cursor", project_dir=project, home=user_home, memory=memory)
    data = json.loads(config.read_text(encoding="utf-8"))
    data["mcpServers"]["added-later"] = {"command": "x"}
    config.write_text(json.dumps(data), "utf-8")
    uninstall_editor("cursor", project_dir=project, home=user_home)
    assert json.loads(config.read_text(encoding="utf-8")) == {
        "mcpServers": {"added-later": {"command": "x"}}
    }


def test_uninstall_removes_a_backup_older_than_the_users_edits(
    memory: Memory, user_home: Path, project: Path
) -> None:
    """The backup from before setup stayed when uninstall kept the user's later edits; the
    next setup kept it (a backup is made once) and the next uninstall put it back."""
    config = user_home / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"mcpServers": {}}', "utf-8")
    backup = config.with_name("mcp.json.memlane-backup")
    install_editor("cursor", project_dir=project, home=user_home, memory=memory)
    data = json.loads(config.read_text(encoding="utf-8"))
    data["mcpServers"]["added-later"] = {"command": "x"}
    config.write_text(json.dumps(data), "utf-8")
    uninstall_editor("cursor", project_dir=project, home=user_home)
    assert not backup.exists()
    edited = '{\n    "mcpServers": {}\n}\n'  # the user's later edit, in their style
    config.write_text(edited, "utf-8")
    install_editor("cursor", project_dir=project, home=user_home, memory=memory)
    uninstall_editor("cursor", project_dir=project, home=user_home)
    assert config.read_text(encoding="utf-8") == edited and not backup.exists()


def test_uninstall_keeps_the_users_empty_folders(
    memory: Memory, user_home: Path, project: Path
) -> None:
    """Uninstall removed every empty folder between a rules file and the project (or a
    config and the home), the user's too; now only those setup created."""
    theirs = [project / ".windsurf" / "rules", user_home / ".codeium" / "windsurf"]
    for folder in theirs:
        folder.mkdir(parents=True)
    install_editor("windsurf", project_dir=project, home=user_home, memory=memory)
    uninstall_editor("windsurf", project_dir=project, home=user_home)
    assert all(folder.is_dir() and not any(folder.iterdir()) for folder in theirs)
    # The folders setup created for Cursor go once they are empty, up to the user's.
    install_editor("cursor", project_dir=project, home=user_home, memory=memory)
    uninstall_editor("cursor", project_dir=project, home=user_home)
    assert not (project / ".cursor").exists() and not (user_home / ".cursor").exists()
    assert user_home.is_dir() and (project / ".git").is_dir()


def test_dry_run_changes_nothing(memory: Memory, user_home: Path, project: Path) -> None:
    before = snapshot(user_home, project)
    planned = install_editor(
        "all", project_dir=project, home=user_home, dry_run=True, memory=memory
    )
    assert len(planned) == 8
    assert snapshot(user_home, project) == before


def test_unparseable_config_is_left_alone(memory: Memory, user_home: Path, project: Path) -> None:
    config = user_home / ".codeium" / "windsurf" / "mcp_config.json"
    config.parent.mkdir(parents=True)
    config.write_text("{ // a comment\n}", "utf-8")
    with pytest.raises(ConfigError, match=r"mcp_config\.json"):
        install_editor("windsurf", project_dir=project, home=user_home, memory=memory)
    assert config.read_text(encoding="utf-8") == "{ // a comment\n}"
    config.write_text('{"mcpServers": []}', "utf-8")
    with pytest.raises(ConfigError, match="mcpServers"):
        install_editor("windsurf", project_dir=project, home=user_home, memory=memory)


def test_unknown_editor(user_home: Path, project: Path) -> None:
    with pytest.raises(InvalidInput, match="vim"):
        install_editor("vim", project_dir=project, home=user_home)
    with pytest.raises(InvalidInput, match="vim"):
        uninstall_editor("vim", project_dir=project, home=user_home)


def test_foreign_rules_file_is_backed_up_and_restored(
    memory: Memory, user_home: Path, project: Path
) -> None:
    rules = project / ".windsurf" / "rules" / "memlane.md"
    rules.parent.mkdir(parents=True)
    rules.write_text("my own rules\n", "utf-8")
    install_editor("windsurf", project_dir=project, home=user_home, memory=memory)
    assert "memlane" in rules.read_text(encoding="utf-8")
    uninstall_editor("windsurf", project_dir=project, home=user_home)
    assert rules.read_text(encoding="utf-8") == "my own rules\n"
    assert not (rules.parent / "memlane.md.memlane-backup").exists()


def test_single_clinerules_file_gets_a_marked_block(
    memory: Memory, user_home: Path, project: Path
) -> None:
    legacy = project / ".clinerules"
    legacy.write_text("Use tabs.\n", "utf-8")
    changed = install_editor("cline", project_dir=project, home=user_home, memory=memory)
    assert str(legacy) in changed
    text = legacy.read_text(encoding="utf-8")
    assert text.startswith("Use tabs.\n")
    assert "save_knowledge" in text
    assert install_editor("cline", project_dir=project, home=user_home, memory=memory) == []
    uninstall_editor("cline", project_dir=project, home=user_home)
    assert legacy.read_text(encoding="utf-8") == "Use tabs.\n"


def test_uninstall_of_a_clinerules_block_leaves_no_stale_backup(
    memory: Memory, user_home: Path, project: Path
) -> None:
    """The backup from before setup stayed when uninstall kept the user's later edits; the
    next setup kept it as the file before memlane's change, which it no longer was."""
    legacy = project / ".clinerules"
    backup = project / ".clinerules.memlane-backup"
    legacy.write_text("Use tabs.\n", "utf-8")
    install_editor("cline", project_dir=project, home=user_home, memory=memory)
    legacy.write_text("Use spaces.\n\n" + legacy.read_text(encoding="utf-8"), "utf-8")
    uninstall_editor("cline", project_dir=project, home=user_home)
    assert legacy.read_text(encoding="utf-8") == "Use spaces.\n\nUse tabs.\n"
    assert not backup.exists()
    edited = "Use spaces.\n"
    legacy.write_text(edited, "utf-8")
    install_editor("cline", project_dir=project, home=user_home, memory=memory)
    assert backup.read_text(encoding="utf-8") == edited
    uninstall_editor("cline", project_dir=project, home=user_home)
    assert legacy.read_text(encoding="utf-8") == edited and not backup.exists()


def test_cursor_context_refresh_follows_memory(
    memory: Memory, user_home: Path, project: Path
) -> None:
    install_editor("cursor", project_dir=project, home=user_home, memory=memory)
    context = project / ".cursor" / "rules" / "memlane-context.mdc"
    assert "No memories for this project yet" in context.read_text(encoding="utf-8")
    assert refresh_cursor_context(memory, project) is None  # unchanged: not rewritten
    memory.save("Checkout uses Stripe", project="webshop", type="decision")
    assert refresh_cursor_context(memory, project) == context
    assert "Checkout uses Stripe" in context.read_text(encoding="utf-8")


def test_cursor_without_memory_opens_the_default_database(
    home: Path, user_home: Path, project: Path
) -> None:
    changed = install_editor("cursor", project_dir=project, home=user_home)
    assert str(project / ".cursor" / "rules" / "memlane-context.mdc") in changed


def test_claude_code_user_and_project_scope(home: Path, user_home: Path, project: Path) -> None:
    """(``home``: uninstall reads the record of folders setup created in memlane's state.)"""
    claude = user_home / ".claude.json"
    original = '{"numStartups": 3, "projects": {"/x": {"allowedTools": []}}}'
    claude.write_text(original, "utf-8")
    assert install_claude_code_mcp(home=user_home, project_dir=None) == [str(claude)]
    data = json.loads(claude.read_text(encoding="utf-8"))
    assert data["numStartups"] == 3
    assert data["mcpServers"]["memlane"]["type"] == "stdio"
    assert install_claude_code_mcp(home=user_home, project_dir=None) == []
    assert uninstall_claude_code_mcp(home=user_home, project_dir=None) == {str(claude): "change"}
    assert claude.read_text(encoding="utf-8") == original

    dot_mcp = project / ".mcp.json"
    assert install_claude_code_mcp(home=user_home, project_dir=project) == [str(dot_mcp)]
    assert memlane_entry(dot_mcp)["args"][-1] == "mcp"  # type: ignore[index]
    assert uninstall_claude_code_mcp(home=user_home, project_dir=project) == {
        str(dot_mcp): "delete"
    }
    assert not dot_mcp.exists()


def test_server_entry_forwards_state_location() -> None:
    entry = editors.server_entry("windsurf", {"MEMLANE_HOME": "/data/ml", "OTHER": "x"})
    assert entry["env"] == {"MEMLANE_HOME": "/data/ml"}
    assert "env" not in editors.server_entry("windsurf", {})


SECRET_DSN = "postgresql://memlane:S3cretPW-4f9a@db.internal:5432/memlane"


def test_a_forwarded_password_leaves_no_config_readable_by_others(
    user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's ``mcp.json`` is often 0644: with ``MEMLANE_DB`` holding a password, the
    file setup writes it into loses its group and other bits (another local user read it)."""
    monkeypatch.setenv("MEMLANE_DB", SECRET_DSN)
    cursor = user_home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text("{}", "utf-8")
    cursor.chmod(0o644)
    claude = user_home / ".claude.json"
    claude.write_text("{}", "utf-8")
    claude.chmod(0o664)
    editors.merge_server(cursor, editors.server_entry("cursor"))
    assert install_claude_code_mcp(home=user_home, project_dir=None) == [str(claude)]
    for path in (cursor, claude):
        assert SECRET_DSN in path.read_text(encoding="utf-8")  # the server needs it
        assert path.stat().st_mode & 0o777 == 0o600, path


def test_setup_again_makes_a_config_an_earlier_version_left_readable_private(
    user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry is there already (an earlier version wrote it, keeping the file's 0644):
    setup changed nothing, and the password stayed readable by every local user."""
    monkeypatch.setenv("MEMLANE_DB", SECRET_DSN)
    claude = user_home / ".claude.json"
    entry = editors.server_entry("claude-code")
    claude.write_text(json.dumps({"mcpServers": {"memlane": entry}}), "utf-8")
    claude.chmod(0o644)
    assert install_claude_code_mcp(home=user_home, project_dir=None) == [str(claude)]
    assert claude.stat().st_mode & 0o777 == 0o600
    assert install_claude_code_mcp(home=user_home, project_dir=None) == []


def test_a_link_swapped_in_after_the_mode_check_does_not_take_the_chmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config's mode is checked, then changed: a link put in its place between the
    two (by someone who can write the folder) must not have its target made 0600."""
    import os

    config, victim = tmp_path / "mcp.json", tmp_path / "theirs"
    for path in (config, victim):
        path.write_text("{}", "utf-8")
        path.chmod(0o644)
    swapped: list[bool] = []

    def swap_after(real: Any) -> Any:
        def check(*args: Any, **kwargs: Any) -> Any:
            info = real(*args, **kwargs)
            if not swapped:  # the file checked; then the link
                swapped.append(True)
                config.rename(tmp_path / "mcp.json.old")
                config.symlink_to(victim)
            return info

        return check

    for name in ("stat", "lstat", "fstat"):  # whichever the check uses (Path.lstat: stat)
        monkeypatch.setattr(os, name, swap_after(getattr(os, name)))
    assert editors._made_private(config, dry_run=False)  # the file had 0644
    monkeypatch.undo()
    assert swapped and config.is_symlink()
    assert victim.stat().st_mode & 0o777 == 0o644  # the link's target: untouched
    assert (tmp_path / "mcp.json.old").stat().st_mode & 0o777 == 0o600  # the file checked


def test_a_forwarded_password_is_not_written_into_the_projects_mcp_json(
    user_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project's ``.mcp.json`` goes into its repository: refused in one line."""
    monkeypatch.setenv("MEMLANE_DB", SECRET_DSN)
    with pytest.raises(ConfigError, match="holds a password"):
        install_claude_code_mcp(home=user_home, project_dir=project)
    assert not (project / ".mcp.json").exists()


def test_a_forwarded_value_without_a_secret_keeps_the_files_mode(
    user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_DB", "postgresql://memlane@db.internal:5432/memlane")
    claude = user_home / ".claude.json"
    claude.write_text("{}", "utf-8")
    claude.chmod(0o644)
    install_claude_code_mcp(home=user_home, project_dir=None)
    assert claude.stat().st_mode & 0o777 == 0o644


def test_setup_forwards_state_paths_as_absolute_paths(user_home: Path, tmp_path: Path) -> None:
    """A relative MEMLANE_HOME or MEMLANE_DB was forwarded as typed: the editor starts its
    server in another folder, which then read and wrote another memory."""
    work = tmp_path / "work"
    work.mkdir()
    env = {"HOME": str(user_home), "MEMLANE_HOME": "state", "MEMLANE_DB": "team/memory.db"}
    (work / "team").mkdir()
    done = run_memlane(work / "state", "setup", "--editor", "cursor", env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    entry = memlane_entry(user_home / ".cursor" / "mcp.json")
    assert entry["env"] == {
        "MEMLANE_HOME": str(work / "state"),
        "MEMLANE_DB": str(work / "team" / "memory.db"),
    }
    url = "postgresql://memlane@127.0.0.1:1/memlane"  # a URL is forwarded as it is
    assert server_entry("cursor", {"MEMLANE_DB": url})["env"] == {"MEMLANE_DB": url}


def test_setup_forwards_the_config_it_read_to_the_editors_server(
    home: Path, user_home: Path, tmp_path: Path
) -> None:
    """The config named by ``--config`` or MEMLANE_CONFIG (it may name another database)
    reached the hooks' settings but not the editor's MCP server, which read config.toml."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "team.toml").write_text('search_mode = "keyword"\n', encoding="utf-8")
    env = {"HOME": str(user_home), "MEMLANE_CONFIG": "team.toml"}  # relative to setup's cwd
    done = run_memlane(home, "setup", "--editor", "cursor", env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    entry = memlane_entry(user_home / ".cursor" / "mcp.json")
    assert entry["env"] == {"MEMLANE_HOME": str(home), "MEMLANE_CONFIG": str(work / "team.toml")}
    flagged = run_memlane(
        home, "--config", "team.toml", "setup", "--claude-code-mcp", "--project",
        env={"HOME": str(user_home)}, cwd=work,
    )  # fmt: skip
    assert flagged.returncode == 0, flagged.stderr
    forwarded = memlane_entry(work / ".mcp.json")["env"]
    assert forwarded == {"MEMLANE_HOME": str(home), "MEMLANE_CONFIG": str(work / "team.toml")}


# -- Codex, Gemini CLI, Kiro: the MCP server alone ---------------------------------------

CODEX_TOML = """# my Codex settings, kept as they are
model = "gpt-5.4"

[mcp_servers.github]
command = "gh-mcp"   # mine
args = ["--read-only"]
"""


def test_codex_gets_memlanes_table_appended_and_removed_leaving_its_toml_as_it_was(
    user_home: Path, project: Path
) -> None:
    import tomllib

    config = user_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_TOML, encoding="utf-8")
    assert install_editor("codex", project_dir=project, home=user_home) == [str(config)]
    text = config.read_text(encoding="utf-8")
    assert text.startswith(CODEX_TOML)  # the user's lines, comments included
    data = tomllib.loads(text)
    assert data["mcp_servers"]["github"] == {"command": "gh-mcp", "args": ["--read-only"]}
    assert data["mcp_servers"]["memlane"] == server_entry("codex")
    assert sorted(p.name for p in project.iterdir()) == [".git", "README.md"]  # no rules
    assert install_editor("codex", project_dir=project, home=user_home) == []
    assert uninstall_editor("codex", project_dir=project, home=user_home) == {str(config): "change"}
    assert config.read_text(encoding="utf-8") == CODEX_TOML
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]

    # Edited after setup: only memlane's block goes, with the backup older than the edit.
    install_editor("codex", project_dir=project, home=user_home)
    config.write_text(config.read_text(encoding="utf-8") + '\n[profiles.fast]\nmodel = "o4"\n')
    uninstall_editor("codex", project_dir=project, home=user_home)
    after = tomllib.loads(config.read_text(encoding="utf-8"))
    assert "memlane" not in after["mcp_servers"] and after["profiles"] == {"fast": {"model": "o4"}}
    assert config.read_text(encoding="utf-8").startswith(CODEX_TOML)
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]


def test_codex_config_memlane_cannot_append_to_is_left_as_it_is(
    user_home: Path, project: Path
) -> None:
    config = user_home / ".codex" / "config.toml"
    config.parent.mkdir()
    for text, refusal in (
        ('[mcp_servers.memlane]\ncommand = "mine"\n', "memlane did not write"),
        ('mcp_servers = { github = { command = "gh-mcp" } }\n', "cannot be added"),
        ("model = \n", "not valid TOML"),
    ):
        config.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=refusal):
            install_editor("codex", project_dir=project, home=user_home)
        assert config.read_text(encoding="utf-8") == text
    config.write_text('[mcp_servers.memlane]\ncommand = "mine"\n', encoding="utf-8")
    assert uninstall_editor("codex", project_dir=project, home=user_home) == {}  # theirs


def test_a_new_codex_config_is_memlanes_and_uninstall_deletes_it(
    user_home: Path, project: Path
) -> None:
    install_editor("codex", project_dir=project, home=user_home)
    config = user_home / ".codex" / "config.toml"
    assert config.read_text(encoding="utf-8").startswith("# memlane:begin")
    uninstall_editor("codex", project_dir=project, home=user_home)
    assert not (user_home / ".codex").exists()


def test_gemini_and_kiro_get_the_mcp_server(user_home: Path, project: Path) -> None:
    gemini = user_home / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text('{"ui": {"theme": "GitHub"}}\n', encoding="utf-8")
    kiro = user_home / ".kiro" / "settings" / "mcp.json"
    assert install_editor("gemini", project_dir=project, home=user_home) == [str(gemini)]
    assert install_editor("kiro", project_dir=project, home=user_home) == [str(kiro)]
    assert memlane_entry(gemini) == server_entry("gemini")
    assert json.loads(gemini.read_text(encoding="utf-8"))["ui"] == {"theme": "GitHub"}
    assert memlane_entry(kiro) == server_entry("kiro")
    uninstall_editor("gemini", project_dir=project, home=user_home)
    uninstall_editor("kiro", project_dir=project, home=user_home)
    assert gemini.read_text(encoding="utf-8") == '{"ui": {"theme": "GitHub"}}\n'
    assert not (user_home / ".kiro").exists()


def test_gemini_settings_with_comments_get_the_server_by_hand(
    user_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only memlane's entry is printed, its secrets masked: the user's own servers hold
    tokens, and what is printed lands in a terminal's scrollback."""
    from memlane.integrations.settings_merge import CommentsKept

    monkeypatch.setenv("MEMLANE_DB", "postgresql://memlane:S3cretPassw0rd@db.local/memlane")
    gemini = user_home / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    text = (
        '{\n  // mine\n  "mcpServers": {"github": {"command": "gh-mcp",'
        f' "env": {{"GITHUB_TOKEN": "{token}"}}}}}}\n}}\n'
    )
    gemini.write_text(text, encoding="utf-8")
    with pytest.raises(
        CommentsKept, match='add the entries printed above to its "mcpServers"'
    ) as refused:
        install_editor("gemini", project_dir=project, home=user_home)
    printed = json.loads(refused.value.to_set)
    assert list(printed["mcpServers"]) == ["memlane"]
    assert token not in refused.value.to_set and "S3cretPassw0rd" not in refused.value.to_set
    assert "[REDACTED" in refused.value.to_set
    assert gemini.read_text(encoding="utf-8") == text

    # A byte order mark before the JSON is read as Gemini reads it.
    gemini.write_bytes(b"\xef\xbb\xbf" + text.encode())
    with pytest.raises(CommentsKept):
        install_editor("gemini", project_dir=project, home=user_home)


def test_setup_editor_codex_from_the_command_line(home: Path, user_home: Path) -> None:
    done = run_memlane(
        home, "setup", "--editor", "codex", env={"HOME": str(user_home)}, cwd=user_home
    )
    assert done.returncode == 0, done.stderr
    assert "restart Codex" in done.stdout
    assert "[mcp_servers.memlane]" in (user_home / ".codex" / "config.toml").read_text()


def test_a_table_codex_wrote_inside_memlanes_markers_outlives_uninstall(
    user_home: Path, project: Path
) -> None:
    """Codex appends a table after the file's last item; memlane's end marker is a comment
    after its table, so a table Codex writes later (a trusted project, `codex mcp add`) can
    land between the markers. Uninstall takes out only memlane's table."""
    import tomllib

    config = user_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"', encoding="utf-8")  # no final line end
    install_editor("codex", project_dir=project, home=user_home)
    text = config.read_text(encoding="utf-8")
    end = text.index("# memlane:end")
    codex_added = (
        '[projects."/work/app"]\ntrust_level = "trusted"\n\n'
        '[mcp_servers.github]\ncommand = "gh-mcp"\n'
    )
    config.write_text(text[:end] + codex_added + text[end:], encoding="utf-8")
    assert uninstall_editor("codex", project_dir=project, home=user_home) == {str(config): "change"}
    after = tomllib.loads(config.read_text(encoding="utf-8"))
    assert after == {
        "model": "o3",
        "projects": {"/work/app": {"trust_level": "trusted"}},
        "mcp_servers": {"github": {"command": "gh-mcp"}},
    }

    # Nothing added: the file comes back byte for byte, without a final line end as it was.
    config.write_text('model = "o3"', encoding="utf-8")
    install_editor("codex", project_dir=project, home=user_home)
    uninstall_editor("codex", project_dir=project, home=user_home)
    assert config.read_bytes() == b'model = "o3"'
