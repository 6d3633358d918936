"""Merge memlane's hooks into an agent's JSON settings without disturbing anything else.

Claude Code, Codex and Gemini keep hooks in the same shape::

    {"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command",
                                                         "command": "...", ...}]}]}}

Cursor and Windsurf list each event's hooks flat, without matcher groups::

    {"hooks": {"<event>": [{"command": "...", ...}]}}

``merge_hooks`` first removes every memlane hook (a command running
``memlane hook``, in a group or flat) and then puts ours where the first of them was
(at the end of an event new to the file), so running setup twice changes nothing and
an upgrade replaces old commands in place. Other hooks, matcher groups and keys are
kept as they are and where they are; a group, an event or ``hooks`` that held only
memlane's is dropped by ``remove_hooks``. A file that needs no change is not written
(its bytes stay as the user wrote them). ``write_json`` keeps the previous file as
``<file>.memlane-backup`` (one per file: each change replaces it, so setup/uninstall
cycles never pile backups up) and writes atomically, 0600 (an old file's looser mode is
not kept: a file of hooks is the user's alone), in a folder
no other user can write (:func:`memlane.paths.refuse_shared_folder`); ``dry_run``
only returns the diff. ``apply`` says which events' hooks it
added, updated or removed. Uninstall leaves no file memlane created (one holding nothing
else is deleted, and the folders setup created for it once they are empty:
:mod:`memlane.integrations.folders`) and gives a file the user had before setup,
unchanged since, back byte for byte (from its backup, then removed: left, a later
uninstall would put it back over the user's later edits). A file of an agent that reads
comments (Gemini CLI's) is read as JSONC; one that holds comments is never rewritten,
deleted or put back (the comments would go): the user is given the hooks to set by hand
(:class:`CommentsKept`).
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

from memlane.errors import InvalidInput, MemlaneError
from memlane.integrations.folders import make_dir, remove_made
from memlane.paths import (
    check_output_target,
    read_regular_file,
    refuse_links_below,
    refuse_shared_folder,
    replace_file,
)

_OUR_COMMAND = re.compile(r"(?:^|[\s/\"'])memlane(?:\.exe)?[\"']?\s+(?:--db\s+\S+\s+)?hook\s")
_OUR_MODULE = re.compile(r"-m\s+memlane\s+(?:--db\s+\S+\s+)?hook\s")
_OUR_LAUNCHER = re.compile(r"[/\\]memlane[/\\]hooks[/\\]launch\.py[\"']?\s")
_OUR_PLUGIN_HOOK = re.compile(r"[/\\]hooks[/\\]memlane-hook[\"']?\s")
_OPERATOR_CHARS = frozenset("();<>|&")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# The largest settings file read: agents' settings are kilobytes; a bigger one is not theirs.
MAX_SETTINGS_BYTES = 16 * 1024 * 1024


def is_memlane_command(command: Any) -> bool:
    """True for a hook command of memlane: ``memlane hook …``, the launcher or the
    plugin's ``hooks/memlane-hook`` (any path), run as the command itself. A user's
    command that only passes through one (``tee -a log | memlane hook stop``,
    ``sh -c '…; memlane hook stop'``) is the user's: setup and uninstall leave it."""
    if not isinstance(command, str) or not _runs_one_program(command):
        return False
    text = command + " "
    patterns = (_OUR_COMMAND, _OUR_MODULE, _OUR_LAUNCHER, _OUR_PLUGIN_HOOK)
    return any(pattern.search(text) for pattern in patterns)


def _runs_one_program(command: str) -> bool:
    """Whether ``command`` runs one program of memlane's (memlane, a Python, the plugin's
    hook script), after optional ``NAME=value`` words, with no shell operator."""
    import shlex

    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote
        return False
    if any(word and set(word) <= _OPERATOR_CHARS for word in words):
        return False
    programs = [word for word in words if not _ASSIGNMENT.match(word)]
    if not programs:
        return False
    name = programs[0].replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name in ("memlane", "memlane.exe", "memlane-hook") or name.startswith("python")


