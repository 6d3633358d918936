"""Session files on disk: where agents keep them, and which parser reads each.

* Claude Code writes ``~/.claude/projects/<project slug>/<session id>.jsonl``,
  and a subagent's transcript to ``<session id>/subagents/agent-<id>.jsonl``
  next to it;
* Codex writes ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

:func:`find_session_files` lists them (oldest first, so a backfill replays
history in order) with what their first records say: the session id, its
working directory (the project) and, for a subagent, its parent session; a file
or folder that cannot be read is listed with its error, for ``memlane recover`` to
report while it reads the others. :func:`iter_session_turns` reads any of them into
turns, from a byte offset.

Links. A file that is a link is passed over. A folder that is a link is followed
only to a folder the user running memlane owns (:func:`followed`): a ``~/.claude``
kept in a dotfiles repository, or a project folder moved to a data disk, is the
user's own wherever it lies, while a link to another user's folder would have stored
that user's transcripts when run as root (the s26 probe: a project link and a
``<session>/subagents`` link into a 0700 home). The two trees are walked alike.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memlane.capture.codex import is_codex_rollout, iter_codex_turns, session_meta
from memlane.capture.transcript import (
    ParseStats,
    ReadLimit,
    Turn,
    is_compaction_agent,
    iter_records,
    iter_turns,
    parse_timestamp,
    subagent_session_id,
    transcript_source,
)

# Records read at most to find a Claude Code transcript's session id and directory.
_HEAD_RECORDS = 50


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A session's transcript on disk and what it says about the session."""

    path: str
    agent: str  # 'claude-code' | 'codex'
    session_id: str
    cwd: str | None
    parent_session_id: str | None = None
    size: int = 0
    started: datetime | None = None  # the time of its first record
    # Why the file (or the folder at ``path``) could not be read; the rest is empty then.
    error: OSError | None = None


def iter_session_turns(
    path: str,
    start_offset: int = 0,
    stats: ParseStats | None = None,
    limit: ReadLimit | None = None,
) -> Iterator[Turn]:
    """The turns of a Claude Code transcript or a Codex rollout at ``path`` (``limit``:
    :class:`memlane.capture.transcript.ReadLimit`)."""
    if is_codex_rollout(path):
        return iter_codex_turns(path, start_offset, stats, limit)
    return iter_turns(path, start_offset, stats, limit)


