"""The hooks' spool: captures a hook gave up on, kept on disk until they are stored.

A hook process has a budget (``dispatch.BUDGETS``, 4 s for a prompt); SQLite waits up to
10 s for another process's write lock, and the alarm cannot interrupt that wait, so the
watchdog's hard exit ends the process with nothing written. What exists only in the
hook's input would be lost: a prompt, the tool event of an agent without a transcript, a
reply kept without one (a transcript is not: Stop resumes from its stored offset). So the
dispatcher hands the capture it gave up on to :func:`keep` — from its main thread, or
from the watchdog's thread while the main one is blocked on the lock — and :func:`replay`
stores it later: the worker on start and when idle, and the next hook process that
captures, before its own capture (so a spooled prompt keeps its place in the numbering).
Each replay is a bounded pass, oldest first; a capture that arrives while a pass left
files waiting is kept here after them (``dispatch.keep_behind``), not stored first.

* One JSON file per capture in ``StatePaths.spool_dir``/<tag> (0700 folders in memlane's
  data folder, whichever database is used: <tag> names it; a link or a folder other users
  can write is refused), each 0600, written in a new private folder beside it and renamed
  (:func:`memlane.paths.replace_file`), so no reader sees half a file. A file is named by the
  time of its capture (``HookContext.started_at``: taken once the hook has read its
  event and settings, the time its write would have stored): replay goes in that order,
  with that time and the capture's keys (session, ``tool_use_id``, a reply's key), so the
  dedup rules apply as they would have, and a capture found stored already (a replay
  that died between its commit and the file's removal) is not stored again.
* Text is privacy-filtered before it is written, by the rule of ``Core.scrub`` and the
  tool payloads' rule (:func:`memlane.capture.pipeline.scrub_tool_payloads`): the spool
  holds no secret the database would not hold. The write path filters it again on
  replay (filtering filtered text changes nothing).
* At most :data:`MAX_FILES` files a database (beyond, the oldest go, one log line), each at
  most ``MAX_STDIN_BYTES``: JSON in UTF-8 (not ASCII-escaped, which made a non-ASCII
  capture up to 3 times its size), a prompt cut where the write path cuts it
  (``pipeline.MAX_PROMPT_CHARS``, before filtering), so a prompt the database would store
  fits. A record names its database by a digest, and is kept in that database's own
  folder (``spool/<tag>``, :data:`~memlane.hooks.events.SPOOL_TAG_CHARS` of the digest):
  a replay, and the hooks' look for waiting captures, see only their database's.
* A spool file is hostile input, like hook stdin: one that does not parse or holds a
  wrong field, and a capture the write path refuses (it would refuse it again: a
  :class:`~memlane.errors.RecordRefused`, an invalid input) are moved aside to
  ``spool/<tag>/rejected`` (0700, files 0600, at most :data:`MAX_FILES`: beyond, the
  oldest go), never deleted unseen: one log line a replay says how many went, why the
  first, and how many older ones it removed to make room; the rest of the spool
  proceeds. A rejected file counts against a replay's ``limit`` as a stored one does: a
  replay reads a bounded number of files. A file is removed only once its write
  committed; a database that cannot be written now (busy, full, read-only:
  :func:`memlane.errors.write_may_succeed_later`, the rule that spools a capture in the
  first place) ends the replay, raised, and leaves that file and the rest for the next
  one. One replay runs at a time (an ``flock`` on the folder's lock file, released when
  its process ends).

The dispatcher imports this module only when it gives up or finds files in the spool.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

from memlane.hooks.events import (
    MAX_STDIN_BYTES,
    SPOOL_KINDS,
    SPOOL_SUFFIX,
    SPOOL_TAG_CHARS,
    database_key,
    is_spooled_capture,
)
from memlane.paths import NOFOLLOW, UnsafePath, remove_orphaned_temps, replace_file

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memlane.config import Settings
    from memlane.hooks.agents import HookEvent
    from memlane.service import Memory

VERSION = 1
MAX_FILES = 1000
LOCK_NAME = ".replay.lock"
# The sub-folder of spool/<tag> the files a replay does not store are moved to.
REJECTED = "rejected"
# Spooled times later than now by more than this are refused (a crafted file).
FUTURE_SLACK_S = 24 * 3600.0
_counter = [0]


class BadSpoolFile(ValueError):
    """A spool file that is not a capture this memlane wrote."""


def capture_kind(event: HookEvent, *, reply: bool = False) -> str | None:
    """What ``event`` captures that only its input holds ("prompt", "tool", "reply");
    None when nothing would be lost (a transcript holds it, or there is no capture).
    ``reply``: the Stop handler decided to keep the reply (it read no transcript)."""
    from memlane.hooks.handlers import reply_to_keep

    kind = SPOOL_KINDS.get(event.event)
    if kind == "tool" and event.transcript_path:
        return None  # with a transcript, Stop stores the call from it
    if kind == "reply" and not ((reply or not event.transcript_path) and reply_to_keep(event)):
        return None
    return kind


def keep(
    event: HookEvent,
    project: str,
    settings: Settings,
    at: float,
    *,
    notes: list[str],
    reply: bool = False,
) -> Path | None:
    """Write ``event``'s capture (of ``project``, at ``at``: :attr:`HookContext.started_at`)
    to the spool, privacy-filtered; the file, or None when there is nothing to keep or it
    is refused (too large, a name the filter masks). ``reply``: see :func:`capture_kind`.
    What became of it goes to ``notes``, for the caller's one log line. Raises OSError or
    UnsafePath when it cannot."""
    kind = capture_kind(event, reply=reply)
    if kind is None:
        return None
    import json

    scrub = _scrubber(settings)
    if scrub(event.session_id) != event.session_id or scrub(project) != project:
        # Names are identities, never masked: the write path refuses this one (a secret).
        notes.append(f"{kind} not spooled: its session id or project name holds a secret")
        return None
    record = _record(kind, event, project, at, scrub)
    record["db"] = database_key(settings.database)
    # UTF-8, as the file is read (json.loads of bytes); a lone surrogate kept as it is.
    data = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    encoded = data.encode("utf-8", "surrogatepass")
    if len(encoded) > MAX_STDIN_BYTES:
        notes.append(f"{kind} too large to spool ({len(encoded):,} bytes): dropped")
        return None
    folder = _folder(settings, create=True)
    assert folder is not None
    dropped = _make_room(folder, _spooled(folder))
    _counter[0] += 1
    name = f"{int(at * 1_000_000):017d}-{os.getpid()}-{_counter[0]}{SPOOL_SUFFIX}"
    replace_file(folder / name, encoded, 0o600)  # under a temporary name, then renamed
    notes.append(f"{kind} kept in the spool ({name})")
    if dropped:
        notes.append(f"spool full ({MAX_FILES} captures): dropped the {dropped} oldest")
    return folder / name


def _scrubber(settings: Settings) -> Callable[[str], str]:
    from functools import partial

    from memlane.core import scrub_with
    from memlane.privacy import Filter

    return partial(scrub_with, Filter(settings.secret_patterns))


def _record(
    kind: str, event: HookEvent, project: str, at: float, scrub: Callable[[str], str]
) -> dict[str, Any]:
    from memlane.hooks.handlers import capture

    record: dict[str, Any] = {"v": VERSION, "at": at, **capture(kind, event, project, at)}
    if kind == "prompt":
        from memlane.capture.pipeline import MAX_PROMPT_CHARS

        record["prompt"] = scrub(record["prompt"][:MAX_PROMPT_CHARS])  # the write path's cut
    elif kind == "tool":
        from memlane.capture.pipeline import scrub_tool_payloads

        tool_input, tool_response = scrub_tool_payloads(
            scrub, record["tool_name"], record["tool_input"], record["tool_response"]
        )
        record.update(
            tool_name=_plain(scrub, record["tool_name"]),
            tool_input=_scrub_keys(scrub, tool_input),
            tool_response=_scrub_keys(scrub, tool_response),
            cwd=scrub(record["cwd"] or "") or None,
            # A key the filter masks is left out: the dedup window still applies.
            tool_use_id=_plain(scrub, record["tool_use_id"]),
        )
    else:
        record["reply"] = scrub(record["reply"])
        record["key"] = _plain(scrub, record["key"]) or str(int(at * 1000))
    return record


def _plain(scrub: Callable[[str], str], value: str | None) -> str | None:
    """``value`` when the privacy filter leaves it as it is, else None."""
    return value if value is not None and scrub(value) == value else None


def _scrub_keys(scrub: Callable[[str], str], value: Any) -> Any:
    """``value`` with the keys of its objects filtered too (the values are already)."""
    if isinstance(value, dict):
        return {scrub(str(key)): _scrub_keys(scrub, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_keys(scrub, item) for item in value]
    return value


def _folder(settings: Settings, *, create: bool) -> Path | None:
    """The spool folder of ``settings``' database (``spool/<tag>``), checked with the
    spool folder (UnsafePath: a link, not a folder, another user's, or writable by
    others); None when it does not exist and ``create`` is False."""
    from memlane.paths import check_private_dir

    spool = settings.paths.spool_dir
    check_private_dir(spool.parent)
    if _private_folder(spool, create=create) is None:
        return None
    tag = database_key(settings.database)[:SPOOL_TAG_CHARS]
    return _private_folder(spool / tag, create=create)


def _private_folder(folder: Path, *, create: bool) -> Path | None:
    from memlane.paths import check_private_dir, ensure_private_dir

    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        if not create:
            return None
        ensure_private_dir(folder)
        info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(
            f"{folder} is a symbolic link; memlane keeps the hooks' spool only in a folder"
            f" of its own: remove it (`rm {folder}`)"
        )
    check_private_dir(folder, ours=True)
    return folder


def _spooled(folder: Path) -> list[str]:
    """The spool files' names, oldest first."""
    return sorted(name for name in os.listdir(folder) if is_spooled_capture(name))


