"""Setup for editors without injection hooks: Cursor, Windsurf, Cline (and Claude Code's MCP);
memlane's MCP server for Codex, Gemini CLI and Kiro.

Each editor gets two things:

* memlane's MCP server registered in its JSON config (``mcpServers.memlane``):
  Cursor ``~/.cursor/mcp.json``, Windsurf ``~/.codeium/windsurf/mcp_config.json``,
  Cline ``cline_mcp_settings.json`` in the VS Code ``globalStorage`` of the
  ``saoudrizwan.claude-dev`` extension; Claude Code ``.mcp.json`` (project) or
  ``~/.claude.json`` (user);
* a rules file in the project telling the assistant when to call the tools:
  Cursor ``.cursor/rules/memlane.mdc`` (``alwaysApply: true``), Windsurf
  ``.windsurf/rules/memlane.md``, Cline ``.clinerules/memlane.md``. Cursor drops
  injected context, so it also gets ``.cursor/rules/memlane-context.mdc``: the
  project's context pack, refreshed by :func:`refresh_cursor_context` (the MCP
  server calls it at session start/end) and kept out of git through
  ``.git/info/exclude``.

Every change is a merge that keeps the other keys, backs the original file up
once (``<file>.memlane-backup``), is idempotent (a second run changes nothing)
and is reversed by the matching ``uninstall_*`` function, which restores the
original bytes when nothing else changed in between. A JSON config that cannot
be parsed is never touched: a ``ConfigError`` names it.

Codex, Gemini CLI and Kiro take context from their hooks, so they get the MCP server
alone (``MCP_ONLY``, not part of ``all``): Gemini's ``mcpServers`` in
``~/.gemini/settings.json`` (https://geminicli.com/docs/tools/mcp-server/; read as JSON
with comments, and a file holding some is left as it is:
:func:`memlane.integrations.settings_merge.keep_comments`), Kiro's in
``~/.kiro/settings/mcp.json`` (https://kiro.dev/docs/mcp/configuration), Codex's
``[mcp_servers.memlane]`` table in ``~/.codex/config.toml``
(https://developers.openai.com/codex/mcp). config.toml is the user's hand-written file:
memlane's table is appended as a block between two marker comments, the rest kept byte
for byte, and uninstall takes out that block only (a ``[mcp_servers.memlane]`` the user
wrote is left alone); a file the block cannot be appended to (``mcp_servers`` as an
inline table) is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memlane.errors import ConfigError, InvalidInput
from memlane.integrations.folders import make_dir
from memlane.integrations.settings_merge import (
    backup_path,
    config_file,
    delete_made,
    home_file,
    keep_comments,
    put_back,
    read_settings,
)
from memlane.paths import (
    NOFOLLOW,
    check_output_target,
    read_regular_file,
    refuse_links_below,
    replace_file,
    state_paths,
)
from memlane.project import project_name
from memlane.store import is_postgres_url

if TYPE_CHECKING:
    from memlane.service import Memory

EDITORS = ("cursor", "windsurf", "cline")
# Agents whose hooks inject context: only the MCP server is registered, no rules file.
MCP_ONLY = ("codex", "gemini", "kiro")
TOML_BEGIN = "# memlane:begin (`memlane uninstall --editor codex` removes this table)"
TOML_END = "# memlane:end"
SERVER_KEY = "memlane"
MARKER = "<!-- memlane: written by `memlane setup`; `memlane uninstall` removes it -->"
BLOCK_BEGIN = "<!-- memlane:begin -->"
BLOCK_END = "<!-- memlane:end -->"
CLINE_EXTENSION = "saoudrizwan.claude-dev"
# VS Code builds Cline may live in; the first is the default when none has Cline yet.
VSCODE_VARIANTS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
# Read-only tools Cline may run without asking (local, no side effect but access counts).
CLINE_AUTO_APPROVE = ("search", "timeline", "get_observations", "get_context", "resume_session")
CURSOR_RULES = Path(".cursor/rules/memlane.mdc")
CURSOR_CONTEXT = Path(".cursor/rules/memlane-context.mdc")
WINDSURF_RULES = Path(".windsurf/rules/memlane.md")
CLINE_RULES_DIR = Path(".clinerules")
CLINE_RULES = CLINE_RULES_DIR / "memlane.md"
# What uninstall does (or would do, with ``--dry-run``) to a file it touches: a file
# memlane created with nothing else in it is deleted, any other is changed.
Removal = Literal["change", "delete"]
# Environment variables that move memlane's state (a config names a database too): the
# editor's server must see the same. ``--config`` is MEMLANE_CONFIG by then (cli.context).
FORWARDED_ENV = ("MEMLANE_HOME", "MEMLANE_DB", "MEMLANE_CONFIG")


# -- the server entry -----------------------------------------------------------


def server_command() -> tuple[str, list[str]]:
    """Command and arguments that start ``memlane mcp`` from any working directory."""
    beside = Path(sys.executable).parent / "memlane"
    if beside.is_file():
        return str(beside), ["mcp"]
    found = shutil.which("memlane")
    if found:
        return found, ["mcp"]
    return sys.executable, ["-m", "memlane", "mcp"]


def server_entry(flavor: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``mcpServers.memlane`` value for ``flavor`` (an editor or ``claude-code``)."""
    env_source = os.environ if environ is None else environ
    command, args = server_command()
    entry: dict[str, Any] = {"command": command, "args": args}
    if flavor == "claude-code":
        entry = {"type": "stdio", **entry}
    env = {key: env_source[key] for key in FORWARDED_ENV if env_source.get(key)}
    # The files setup read, not ones relative to the folder the editor starts its server in.
    if "MEMLANE_CONFIG" in env:
        env["MEMLANE_CONFIG"] = str(state_paths(env_source).config_file)
    if "MEMLANE_HOME" in env:
        env["MEMLANE_HOME"] = str(state_paths(env_source).data_dir.absolute())
    database = env.get("MEMLANE_DB", "")
    if database and database != ":memory:" and not is_postgres_url(database):
        env["MEMLANE_DB"] = str(Path(database).absolute())
    if env:
        entry["env"] = env
    if flavor == "cline":
        entry["disabled"] = False
        entry["alwaysAllow"] = list(CLINE_AUTO_APPROVE)
    return entry