def describe(path: str) -> SessionFile | None:
    """The session a transcript file holds, or None when it holds none (empty, not JSONL)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size == 0:
        return None
    if is_codex_rollout(path):
        return _codex_file(path, size)
    source = transcript_source(path)
    if source.is_subagent and is_compaction_agent(source.agent_id):
        return None  # its summary is in the session's own transcript
    session: str | None = None
    cwd: str | None = None
    started: datetime | None = None
    records = 0
    for records, (record, _) in enumerate(iter_records(path), 1):
        if session is None and isinstance(record.get("sessionId"), str):
            session = record["sessionId"]
        if cwd is None and isinstance(record.get("cwd"), str):
            cwd = record["cwd"]
        started = started or parse_timestamp(record.get("timestamp"))
        if (session and cwd and started) or records >= _HEAD_RECORDS:
            break
    if not records:
        return None  # not a JSONL transcript
    if source.is_subagent and source.agent_id:
        parent = source.parent_session_id or session
        if not parent:
            return None
        child = subagent_session_id(parent, source.agent_id)
        return SessionFile(path, "claude-code", child, cwd, parent, size, started)
    session = session or Path(path).stem
    return SessionFile(path, "claude-code", session, cwd, size=size, started=started)


def subagent_files(transcript_path: str) -> list[tuple[str, str]]:
    """(agent id, path) of the subagent transcripts Claude Code keeps next to a session's
    transcript (``<session id>/subagents/agent-<id>.jsonl``), regular files only, sorted."""
    session_dir = Path(os.path.splitext(transcript_path)[0])
    folder = session_dir / "subagents"
    if session_dir.is_symlink() or folder.is_symlink() or not folder.is_dir():
        return []
    found: list[tuple[str, str]] = []
    for path in sorted(folder.glob("agent-*.jsonl")):
        if path.is_symlink() or not path.is_file():
            continue
        source = transcript_source(str(path))
        if source.is_subagent and source.agent_id and not is_compaction_agent(source.agent_id):
            found.append((source.agent_id, str(path)))
    return found


def _codex_file(path: str, size: int) -> SessionFile | None:
    meta = session_meta(path)
    session = meta.get("id")
    if not isinstance(session, str) or not session:
        return None
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    started = parse_timestamp(meta.get("timestamp"))
    return SessionFile(path, "codex", session, cwd, size=size, started=started)


def find_session_files(
    claude_dir: Path | None = None, codex_dir: Path | None = None
) -> list[SessionFile]:
    """Every Claude Code transcript under ``claude_dir`` (``~/.claude/projects``) and Codex
    rollout under ``codex_dir`` (``~/.codex/sessions``), oldest first; a subagent's after
    its parent. Missing folders are skipped; one that cannot be read, and a file that
    cannot be, is listed with its ``error``. Links: see the module docstring."""
    home = Path.home()
    claude = claude_dir if claude_dir is not None else home / ".claude" / "projects"
    codex = codex_dir if codex_dir is not None else home / ".codex" / "sessions"
    unread: list[SessionFile] = []
    paths: list[str] = []
    if claude.is_dir():
        for project in _listing(str(claude), unread)[0]:
            sessions, transcripts = _listing(project, unread)
            paths.extend(transcripts)
            for session in sessions:
                subagents = os.path.join(session, "subagents")
                if _is_folder(subagents):
                    paths.extend(_listing(subagents, unread, prefix="agent-")[1])
    if codex.is_dir():
        paths.extend(_tree_transcripts(str(codex), unread))
    found: list[tuple[float, int, SessionFile]] = [(0.0, 0, item) for item in unread]
    for path in paths:
        try:
            described = describe(path)
            if described is None:
                continue
            modified = os.stat(path).st_mtime
        except OSError as exc:
            found.append((0.0, 0, SessionFile(path, "", "", None, error=exc)))
            continue
        found.append((modified, described.parent_session_id is not None, described))
    found.sort(key=lambda item: (item[0], item[1], item[2].path))
    return [item[2] for item in found]


def followed(path: str) -> bool:
    """Whether the folder link at ``path`` is followed: only to a folder that the user
    running memlane owns (see the module docstring)."""
    try:
        target = os.stat(path)
    except OSError:
        return False  # dangling, a loop, or not ours to look into
    return stat.S_ISDIR(target.st_mode) and target.st_uid == os.geteuid()


def _is_folder(path: str) -> bool:
    """A folder to read: a real one, or a link :func:`followed`."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return followed(path)
        return os.path.isdir(path)
    except OSError:
        return False


def _listing(
    folder: str, unread: list[SessionFile], prefix: str = ""
) -> tuple[list[str], list[str]]:
    """The folders in ``folder`` to read (real ones, and links :func:`followed`) and its
    ``<prefix>*.jsonl`` files that are no link; none, and its error noted in ``unread``,
    when it cannot be listed."""
    folders: list[str] = []
    files: list[str] = []
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError as exc:
        unread.append(SessionFile(folder, "", "", None, error=exc))
        return folders, files
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False) or (entry.is_symlink() and followed(entry.path)):
                folders.append(entry.path)
            elif (
                entry.name.startswith(prefix)
                and entry.name.endswith(".jsonl")
                and entry.is_file(follow_symlinks=False)
            ):
                files.append(entry.path)
        except OSError as exc:
            unread.append(SessionFile(entry.path, "", "", None, error=exc))
    return folders, files


def _tree_transcripts(root: str, unread: list[SessionFile]) -> list[str]:
    """The ``*.jsonl`` files at any depth below ``root``, each folder read once."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            info = os.stat(folder)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue  # reached again through a link
        seen.add((info.st_dev, info.st_ino))
        folders, files = _listing(folder, unread)
        pending.extend(folders)
        found.extend(files)
    return found