def _make_room(folder: Path, names: list[str]) -> int:
    """Remove the oldest of ``names`` (``folder``'s files, oldest first: taken out of the
    list too) beyond room for one more; how many."""
    excess = len(names) - MAX_FILES + 1
    if excess <= 0:
        return 0
    for name in names[:excess]:
        _unlink(folder / name)
    del names[:excess]
    return excess


def replay(
    memory: Memory, settings: Settings, *, limit: int | None = None
) -> tuple[int, bool | None]:
    """Store the spooled captures of ``memory``'s database, oldest first, each file
    removed once its write committed; at most ``limit`` files (a pass: the next one goes
    on from there, in the same order). How many memories that added (a capture found
    stored already adds none: its file is only removed), and whether the pass stopped at
    its limit with files left, having removed or moved one at least (files it cannot, in
    an unwritable folder, are no reason to go on at once): a capture of this moment then
    goes to the spool after them (:func:`memlane.hooks.dispatch.keep_behind`), so a
    session's captures are stored in the order they came, whatever the bound.

    A file that is not a valid capture, or one the write path refuses, is moved to the
    ``rejected`` folder, with one log line. Returns (0, None) at once when another process
    replays (its lock held): captures may wait behind it, so a capture of this moment goes
    after them too, but there is nothing to go on with at once. Raises StoreError when the
    database cannot be written now (busy, read-only, full: that file and the rest are kept)
    and UnsafePath for a spool folder it must not read; the caller logs them (the worker
    only when the failure changes).
    """
    folder = _folder(settings, create=False)
    if folder is None:
        return 0, False
    import fcntl

    lock = os.open(folder / LOCK_NAME, os.O_CREAT | os.O_RDWR | NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0, None  # another process replays the same files
        return _replay_locked(memory, settings, folder, limit)
    finally:
        os.close(lock)


def _replay_locked(
    memory: Memory, settings: Settings, folder: Path, limit: int | None
) -> tuple[int, bool]:
    database = database_key(settings.database)
    remove_orphaned_temps(folder)  # of a hook killed while it wrote a capture
    stored = done = gone = 0  # gone: the files that left the spool (removed, moved aside)
    rejected = _Rejected(folder)
    names = _spooled(folder)
    try:
        for name in names:
            if limit is not None and done >= limit:
                break
            done += 1  # stored or rejected: each file read is work
            path = folder / name
            try:
                added = _store_file(memory, path, database)
            except BadSpoolFile as exc:
                gone += rejected.move(path, str(exc))
                continue
            gone += _unlink(path)
            stored += added
    finally:
        rejected.log()
    # Files no pass can remove nor move (an unwritable folder) are no backlog: another
    # pass at once would read the same ones again, and again.
    return stored, gone > 0 and done < len(names)


def _store_file(memory: Memory, path: Path, database: str) -> bool:
    """Store the capture of spool file ``path``; whether that added a memory. Raises
    BadSpoolFile for a file that is no capture of ``database``'s and for a capture the
    write path refuses (it would refuse it again), and what says the database cannot be
    written now (:func:`memlane.errors.write_may_succeed_later`)."""
    from memlane.errors import write_may_succeed_later

    record = parse(_read(path))
    if record["db"] != database:
        raise BadSpoolFile("named for another database")
    try:
        return _store(memory, record)
    except Exception as exc:
        if write_may_succeed_later(exc):
            raise  # this file and the rest wait
        raise BadSpoolFile(f"not stored ({type(exc).__name__}: {exc})") from exc


def _read(path: Path) -> bytes:
    """The bytes of a spool file: a regular file of the user's, at most the cap."""
    from memlane.paths import open_own_file

    try:
        fd = open_own_file(path)
    except UnsafePath as exc:
        raise BadSpoolFile(f"refused ({exc})") from exc
    except OSError as exc:
        raise BadSpoolFile(f"unreadable ({exc.strerror})") from exc
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(fd).st_size > MAX_STDIN_BYTES:
            raise BadSpoolFile(f"larger than {MAX_STDIN_BYTES} bytes")
        return handle.read(MAX_STDIN_BYTES + 1)


def parse(data: bytes) -> dict[str, Any]:
    """A spool file's record, every field checked like hook stdin (BadSpoolFile if not)."""
    import json
    import math

    try:
        record = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadSpoolFile("not JSON") from exc
    if not isinstance(record, dict) or record.get("v") != VERSION:
        raise BadSpoolFile("not a spooled capture of this memlane version")
    kind, at = record.get("kind"), record.get("at")
    if kind not in ("prompt", "tool", "reply"):
        raise BadSpoolFile(f"unknown kind {str(kind)[:40]!r}")
    if not isinstance(at, (int, float)) or isinstance(at, bool) or not math.isfinite(at):
        raise BadSpoolFile("no time")
    if not 0 < at < time.time() + FUTURE_SLACK_S:
        raise BadSpoolFile("a time out of range")
    fields: dict[str, tuple[type, ...]] = {
        "db": (str,),
        "session_id": (str,),
        "project": (str,),
        "agent": (str,),
    }
    if kind == "prompt":
        fields.update(prompt=(str,), turn=(str, type(None)))  # turn: none in older files
    elif kind == "tool":
        fields.update(tool_name=(str, type(None)), cwd=(str, type(None)))
        fields["tool_use_id"] = (str, type(None))
    else:
        fields.update(reply=(str,), key=(str,))
    for key, types in fields.items():
        if not isinstance(record.get(key), types):
            raise BadSpoolFile(f"field {key!r} missing or of the wrong type")
    from memlane.hooks.agents import AGENTS

    if not record["session_id"] or record["agent"] not in AGENTS:
        raise BadSpoolFile("no session or an unknown agent")
    if kind == "reply" and not (record["reply"] and record["key"]):
        raise BadSpoolFile("an empty reply")
    return record


def _store(memory: Memory, record: dict[str, Any]) -> bool:
    """Store ``record``'s capture; whether that added a memory (not when it was stored
    already: a replay that died before removing the file committed it; a reply's key
    makes its source id, so a reply stored again is found)."""
    from datetime import UTC, datetime

    from memlane.hooks.handlers import store_capture

    when = datetime.fromtimestamp(record["at"], tz=UTC)
    saved, _number = store_capture(memory, record, now=when, once=True)
    return saved is not None and saved.status == "created"


class _Rejected:
    """The ``rejected`` folder beside a replay's files: what the replay moves there, for
    its one log line (the rejected folder is listed once a replay)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / REJECTED
        self.names: list[str] | None = None  # its captures, oldest first, once listed
        self.first = ""  # "<name>: <why>" of the first file moved
        self.count = self.left = self.dropped = 0
        self.usable = True  # False: no folder can be made there; renamed in place instead

    def move(self, path: Path, why: str) -> bool:
        """Move spool file ``path``, not to be stored for ``why``, here (the oldest here go
        beyond :data:`MAX_FILES`); one that cannot be (a folder of that name here) is
        renamed ``.<name>.bad`` in place: no replay reads it again. Whether it left the
        spool."""
        self.count += 1
        self.first = self.first or f"{path.name}: {why}"
        if self.names is None:
            try:
                _private_folder(self.folder, create=True)
                self.names = _spooled(self.folder)
            except (UnsafePath, OSError):  # a file or a link there: it must not block the spool
                self.names = []
                self.usable = False
        target = self.folder / path.name
        try:
            if not self.usable:
                raise IsADirectoryError(target)
            self.dropped += _make_room(self.folder, self.names)
            os.rename(path, target)
        except FileNotFoundError:
            return True  # gone meanwhile: nothing left to move
        except OSError:
            try:
                os.rename(path, path.with_name(f".{path.name}.bad"))
            except FileNotFoundError:
                return True
            except OSError:
                self.left += 1
                return False
            return True
        import bisect

        bisect.insort(self.names, path.name)
        with contextlib.suppress(OSError):  # another user's (refused for that): as it is
            if stat.S_ISREG(os.lstat(target).st_mode):
                os.chmod(target, 0o600)
        return True

    def log(self) -> None:
        """The replay's one line, when it rejected files: how many, why the first, and
        the older rejected files removed to make room (none is deleted unseen)."""
        if not self.count:
            return
        line = f"spool file {self.first}; moved to {self.folder}"
        if self.count > 1:
            line += f" (and {self.count - 1} more)"
        if self.left:
            line += f"; {self.left} could not be moved and stay in the spool"
        if self.dropped:
            line += f"; removed the {self.dropped} oldest there (at most {MAX_FILES})"
        _note("spool", line)


def _unlink(path: Path) -> bool:
    """Remove ``path`` (a link itself, never its target); False when it cannot."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _note(event: str, message: str) -> None:
    from memlane.hooks.log import log_note

    log_note(event, message)