def mcp_config_paths(editor: str, home: Path) -> list[Path]:
    """Where ``editor`` reads its MCP servers (user-wide: one server serves every project)."""
    if editor == "cursor":
        return [home_file(home / ".cursor" / "mcp.json")]
    if editor == "windsurf":
        return [home_file(home / ".codeium" / "windsurf" / "mcp_config.json")]
    if editor == "codex":
        return [home_file(home / ".codex" / "config.toml")]
    if editor == "gemini":
        return [home_file(home / ".gemini" / "settings.json")]
    if editor == "kiro":
        return [home_file(home / ".kiro" / "settings" / "mcp.json")]
    if editor == "cline":
        base = (
            home / "Library" / "Application Support"
            if sys.platform == "darwin"
            else home / ".config"
        )
        storages = [base / v / "User" / "globalStorage" / CLINE_EXTENSION for v in VSCODE_VARIANTS]
        present = [s for s in storages if s.is_dir()] or storages[:1]
        return [home_file(s / "settings" / "cline_mcp_settings.json") for s in present]
    raise InvalidInput(f"unknown editor {editor!r} ({_EDITOR_NAMES})")


# -- rules ----------------------------------------------------------------------


def rules_body(project: str, agent: str) -> str:
    """What every editor's rules file tells the assistant (when to call which tool)."""
    return f"""{MARKER}
# memlane: long-term memory of this project

This project keeps its decisions, lessons and past sessions in memlane, reachable through the
`memlane` MCP tools. Pass `project: "{project}"` to every memlane tool.

- **Start of a task**: call `resume_session` (where the last session stopped: checkpoint,
  summary, next steps) and `get_context` for background. Call `session_start`
  (agent: "{agent}") once, so what you save is grouped by session.
- **Before deciding** something that may have been decided before: `search` memory, then
  `timeline(around=id)` and `get_observations(ids)` only for the hits that matter.
- **During the work**, right when it happens: `save_knowledge` for a decision, lesson,
  constraint, heuristic or rejected-approach (say why; give a stable `topic_key` such as
  `"auth/token-storage"` so a later save updates it); `save_observation` for a notable
  bugfix, discovery or change.
- **End of a task**: `save_summary` (request, completed, learned, next_steps), then
  `session_end`.
- Never save secrets or credentials; text inside `<private>…</private>` is dropped.
"""