def load_json(path: Path, *, comments: bool = False) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when missing or empty); a link, a file over
    ``MAX_SETTINGS_BYTES`` and JSON nested too deeply to parse are refused. ``comments``:
    the file may hold ``//`` and ``/* */`` comments and trailing commas (Gemini CLI's
    settings, read as JSONC)."""
    return read_settings(path, comments=comments)[0]


def read_settings(path: Path, *, comments: bool) -> tuple[dict[str, Any], bool]:
    """:func:`load_json`'s object and whether the file holds comments (never without
    ``comments``)."""
    data_bytes = read_regular_file(path, limit=MAX_SETTINGS_BYTES + 1)
    if data_bytes is None or not data_bytes.strip():
        return {}, False
    if len(data_bytes) > MAX_SETTINGS_BYTES:
        raise InvalidInput(
            f"{path} is over {MAX_SETTINGS_BYTES // (1024 * 1024)} MB, too large for a"
            " settings file; move it away, then run setup again"
        )
    commented = False
    try:
        if comments:
            text, commented = without_comments(data_bytes.decode("utf-8-sig"))
            data = json.loads(text)
        else:
            data = json.loads(data_bytes)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        kind = "JSON (comments allowed)" if comments else "JSON"
        raise InvalidInput(
            f"{path} is not valid {kind} ({reason}); fix it or move it away, then run setup again"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; fix it and run setup again")
    return data, commented


def without_comments(text: str) -> tuple[str, bool]:
    """JSONC ``text`` as JSON, and whether it held a comment: ``//`` and ``/* */``
    comments become spaces (line ends kept: an error names the line it has in the file),
    a comma before a closing ``}`` or ``]`` goes; strings are kept as they are, ``//``
    or a comma in them included. An unclosed comment or string is left for the JSON
    parser to refuse."""
    out: list[str] = []
    commented = False
    comma = -1  # where in ``out`` the comma waiting for the next token is
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        if char == '"':
            close = _string_end(text, i)
            out.append(text[i:close])
            comma, i = -1, close
            continue
        pair = text[i : i + 2]
        if pair in ("//", "/*"):
            close = text.find("\n" if pair == "//" else "*/", i + 2)
            if close < 0:
                if pair == "/*":
                    out.append(text[i:])  # unclosed: invalid, as the parser will say
                    break
                close = end
            elif pair == "/*":
                close += 2
            out.append("".join(c if c in "\r\n" else " " for c in text[i:close]))
            commented, i = True, close
            continue
        if char in "}]" and comma >= 0:
            out[comma] = " "
        if char == ",":
            comma = len(out)
        elif not char.isspace():
            comma = -1
        out.append(char)
        i += 1
    return "".join(out), commented


def _string_end(text: str, start: int) -> int:
    """The index after the JSON string opening at ``start`` (the end of ``text`` when it
    is not closed)."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return len(text)