def cursor_rules(project: str) -> str:
    front = (
        "---\ndescription: memlane long-term memory - when to use its MCP tools\n"
        "globs:\nalwaysApply: true\n---\n"
    )
    return front + rules_body(project, "cursor")


def windsurf_rules(project: str) -> str:
    front = (
        "---\ntrigger: always_on\n"
        "description: memlane long-term memory - when to use its MCP tools\n---\n"
    )
    return front + rules_body(project, "windsurf")


def cline_rules(project: str) -> str:
    return rules_body(project, "cline")


def cursor_context_text(context: str) -> str:
    front = (
        "---\ndescription: memlane - past context of this project (refreshed automatically)\n"
        "globs:\nalwaysApply: true\n---\n"
    )
    body = context.strip() or "# memlane\nNo memories for this project yet."
    return f"{front}{MARKER}\n{body}\n"


# -- file primitives ------------------------------------------------------------


# A project's checkout is not trusted: any of these files may be a link (dangling or to a
# file of the user's elsewhere), a FIFO or a folder. They are read and written only as the
# regular files they claim to be (memlane.paths: read_regular_file, replace_file).


def _read_text(path: Path) -> str | None:
    """The text of ``path`` (None when missing); a link or a non-regular file is refused."""
    data = read_regular_file(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; memlane did not change it") from None


def _backup_once(path: Path) -> None:
    """Keep ``path`` as it was before memlane's first change (0600), once."""
    backup = backup_path(path)
    check_output_target(backup)  # a link planted there, even dangling, is refused
    if backup.exists():
        return
    data = read_regular_file(path)
    if data is not None:
        replace_file(backup, data, 0o600)


def _write_atomic(path: Path, text: str, *, private: bool, secret: bool = False) -> None:
    """Replace ``path`` in one step, keeping its mode (new files: 0600 if private); a
    ``secret`` text is never left readable by others (an editor's ``mcp.json`` is often
    0644: the mode loses its group and other bits)."""
    make_dir(path.parent)
    try:
        mode = path.lstat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600 if private else 0o644
    if secret:
        mode &= 0o700
    replace_file(path, text.encode("utf-8"), mode)


def _load_json(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); fix it or add the "
            "memlane server by hand, memlane did not change it"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; memlane did not change it")
    return data


def _load_config(path: Path, comments: bool) -> tuple[dict[str, Any], bool]:
    """The JSON object of an MCP config and whether it holds comments (read as JSONC
    only with ``comments``: Gemini's settings)."""
    if comments:
        return read_settings(path, comments=True)
    return _load_json(path), False


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _servers(data: dict[str, Any], path: Path) -> dict[str, Any]:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers is not an object; memlane did not change it")
    return servers


def merge_server(
    path: Path, entry: dict[str, Any], *, dry_run: bool = False, comments: bool = False
) -> bool:
    """Set ``mcpServers.memlane`` in the JSON file at ``path``; True when it changed. A
    file that holds an ``entry`` passing on a secret is made unreadable by others, also
    when the entry is there already (an earlier version wrote it at the file's 0644).
    ``comments``: the file may hold comments (Gemini's); one that does is not rewritten."""
    data, commented = _load_config(path, comments)
    servers = _servers(data, path)
    secret = _holds_secret(entry)
    if servers.get(SERVER_KEY) == entry:
        return _made_private(path, dry_run=dry_run) if secret else False
    if commented:
        keep_comments(
            path,
            {"mcpServers": dict(servers)},
            {"mcpServers": {**servers, SERVER_KEY: entry}},
            "mcpServers",
        )
    servers[SERVER_KEY] = entry
    if not dry_run:
        _backup_once(path)
        _write_atomic(path, _dump_json(data), private=True, secret=secret)
    return True


def _made_private(path: Path, *, dry_run: bool) -> bool:
    """Take the group and other bits off the regular file ``path``; whether it had any.
    The file checked is the one changed (through one descriptor, opened without following
    a link): a link put at ``path`` after a check by name would have had its target's
    mode changed, whatever file that is."""
    import errno

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False  # a link: not a file memlane wrote
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o077:
            return False
        if not dry_run:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o700)
        return True
    finally:
        os.close(fd)


def _holds_secret(entry: dict[str, Any]) -> bool:
    """Whether a server entry passes on a secret: a forwarded value the privacy filter
    would mask (``MEMLANE_DB=postgresql://user:password@host/db``)."""
    from memlane import privacy

    env = entry.get("env") or {}
    return any(privacy.scrub(value) != value for value in env.values())


def remove_server(
    path: Path, *, dry_run: bool = False, said: list[str] | None = None, comments: bool = False
) -> Removal | None:
    """Remove ``mcpServers.memlane``; restore the backup when nothing else changed. A
    file memlane created goes, and the folders setup created for it once they are empty
    (:func:`folders.remove_made`, its lines added to ``said``). ``comments``: as
    :func:`merge_server`. Returns what is (or would be) done to the file; None when it
    holds no entry of memlane's."""
    if not path.exists():
        return None
    data, commented = _load_config(path, comments)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_KEY not in servers:
        return None
    if commented:
        kept = {name: value for name, value in servers.items() if name != SERVER_KEY}
        keep_comments(path, {"mcpServers": dict(servers)}, {"mcpServers": kept}, "mcpServers")
    del servers[SERVER_KEY]
    backup = backup_path(path)
    original: dict[str, Any] = {}
    if backup.exists():
        try:
            original = _load_config(backup, comments)[0]
        except (ConfigError, InvalidInput):
            original = {"unparseable backup": True}
    if not servers and "mcpServers" not in original:
        del data["mcpServers"]
    made = not backup.exists() and not data  # memlane created it: nothing of the user's in it
    if dry_run:
        return "delete" if made else "change"
    if made:
        _tell(said, delete_made(path))
        return "delete"
    if not backup.exists():
        _write_atomic(path, _dump_json(data), private=True)
    elif data == original:
        put_back(path)
    else:
        _write_atomic(path, _dump_json(data), private=True)
        # Older than the user's edits: kept, the next setup would keep it too and a
        # later uninstall put it back over the file.
        backup.unlink()
    return "change"


def write_owned(path: Path, text: str, *, private: bool = False, dry_run: bool = False) -> bool:
    """Write a file memlane owns (marked); a foreign file there is backed up first."""
    current = _read_text(path)
    if current == text:
        return False
    if not dry_run:
        if current is not None and MARKER not in current:
            _backup_once(path)
        _write_atomic(path, text, private=private)
    return True