def remove_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` without memlane's hooks; an event (and ``hooks``) that held
    only memlane's is dropped, everything else stays where it was."""
    result, emptied = _without_ours(settings)
    _drop_emptied(result, emptied)
    return result


def merge_hooks(settings: dict[str, Any], ours: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``settings`` with memlane's previous hooks replaced by ``ours`` (event → groups).

    Ours go where memlane's were (a new event at the end), so a file memlane already set
    up comes out the same, key for key and in the same order: a rerun writes nothing.
    """
    result, emptied = _without_ours(settings)
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput('"hooks" in the settings file is not an object; fix it first')
    for event, groups in ours.items():
        existing = hooks.setdefault(event, [])
        if not isinstance(existing, list):
            raise InvalidInput(f'"hooks.{event}" in the settings file is not a list; fix it first')
        at = emptied.get(event, len(existing))
        existing[at:at] = copy.deepcopy(groups)
    _drop_emptied(result, emptied)  # events memlane no longer hooks
    return result


def _without_ours(settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """A copy of ``settings`` without memlane's hooks, every key left in its place (an
    event may be left empty), and event → the index its first memlane hook had among
    the hooks kept: where memlane's hooks go back."""
    result = copy.deepcopy(settings)
    slots: dict[str, int] = {}
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result, slots
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        kept_groups: list[Any] = []
        for group in groups:
            if _ours(group):  # a flat entry (Cursor, Windsurf)
                slots.setdefault(event, len(kept_groups))
                continue
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            kept = [h for h in group["hooks"] if not _ours(h)]
            if len(kept) < len(group["hooks"]):
                slots.setdefault(event, len(kept_groups))
                if not kept:
                    continue  # a group of memlane's only
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        hooks[event] = kept_groups
    return result, slots


def _drop_emptied(settings: dict[str, Any], emptied: dict[str, int]) -> None:
    """Drop the events that held memlane's hooks and hold nothing now, and ``hooks`` when
    that leaves it empty (the user's own empty entries stay)."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or not emptied:
        return
    for event in emptied:
        if hooks.get(event) == []:
            del hooks[event]
    if not hooks:
        del settings["hooks"]


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and is_memlane_command(hook.get("command"))


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def diff(path: Path, before: dict[str, Any], after: dict[str, Any]) -> str:
    """A unified diff of the change ('' when there is none)."""
    import difflib

    old, new = render(before) if before else "", render(after) if after else ""
    if old == new:
        return ""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{path} (now)",
            tofile=f"{path} (after)",
        )
    )


BACKUP_SUFFIX = ".memlane-backup"


def backup_path(path: Path) -> Path:
    """Where the file as it was before memlane's latest change is kept (one per file)."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def put_back(path: Path) -> None:
    """Put the file kept in ``path``'s backup back in its place, in one rename: the
    backup is used up (left, a later uninstall could put it over the user's later
    edits). A link at the backup's name is refused."""
    backup = backup_path(path)
    check_output_target(backup)
    os.replace(backup, path)


def delete_made(path: Path) -> list[str]:
    """Delete ``path``, a file memlane created, with its backup when there is one
    (memlane's own earlier version of it), then the folders setup created for it once
    they are empty (:func:`memlane.integrations.folders.remove_made`): the lines that
    say which."""
    path.unlink()
    backup_path(path).unlink(missing_ok=True)
    return remove_made(path.parent)


def write_json(path: Path, data: dict[str, Any] | bytes, *, keep: bool = True) -> Path | None:
    """Write ``data`` (or these exact bytes) to ``path`` atomically; returns the backup of
    the old file, if any. ``keep=False`` (uninstall): no backup is kept, and an earlier
    one goes, older than the file written (kept, a later setup would keep it as the file
    before memlane's change, and uninstall put it back over the user's later edits; the
    one written here would hold memlane's commands that uninstall took out).

    Neither file is written through a link, nor read through one (``memlane.paths``):
    with ``--project`` they lie in a checkout someone else may have made.
    """
    backup: Path | None = None
    refuse_shared_folder(path)
    old = read_regular_file(path, limit=MAX_SETTINGS_BYTES + 1) if keep else None
    if old is not None:
        backup = backup_path(path)
        replace_file(backup, old, 0o600)
    make_dir(path.parent)
    raw = data if isinstance(data, bytes) else render(data).encode("utf-8")
    replace_file(path, raw, 0o600)
    if not keep:
        backup_path(path).unlink(missing_ok=True)
    return backup


def config_file(*parts: str, home: Path, project_dir: Path | None) -> Path:
    """An agent's settings file: ``parts`` under the project (``--project``), else under
    ``home`` (:func:`home_file`). In a project, a folder on the way that is a link is
    refused, and the file itself is read and written only as a regular file: a
    checkout's ``.claude`` may point anywhere."""
    if project_dir is None:
        return home_file(home.joinpath(*parts))
    path = project_dir.joinpath(*parts)
    refuse_links_below(project_dir, path)
    return path


def config_dir(*parts: str, home: Path, project_dir: Path | None) -> Path:
    """An agent's folder of hook files: as :func:`config_file`, the folder itself
    included (in a project it must not be a link either)."""
    if project_dir is None:
        return home_file(home.joinpath(*parts))
    path = project_dir.joinpath(*parts)
    refuse_links_below(project_dir, path / "hook files")  # checks the parents of its argument
    return path


def home_file(path: Path) -> Path:
    """A settings file in the user's own home, as the file it is: a link there is the
    user's (``~/.claude/settings.json`` kept in a dotfiles repository), so the file it
    names is the one read, backed up and replaced."""
    return path.resolve() if path.is_symlink() else path


def our_commands(settings: dict[str, Any]) -> dict[str, list[str]]:
    """Event → memlane's hook commands in ``settings`` (events without any left out)."""
    hooks = settings.get("hooks")
    found: dict[str, list[str]] = {}
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            if _ours(group):  # a flat entry (Cursor, Windsurf)
                found.setdefault(str(event), []).append(str(group["command"]))
                continue
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if _ours(hook):
                    found.setdefault(str(event), []).append(str(hook["command"]))
    return found


def has_our_hooks(path: Path, *, comments: bool = False) -> bool:
    """Whether the settings file at ``path`` holds any of memlane's hooks. A file that
    cannot be read holds none that run, as far as what setup tells the user goes.
    ``comments``: as :func:`load_json`."""
    try:
        return bool(our_commands(load_json(path, comments=comments)))
    except (MemlaneError, OSError):  # reported by setup/uninstall when they touch it
        return False


def describe_change(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What a change does to memlane's hooks, in words ("memlane's hooks added for …")."""
    old, new = our_commands(before), our_commands(after)
    parts = []
    for verb, events in (
        ("added for", [e for e in new if e not in old]),
        ("updated for", [e for e in new if e in old and old[e] != new[e]]),
        ("removed from", [e for e in old if e not in new]),
    ):
        if events:
            parts.append(f"{verb} {', '.join(events)}")
    if not parts:
        return "the same hooks, the file rewritten"
    return "memlane's hooks " + "; ".join(parts)


def apply(
    path: Path, after: dict[str, Any], *, dry_run: bool, comments: bool = False, keep: bool = True
) -> list[str]:
    """Write ``after`` to ``path`` (or show the diff); messages for the user. ``comments``:
    as :func:`load_json`; a file holding some is not rewritten (:func:`keep_comments`).
    ``keep``: as :func:`write_json`."""
    before, commented = read_settings(path, comments=comments)
    change = diff(path, before, after)
    if not change:
        return [f"{path}: already up to date"]
    if commented:
        keep_comments(path, before, after)
    what = describe_change(before, after)
    if dry_run:
        return [f"would change {path}: {what}", change.rstrip("\n")]
    backup = write_json(path, after, keep=keep)
    note = f" (the previous file is kept as {backup})" if backup else ""
    return [f"changed {path}: {what}{note}"]


class CommentsKept(InvalidInput):
    """A settings file with comments, left as it is (:func:`keep_comments`); ``to_set``:
    the JSON of the key (``hooks``, ``mcpServers``) to set in it by hand, which setup
    prints."""

    def __init__(self, message: str, to_set: str) -> None:
        super().__init__(message)
        self.to_set = to_set


def keep_comments(
    path: Path, before: dict[str, Any], after: dict[str, Any], key: str = "hooks"
) -> None:
    """Refuse to rewrite ``path``, a file with comments (the agent reads JSONC): written
    as JSON, it would lose them. The user is told what to change by hand in its ``key``
    (``hooks``, ``mcpServers``): memlane's entries to add, printed with any secret in
    them masked (the rest of the file is not printed: the user's own servers hold
    tokens), or memlane's entries to take out."""
    added = _to_add(before.get(key), after.get(key))
    if not added:
        raise CommentsKept(
            f"{path} has comments, which memlane would drop by rewriting it, so it is left as"
            f' it is: take memlane\'s entries (those running memlane) out of its "{key}" by'
            " hand (or take the comments out and run the command again)",
            "",
        )
    from memlane.privacy import scrub

    raise CommentsKept(
        f"{path} has comments, which memlane would drop by rewriting it, so it is left as it"
        f' is: add the entries printed above to its "{key}" by hand, yours kept (a'
        " [REDACTED] value is a secret of your environment: write it in), or take the"
        " comments out and run the command again",
        scrub(json.dumps({key: added}, indent=2, ensure_ascii=False)),
    )


def _to_add(before: Any, after: Any) -> dict[str, Any]:
    """The entries of table ``after`` that ``before`` lacks: a new or changed value
    whole, of a list the items ``before`` does not hold."""
    old = before if isinstance(before, dict) else {}
    added: dict[str, Any] = {}
    for name, value in (after if isinstance(after, dict) else {}).items():
        was = old.get(name)
        if value == was:
            continue
        if isinstance(value, list) and isinstance(was, list):
            value = [item for item in value if item not in was]
            if not value:
                continue  # only items taken out
        added[name] = value
    return added


def install_hooks(
    path: Path, ours: dict[str, list[dict[str, Any]]], *, dry_run: bool, comments: bool = False
) -> list[str]:
    """Put ``ours`` (event → groups) into the settings file at ``path``; messages for the
    user. ``comments``: as :func:`apply`."""
    merged = merge_hooks(load_json(path, comments=comments), ours)
    return apply(path, merged, dry_run=dry_run, comments=comments)


def uninstall_hooks(
    path: Path, *, dry_run: bool, bare: dict[str, Any] | None = None, comments: bool = False
) -> list[str]:
    """Take memlane's hooks out of the settings file at ``path``; messages for the user.

    ``bare``: what setup writes in a new file besides the hooks (Cursor's ``version``).
    A file memlane's hooks leave with only that, which memlane created (no backup, or a
    backup of memlane's own), is deleted with its backup; a file left as the user's was before
    setup (its backup, which holds no hook of memlane's) gets those bytes back. ``comments``:
    as :func:`apply`; a file with comments is neither deleted nor given its backup's bytes.
    """
    if not path.exists():
        return [f"{path}: not present, nothing to remove"]
    before, commented = read_settings(path, comments=comments)
    after = remove_hooks(before)
    if commented and after != before:
        keep_comments(path, before, after)
    backup = backup_path(path)
    original = read_regular_file(backup, limit=MAX_SETTINGS_BYTES + 1)
    try:
        kept = {} if original is None else load_json(backup, comments=comments)
    except InvalidInput:  # a backup the user broke: the file is written as usual
        return apply(path, after, dry_run=dry_run, comments=comments, keep=False)
    added = {key: value for key, value in (bare or {}).items() if key not in kept}
    # Only a file still holding memlane's hooks is memlane's last write to undo: one
    # without them is the user's (the hooks taken out by hand), kept as it is.
    restore = our_commands(before) and not our_commands(kept)
    if original is not None and restore and kept == _without(after, added):
        what = f"{describe_change(before, after)}, the file as it was before setup"
        if dry_run:
            return [f"would change {path}: {what}"]
        refuse_shared_folder(path)  # as write_json: an agent runs what the file holds
        put_back(path)
        return [f"changed {path}: {what}"]
    empty: tuple[dict[str, Any], ...] = ({}, bare or {})
    made = original is None or (our_commands(kept) and remove_hooks(kept) in empty)
    if after in empty and our_commands(before) and made:
        if dry_run:
            return [f"would delete {path}: memlane created it and nothing else is in it"]
        removed = delete_made(path)
        return [f"deleted {path}: memlane created it and nothing else is in it", *removed]
    return apply(path, after, dry_run=dry_run, comments=comments, keep=False)


def _without(data: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the keys setup ``added`` (when they still hold what it wrote)."""
    return {key: value for key, value in data.items() if key not in added or added[key] != value}