def remove_owned(
    path: Path, *, dry_run: bool = False, said: list[str] | None = None
) -> Removal | None:
    """Remove a file memlane wrote (restoring a backed-up foreign one), and the folders
    setup created for it once they are empty (:func:`folders.remove_made`, its lines
    added to ``said``). Returns what is (or would be) done; None for a file memlane did
    not write."""
    current = _read_text(path)
    if current is None or MARKER not in current:
        return None
    backed_up = backup_path(path).exists()
    if dry_run:
        return "change" if backed_up else "delete"
    if backed_up:
        put_back(path)
        return "change"
    _tell(said, delete_made(path))
    return "delete"


def _tell(said: list[str] | None, lines: list[str]) -> None:
    if said is not None:
        said.extend(lines)


def write_block(path: Path, body: str, *, dry_run: bool = False) -> bool:
    """Put ``body`` between memlane markers at the end of a file the user owns."""
    current = _read_text(path) or ""
    stripped = _strip_block(current)
    block = f"{BLOCK_BEGIN}\n{body.rstrip()}\n{BLOCK_END}\n"
    updated = (stripped.rstrip("\n") + "\n\n" if stripped.strip() else "") + block
    if updated == current:
        return False
    if not dry_run:
        _backup_once(path)
        _write_atomic(path, updated, private=False)
    return True


def remove_block(path: Path, *, dry_run: bool = False) -> bool:
    """Take memlane's block out of a file the user owns: the backup put back when the rest
    is unchanged since setup (its exact bytes), else the file without the block, and the
    backup, older than the user's edits, deleted (kept, the next setup would keep it too,
    as the file before memlane's latest change it no longer is)."""
    current = _read_text(path)
    if current is None or BLOCK_BEGIN not in current:
        return False
    if dry_run:
        return True
    backup = backup_path(path)
    before = _read_text(backup)
    stripped = _strip_block(current)
    if before is not None and BLOCK_BEGIN not in before and before == stripped:
        put_back(path)
        return True
    stripped = stripped.rstrip("\n")
    _write_atomic(path, stripped + "\n" if stripped else "", private=False)
    backup.unlink(missing_ok=True)
    return True


def _strip_block(text: str) -> str:
    start = text.find(BLOCK_BEGIN)
    end = text.find(BLOCK_END)
    if start < 0 or end < start:
        return text
    return (
        text[:start].rstrip("\n")
        + ("\n" if text[:start].strip() else "")
        + text[end + len(BLOCK_END) :].lstrip("\n")
    )


def _in_project(project_dir: Path, path: Path) -> Path:
    """``path``, refused when a folder between the project and it is a link."""
    refuse_links_below(project_dir, path)
    return path


# -- git exclude for the private context file -----------------------------------


def _git_exclude(project_dir: Path) -> Path | None:
    git = project_dir / ".git"
    return _in_project(project_dir, git / "info" / "exclude") if git.is_dir() else None


def _exclude_line(relative: Path) -> str:
    return "/" + relative.as_posix()


def add_git_exclude(project_dir: Path, relative: Path, *, dry_run: bool = False) -> bool:
    """Keep ``relative`` (private memory content) out of commits, locally only."""
    exclude = _git_exclude(project_dir)
    if exclude is None:
        return False
    line = _exclude_line(relative)
    current = _read_text(exclude) or ""
    if line in current.splitlines():
        return False
    if not dry_run:
        prefix = current if not current or current.endswith("\n") else current + "\n"
        _write_atomic(exclude, prefix + line + "\n", private=False)
    return True


def remove_git_exclude(project_dir: Path, relative: Path, *, dry_run: bool = False) -> bool:
    exclude = _git_exclude(project_dir)
    current = _read_text(exclude) if exclude is not None else None
    if exclude is None or current is None:
        return False
    line = _exclude_line(relative)
    lines = current.splitlines()
    if line not in lines:
        return False
    if not dry_run:
        kept = [item for item in lines if item != line]
        _write_atomic(exclude, "\n".join(kept) + ("\n" if kept else ""), private=False)
    return True


# -- Cursor context -------------------------------------------------------------


def cursor_is_installed(project_dir: Path) -> bool:
    """True when ``memlane setup --editor cursor`` ran in ``project_dir``."""
    return (project_dir / CURSOR_RULES).is_file()


def refresh_cursor_context(
    memory: Memory, project_dir: Path, *, project: str | None = None, dry_run: bool = False
) -> Path | None:
    """Rewrite Cursor's context rules file from the project's context pack.

    Returns the path when the file changed, None when it was already current.
    """
    name = project or project_name(project_dir)
    path = _in_project(project_dir, project_dir / CURSOR_CONTEXT)
    text = cursor_context_text(memory.context(project=name))
    return path if write_owned(path, text, private=True, dry_run=dry_run) else None


def _initial_cursor_context(project_dir: Path, dry_run: bool) -> Path | None:
    from memlane.service import open as open_memory

    with open_memory() as memory:
        return refresh_cursor_context(memory, project_dir, dry_run=dry_run)


# -- install / uninstall --------------------------------------------------------


_EDITOR_NAMES = ", ".join((*EDITORS, *MCP_ONLY)) + " or all"


def _editors(editor: str) -> tuple[str, ...]:
    name = editor.strip().lower()
    if name == "all":
        return EDITORS
    if name not in EDITORS and name not in MCP_ONLY:
        raise InvalidInput(f"unknown editor {editor!r} ({_EDITOR_NAMES})")
    return (name,)


def _register(name: str, config: Path, *, dry_run: bool) -> bool:
    """Register memlane's server for ``name`` in its ``config``; whether it changed."""
    entry = server_entry(name)
    if name == "codex":
        return merge_toml_server(config, entry, dry_run=dry_run)
    return merge_server(config, entry, dry_run=dry_run, comments=name == "gemini")


def _unregister(
    name: str, config: Path, *, dry_run: bool, said: list[str] | None
) -> Removal | None:
    if name == "codex":
        return remove_toml_server(config, dry_run=dry_run, said=said)
    return remove_server(config, dry_run=dry_run, said=said, comments=name == "gemini")


def install_editor(
    editor: str,
    *,
    project_dir: Path,
    home: Path,
    dry_run: bool = False,
    memory: Memory | None = None,
) -> list[str]:
    """Register memlane's MCP server for ``editor`` (or ``all``) and write its rules.

    Returns the files changed (or that would change with ``dry_run``). ``memory``
    fills Cursor's context file; without it the default database is opened.
    """
    changed: list[str] = []
    project_dir = project_dir.resolve()
    project = project_name(project_dir)
    for name in _editors(editor):
        # Cursor's context file holds memories: git is told to leave it out before it is
        # written, so a refused exclude file leaves nothing git could commit.
        if name == "cursor" and add_git_exclude(project_dir, CURSOR_CONTEXT, dry_run=dry_run):
            changed.append(str(project_dir / ".git" / "info" / "exclude"))
        for config in mcp_config_paths(name, home):
            if _register(name, config, dry_run=dry_run):
                changed.append(str(config))
        if name in MCP_ONLY:
            continue
        changed.extend(_install_rules(name, project_dir, project, dry_run))
        if name == "cursor":
            refreshed = (
                refresh_cursor_context(memory, project_dir, dry_run=dry_run)
                if memory is not None
                else _initial_cursor_context(project_dir, dry_run)
            )
            if refreshed is not None:
                changed.append(str(refreshed))
    return changed


def _install_rules(editor: str, project_dir: Path, project: str, dry_run: bool) -> list[str]:
    writers: dict[str, tuple[Path, Callable[[str], str]]] = {
        "cursor": (CURSOR_RULES, cursor_rules),
        "windsurf": (WINDSURF_RULES, windsurf_rules),
        "cline": (CLINE_RULES, cline_rules),
    }
    relative, render = writers[editor]
    if editor == "cline" and (project_dir / CLINE_RULES_DIR).is_file():
        # Older Cline reads a single .clinerules file: add a marked block to it instead.
        target = _in_project(project_dir, project_dir / CLINE_RULES_DIR)
        return [str(target)] if write_block(target, render(project), dry_run=dry_run) else []
    target = _in_project(project_dir, project_dir / relative)
    return [str(target)] if write_owned(target, render(project), dry_run=dry_run) else []


def uninstall_editor(
    editor: str,
    *,
    project_dir: Path,
    home: Path,
    dry_run: bool = False,
    said: list[str] | None = None,
) -> dict[str, Removal]:
    """Undo :func:`install_editor`: remove the server entry, the rules and Cursor's
    context. Returns the files touched, each with what is (or, with ``dry_run``, would
    be) done to it; ``said`` gets a line for each folder removed."""
    touched: dict[str, Removal] = {}
    project_dir = project_dir.resolve()
    for name in _editors(editor):
        for config in mcp_config_paths(name, home):
            if removal := _unregister(name, config, dry_run=dry_run, said=said):
                touched[str(config)] = removal
        if name in MCP_ONLY:
            continue
        if name == "cline" and (project_dir / CLINE_RULES_DIR).is_file():
            target = project_dir / CLINE_RULES_DIR
            if remove_block(target, dry_run=dry_run):  # the user's file: never deleted
                touched[str(target)] = "change"
            continue
        relatives = {"cursor": [CURSOR_CONTEXT, CURSOR_RULES], "windsurf": [WINDSURF_RULES]}
        for relative in relatives.get(name, [CLINE_RULES]):
            target = project_dir / relative
            if removal := remove_owned(target, dry_run=dry_run, said=said):
                touched[str(target)] = removal
        if name == "cursor" and remove_git_exclude(project_dir, CURSOR_CONTEXT, dry_run=dry_run):
            touched[str(project_dir / ".git" / "info" / "exclude")] = "change"
    return touched


# -- Codex's config.toml ---------------------------------------------------------


def toml_block(entry: dict[str, Any]) -> str:
    """memlane's ``[mcp_servers.memlane]`` table between its marker comments."""
    import tomli_w

    table = tomli_w.dumps({"mcp_servers": {SERVER_KEY: entry}})
    return f"{TOML_BEGIN}\n{table.rstrip()}\n{TOML_END}\n"


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); memlane did not change it") from None


def _toml_server(path: Path, data: dict[str, Any]) -> Any:
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcp_servers is not a table; memlane did not change it")
    return servers.get(SERVER_KEY)


def _without_toml_block(text: str) -> str | None:
    """``text`` without memlane's marked block and the blank line setup put before it;
    None when it holds no whole block. Tables that came to sit between the markers
    (Codex appends a table it writes after the file's last comment, the end marker)
    are not memlane's: they stay."""
    start, end = text.find(TOML_BEGIN), text.find(TOML_END)
    if start < 0 or end < start or (start and text[start - 1] != "\n"):
        return None
    after = end + len(TOML_END)
    after += text[after : after + 1] == "\n"
    before = text[:start]
    if before.endswith("\n\n"):
        before = before[:-1]
    return before + _foreign_tables(text[start + len(TOML_BEGIN) : end]) + text[after:]


_OWN_TABLES = (f"[mcp_servers.{SERVER_KEY}]", f"[mcp_servers.{SERVER_KEY}.")


def _foreign_tables(block: str) -> str:
    """The lines of ``block`` under a table header that is not memlane's own
    (``[mcp_servers.memlane]`` and its sub-tables, as setup writes them)."""
    kept: list[str] = []
    ours = True
    for line in block.splitlines(keepends=True):
        header = line.strip()
        if header.startswith("["):
            ours = header.startswith(_OWN_TABLES)
        if not ours:
            kept.append(line)
    foreign = "".join(kept).strip("\n")
    return f"{foreign}\n" if foreign else ""


def merge_toml_server(path: Path, entry: dict[str, Any], *, dry_run: bool = False) -> bool:
    """Put memlane's ``[mcp_servers.memlane]`` in Codex's ``config.toml``: appended as a
    marked block (one of memlane's already there is replaced), the rest of the file kept
    as it is; True when it changed. A table of the user's is left alone (ConfigError),
    and so is a file the block cannot be appended to."""
    text = _read_text(path) or ""
    current = _toml_server(path, _parse_toml(path, text))
    secret = _holds_secret(entry)
    if current == entry:
        return _made_private(path, dry_run=dry_run) if secret else False
    base = _without_toml_block(text)
    if base is None:
        if current is not None:
            raise ConfigError(
                f"{path} has an [mcp_servers.{SERVER_KEY}] table memlane did not write;"
                " memlane did not change it (remove that table to have setup write its own)"
            )
        base = text
    block = toml_block(entry)
    kept = base.rstrip("\n")
    new = f"{kept}\n\n{block}" if kept else block
    try:
        appended = _toml_server(path, _parse_toml(path, new))
    except ConfigError:
        appended = None
    if appended != entry:  # mcp_servers = { … } inline: a table cannot be added below it
        raise ConfigError(
            f"{path}: memlane's [mcp_servers.{SERVER_KEY}] table cannot be added at its end"
            " (is mcp_servers an inline table?); memlane did not change it"
        )
    if not dry_run:
        _backup_once(path)
        _write_atomic(path, new, private=True, secret=secret)
    return True


def remove_toml_server(
    path: Path, *, dry_run: bool = False, said: list[str] | None = None
) -> Removal | None:
    """Take memlane's marked block out of Codex's ``config.toml``: the backup put back
    when the rest is what it was before setup, a file memlane created deleted, else the
    file without the block (and the older backup deleted). A table the user wrote
    without the markers is theirs: left (None returned, as for a file without the block;
    else what is, or would be, done)."""
    text = _read_text(path)
    stripped = _without_toml_block(text) if text is not None else None
    if stripped is None:
        return None
    backup = backup_path(path)
    before = _read_text(backup)
    made = before is None and not stripped.strip()
    if dry_run:
        return "delete" if made else "change"
    if made:
        _tell(said, delete_made(path))
        return "delete"
    if before is not None and before.rstrip("\n") == stripped.rstrip("\n"):
        put_back(path)  # the bytes as they were, final line ends included
    else:
        _write_atomic(path, stripped, private=True)
        backup.unlink(missing_ok=True)
    return "change"


def claude_code_mcp_path(home: Path, project_dir: Path | None) -> Path:
    """``.mcp.json`` of the project (project scope) or ``~/.claude.json`` (user scope)."""
    if project_dir is None:
        return home_file(home / ".claude.json")
    return config_file(".mcp.json", home=home, project_dir=project_dir)


def install_claude_code_mcp(
    *, home: Path, project_dir: Path | None, dry_run: bool = False
) -> list[str]:
    """Register ``memlane mcp`` as an MCP server of Claude Code; returns the files changed."""
    path = claude_code_mcp_path(home, project_dir)
    entry = server_entry("claude-code")
    if project_dir is not None and _holds_secret(entry):
        raise ConfigError(
            f"MEMLANE_DB holds a password and {path} is shared with the project's repository;"
            " memlane did not write it (install for your user: `memlane setup --claude-code-mcp`"
            " without --project)"
        )
    return [str(path)] if merge_server(path, entry, dry_run=dry_run) else []


def uninstall_claude_code_mcp(
    *,
    home: Path,
    project_dir: Path | None,
    dry_run: bool = False,
    said: list[str] | None = None,
) -> dict[str, Removal]:
    """Undo :func:`install_claude_code_mcp` (returns and ``said``: as
    :func:`uninstall_editor`)."""
    path = claude_code_mcp_path(home, project_dir)
    removal = remove_server(path, dry_run=dry_run, said=said)
    return {str(path): removal} if removal else {}
