"""Share memory between machines through a folder or a git repository.

Copying a live SQLite file between machines corrupts it or loses writes, so
sync exchanges *records* instead, in a layout where no file is ever written
by two machines::

    <dir>/machines/<machine-id>/manifest.json
    <dir>/machines/<machine-id>/chunks/<sha256>.jsonl.gz

* A **chunk** is gzipped JSONL in the format of memlane's own export
  (:mod:`memlane.interop.export`): session records, memory records, and
  ``{"record": "tombstone", "identity": …}`` for deletions. Its name is the
  SHA-256 of its uncompressed bytes (content-addressed), and it is never
  changed once written — so a git repository only ever gains files.
* The **manifest** lists a machine's chunks in push order; only that machine
  writes it (atomically, by rename), so two machines pushing at the same time
  touch disjoint files and a git merge never conflicts.

The folder is input from elsewhere, so ``pull`` reads only what has memlane's
shape: machine folders named like instance ids and chunk ids of 64 hex digits
(nothing outside the folder can be named), regular files opened without
following a link and without blocking (a FIFO or a device is refused, not
waited on), manifests up to ``MAX_MANIFEST_BYTES``; a chunk is decompressed
block by block while its hash is computed, and refused past
``MAX_CHUNK_BYTES`` (a gzip bomb never fills memory). ``push`` cuts chunks
well below that limit.

``push`` writes what changed here since the last push to this folder: memories
whose version (identity + ``updated_at``) this folder has not seen, sessions
with new activity, and tombstones for memories that this folder knew about
and that are gone here. ``pull`` applies, in order, the chunks of other
machines not applied yet, one transaction per chunk (a chunk applies whole or
not at all), after checking each chunk's hash. A memory travels with its
identity (:mod:`memlane.interop.identity`), so each machine updates its own
copy; the newer ``updated_at`` wins; a deletion wins over a concurrent edit
(a tombstoned identity is never brought back).

What this machine pushed and applied is kept in the store's ``seen`` keys,
namespaced per sync folder (by its resolved path), so the database itself
knows its sync state and a backup carries it. Vectors are not synced: each
machine embeds for itself. Sessions are never deleted by sync.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from memlane.errors import InvalidInput
from memlane.interop import decode
from memlane.interop.export import EXPORT_FORMAT, EXPORT_VERSION, memory_record, session_record
from memlane.interop.identity import identity_of, instance_id, is_machine_id
from memlane.interop.jsonl import parse_time
from memlane.interop.report import InteropReport, Tally
from memlane.interop.roundtrip import RecordApplier, check_header
from memlane.memories import iter_all
from memlane.models import utcnow
from memlane.paths import (
    DIR_FLAGS,
    NOFOLLOW,
    Staging,
    check_output_target,
    ensure_private_dir,
    ensure_state_dir,
    folder_info_problem,
)
from memlane.privacy import excerpt
from memlane.store.base import NO_LIMIT
from memlane.text import counted

if TYPE_CHECKING:
    from memlane.core import Core

SYNC_FORMAT = "memlane-sync"
SYNC_VERSION = 1
CHUNK_RECORDS = 5000
# A chunk's uncompressed size: pull refuses more, push stays well below.
MAX_CHUNK_BYTES = 64 * 1024 * 1024
PUSH_CHUNK_BYTES = 16 * 1024 * 1024
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
CHUNK_ID = re.compile(r"[0-9a-f]{64}")
_READ_BLOCK = 1024 * 1024
# A chunk with more bad records than this is not memlane's: refused whole, once.
MAX_BAD_RECORDS = 100
RECORD_KINDS = ("header", "session", "memory", "tombstone")


@dataclass(frozen=True, slots=True)
class SyncPush:
    """What one push wrote."""

    directory: str
    machine: str
    chunks: tuple[str, ...] = ()
    memories: int = 0
    sessions: int = 0
    tombstones: int = 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["chunks"] = list(self.chunks)
        return data

    def summary(self) -> str:
        if not self.chunks:
            return f"nothing new to push (machine {self.machine})"
        return (
            f"pushed {counted(self.memories, 'memory')},"
            f" {counted(self.sessions, 'session')} and {counted(self.tombstones, 'deletion')}"
            f" in {counted(len(self.chunks), 'chunk')}"
            f" to {self.directory} (machine {self.machine})"
        )


class Namespaces:
    """``seen`` namespaces of one sync folder."""

    def __init__(self, directory: Path) -> None:
        try:
            where = directory.resolve()
        except RuntimeError:  # Python 3.11: a loop of symbolic links
            raise InvalidInput(f"{directory} is a loop of symbolic links") from None
        key = hashlib.sha256(os.fsencode(where)).hexdigest()[:12]  # any bytes a name holds
        self.version = f"sync:{key}:version"  # identity@updated_at pushed or applied
        self.have = f"sync:{key}:have"  # identities this machine pushed or holds from here
        self.tomb = f"sync:{key}:tomb"  # identities deleted (pushed or applied tombstones)
        self.chunks = f"sync:{key}:chunks"  # chunk ids applied or written here


def _machines_dir(directory: Path) -> Path:
    return directory / "machines"


def _open_input(path: Path, what: str, limit: int, folder: int) -> tuple[int, int]:
    """(descriptor, size) of the regular file ``path`` of the sync folder, its name looked
    up in the open folder ``folder``, never through a link.

    ``O_NONBLOCK``: opening a FIFO returns at once (and is then refused) instead
    of waiting for a writer.
    """
    flags = os.O_RDONLY | NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path.name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInput(f"{what} {path} is a symbolic link; refused") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InvalidInput(f"{what} {path} is not a regular file; refused")
    if info.st_size > limit:
        os.close(fd)
        raise InvalidInput(f"{what} {path} is larger than {limit} bytes; refused")
    return fd, info.st_size


class _NotYours(Exception):
    """A folder of the sync folder that is not a plain folder of the user's alone; the
    message says why (:func:`memlane.paths.folder_info_problem`), ``link``: a link or not a
    directory."""

    def __init__(self, problem: str, *, link: bool = False) -> None:
        super().__init__(problem)
        self.link = link


def _open_folder(name: str | Path, parent: int | None, stack: contextlib.ExitStack) -> int:
    """A descriptor of the folder ``name`` in the open folder ``parent``, never through a
    link, closed with ``stack``; ``parent`` None: the sync folder itself, which may be a
    link of the user's (to a synced drive). FileNotFoundError when missing; _NotYours when
    it is a link, not a directory, or not the user's alone.

    Everything the sync folder holds is reached from one descriptor, level by level, each
    checked through the descriptor that is then used: a folder renamed on the way after a
    check by name could lead elsewhere.
    """
    flags = DIR_FLAGS
    try:
        fd = os.open(name, flags if parent is None else flags | NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _NotYours("is a link or not a directory", link=True) from None
        if isinstance(exc, PermissionError):  # another user's folder, closed to the user
            problem = folder_info_problem(os.stat(name, dir_fd=parent, follow_symlinks=False))
            if problem is not None:
                raise _NotYours(problem) from None
        raise
    stack.callback(os.close, fd)
    problem = folder_info_problem(os.fstat(fd))
    if problem is not None:
        raise _NotYours(problem)
    return fd


def _own_dirs(root: Path, machine: str, stack: contextlib.ExitStack) -> tuple[int, int]:
    """Descriptors of ``root/machines/<machine>`` and its ``chunks``, ``root`` and each
    level a plain folder of the user's that no one else can write (made 0700 when
    missing), opened one from the other (:func:`_open_folder`). Git stores links: whoever
    can commit to a shared sync repository could make any level a link, and push followed
    it, writing every memory wherever it pointed; in a folder another user owns or can
    write, they could swap a file push was writing for a link."""
    shown = root
    try:
        fds = [_open_folder(root, None, stack)]
        for part in ("machines", machine, "chunks"):
            shown = shown / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fds[-1])
            fds.append(_open_folder(part, fds[-1], stack))
    except _NotYours as exc:
        raise InvalidInput(
            f"{shown} in the sync folder {exc}; nothing pushed (memlane writes there only"
            " into plain folders of yours that no one else can write: remove it, or"
            " `chmod go-w` it, and push again)"
        ) from None
    return fds[-2], fds[-1]


def _read_manifest(path: Path, folder: int) -> dict[str, Any]:
    fd, _size = _open_input(path, "manifest", MAX_MANIFEST_BYTES, folder)
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_MANIFEST_BYTES + 1)
    try:
        data = decode.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"{path} is not a memlane sync manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != SYNC_FORMAT:
        raise InvalidInput(f"{path} is not a memlane sync manifest")
    if data.get("version") != SYNC_VERSION:
        raise InvalidInput(f"{path}: sync version {excerpt(data.get('version'))} is not supported")
    if not isinstance(data.get("chunks"), list):
        raise InvalidInput(f"{path}: 'chunks' must be a list")
    return data


def _write_atomic(path: Path, folder: int, payload: bytes) -> None:
    """A new 0600 file with ``payload``, synced, renamed over ``path`` (never a link) in
    the open folder ``folder``; written in a private folder there (:class:`Staging`)."""
    check_output_target(path, folder)
    with Staging(path, folder) as stage:
        with os.fdopen(stage.new_file(), "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        stage.publish()


@contextlib.contextmanager
def _push_lock(core: Core, ns: Namespaces) -> Iterator[None]:
    """One push per folder at a time on this machine (other machines write elsewhere)."""
    paths = core.settings.paths
    run_dir = ensure_state_dir(paths.runtime_dir, paths)
    path = run_dir / f"{ns.chunks.replace(':', '-')}.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR | NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _chunk_blocks(handle: BinaryIO, path: Path) -> Iterator[bytes]:
    """The uncompressed blocks of an open chunk file, refused past MAX_CHUNK_BYTES; a
    damaged one (gzip's header intact, its data not) is InvalidInput like any bad chunk:
    zlib's own error stopped every pull and push of the machine."""
    import zlib

    total = 0
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
            while block := unzipped.read(_READ_BLOCK):
                total += len(block)
                if total > MAX_CHUNK_BYTES:
                    raise InvalidInput(
                        f"chunk {path.name} decompresses past {MAX_CHUNK_BYTES} bytes; refused"
                    )
                yield block
    except zlib.error as exc:
        raise InvalidInput(f"chunk {path.name} is damaged ({exc})") from None


def _chunk_lines(path: Path, chunk_id: str, folder: int | None) -> Iterator[bytes]:
    """The lines of a chunk, read block by block, after checking its content hash.

    Two passes over one open file: the first only hashes (nothing is read from a
    chunk that fails), the second yields lines and hashes again, so a file changed
    in between is refused at its end (pull applies a chunk in one transaction,
    which then rolls back). Memory holds a block and a line, never the chunk.
    """
    if not CHUNK_ID.fullmatch(chunk_id):
        raise InvalidInput(f"chunk id {chunk_id[:80]!r} is not a SHA-256 (not memlane's)")
    if folder is None:
        raise InvalidInput(f"{path.parent} is not a plain directory; refused")
    fd, _size = _open_input(path, "chunk", MAX_CHUNK_BYTES, folder)
    mismatch = f"chunk {path.name} does not match its hash (incomplete copy?)"
    with os.fdopen(fd, "rb") as handle:
        digest = hashlib.sha256()
        for block in _chunk_blocks(handle, path):
            digest.update(block)
        if digest.hexdigest() != chunk_id:
            raise InvalidInput(mismatch)
        handle.seek(0)
        digest = hashlib.sha256()
        pending = bytearray()
        for block in _chunk_blocks(handle, path):
            digest.update(block)
            pending += block
            # Split on "\n" only: str.splitlines() would also cut at U+2028 or NEL in a text.
            cut = pending.rfind(b"\n") + 1
            if cut:
                yield from bytes(pending[:cut]).split(b"\n")[:-1]
                del pending[:cut]
        if pending:
            yield bytes(pending)
        if digest.hexdigest() != chunk_id:
            raise InvalidInput(mismatch)


def _chunk_records(chunk: Chunk) -> Iterator[tuple[int, Any]]:
    """(line number, decoded record) of each non-empty line of a chunk (see _chunk_lines).

    A line that is not JSON raises ValueError: the chunk is not memlane's.
    """
    lines = _chunk_lines(chunk.path, chunk.id, chunk.folder)
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                record = decode.loads(line.decode("utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number}: not valid JSON ({exc.msg})") from None
            except UnicodeDecodeError:
                raise ValueError(f"line {number}: not UTF-8 text") from None
            yield number, record


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk listed in a machine's manifest: ``path`` names it (in messages), ``folder``
    is its ``chunks`` folder (None when that is missing), open only during its machine's
    turn in :func:`_iter_machines`."""

    machine: str
    id: str
    path: Path
    folder: int | None


def _iter_machines(
    directory: Path,
    stack: contextlib.ExitStack,
    problems: list[str] | None = None,
    skipped: list[str] | None = None,
) -> Iterator[list[Chunk]]:
    """The chunks listed in each machine's manifest, one machine at a time, in push order.
    The sync folder and its ``machines`` folder stay open until ``stack`` closes; a
    machine's folders only until the next machine is asked for: open together, a few
    hundred machines' folders ran out of file descriptors (``ulimit -n`` 1024), and the
    manifests past that were reported unreadable. So a machine's chunks are read before
    the next machine is asked for (never listed across machines first: their ``folder``
    would be closed, its number maybe another file's by then).

    Only folders named like a machine are read, each opened from the sync folder without
    following a link (:func:`_open_folder`: a link could lead out of the folder); the ids
    are checked when a chunk is read. A manifest that cannot be used (or read) is added to
    ``problems`` and skipped (raised without it). A folder that is not the user's alone
    (another user's, or one others can write: they could plant memories recalled into the
    user's prompts) is skipped, and named in ``skipped``.
    """

    def note(what: str) -> None:
        if skipped is not None:
            skipped.append(what)

    machines = _machines_dir(directory)
    try:
        root = _open_folder(directory, None, stack)
        try:
            machines_fd = _open_folder("machines", root, stack)
        except _NotYours as exc:
            if not exc.link:  # a link or a file there: nothing pushed to this folder
                note(f"{machines} {exc}")
            return
    except FileNotFoundError:
        return
    except _NotYours as exc:
        note(f"{directory} {exc}")
        return
    for name in sorted(os.listdir(machines_fd)):
        if not is_machine_id(name):
            continue
        machine_dir = machines / name
        chunks: int | None = None
        with contextlib.ExitStack() as held:
            try:
                folder = _open_folder(name, machines_fd, held)
                with contextlib.suppress(FileNotFoundError):
                    chunks = _open_folder("chunks", folder, held)
                entries = _read_manifest(machine_dir / "manifest.json", folder)["chunks"]
            except _NotYours as exc:
                if not (exc.link and machine_dir.is_symlink()):  # a link is not a machine
                    note(f"{name} ({exc})")
                continue
            except FileNotFoundError:
                continue  # no manifest (or no folder any more): nothing pushed
            except (OSError, InvalidInput) as exc:
                if problems is None:
                    raise
                problems.append(f"{name}: {exc}")
                continue
            yield [
                Chunk(name, chunk_id, machine_dir / "chunks" / f"{chunk_id}.jsonl.gz", chunks)
                for chunk_id in (
                    str(entry.get("id", "")) if isinstance(entry, dict) else "" for entry in entries
                )
            ]


def _known_identities(directory: Path) -> dict[str, tuple[str, str]]:
    """identity → (project, source) of every memory record in the folder."""
    known: dict[str, tuple[str, str]] = {}
    with contextlib.ExitStack() as stack:
        for chunks in _iter_machines(directory, stack, problems=[]):
            for chunk in chunks:
                try:
                    known.update(_chunk_identities(chunk))
                except (OSError, EOFError, ValueError, InvalidInput):
                    continue  # missing or not memlane's: pull reports it; nothing to learn here
    return known


def _chunk_identities(chunk: Chunk) -> dict[str, tuple[str, str]]:
    """identity → (project, source) of the memory records of one chunk.

    A chunk with more than MAX_BAD_RECORDS lines that are not memlane's records
    is not memlane's: its reading stops there and it teaches nothing (pull refuses it).
    """
    found: dict[str, tuple[str, str]] = {}
    bad = 0
    for _line, record in _chunk_records(chunk):
        kind = record.get("record") if isinstance(record, dict) else None
        if kind not in RECORD_KINDS:
            bad += 1
            if bad > MAX_BAD_RECORDS:
                return {}
        elif kind == "memory" and isinstance(record.get("identity"), str):
            found[record["identity"]] = (
                str(record.get("project") or ""),
                str(record.get("source") or "memlane"),
            )
    return found


def _seen_all(core: Core, namespace: str, keys: list[str]) -> set[str]:
    return core.store.seen(namespace, keys) if keys else set()


class MissingSyncFolder(InvalidInput):
    """The sync folder does not exist and was not to be created (a mistyped path)."""


def push(core: Core, directory: str, *, create: bool = False) -> SyncPush:
    """Write this machine's changes since the last push to ``directory``.

    A missing folder is refused, as a missing ``--db`` directory is: a typo must not
    start a second sync folder that no other machine reads. With ``create`` it is made
    (0700: chunks hold memories' text), but only inside an existing folder.
    """
    root = Path(directory).expanduser()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{directory} is not a directory")
    if not root.exists():
        if not create:
            raise MissingSyncFolder(f"no sync folder at {directory}")
        if not root.absolute().parent.is_dir():
            raise InvalidInput(
                f"cannot create the sync folder {directory}: {root.absolute().parent}"
                " does not exist either"
            )
    ensure_private_dir(root)
    ns = Namespaces(root)
    machine = instance_id(core)
    with _push_lock(core, ns):
        return _push_locked(core, root, ns, machine)


def _push_locked(core: Core, root: Path, ns: Namespaces, machine: str) -> SyncPush:
    store = core.store
    # Memories whose current version this folder has not seen.
    local: set[str] = set()
    records: list[dict[str, Any]] = []
    versions: list[str] = []
    identities: list[str] = []
    batch: list[tuple[str, str, Any]] = []

    def flush() -> None:
        seen = _seen_all(core, ns.version, [key for key, _i, _m in batch])
        for key, identity, mem in batch:
            if key not in seen:
                records.append(memory_record(mem, machine))
                versions.append(key)
                identities.append(identity)
        batch.clear()

    for mem in iter_all(core, None):
        identity = identity_of(mem, machine)
        local.add(identity)
        batch.append((f"{identity}@{mem.updated_at.isoformat()}", identity, mem))
        if len(batch) >= 1000:
            flush()
    flush()
    memory_count = len(records)

    sessions: list[dict[str, Any]] = []
    session_keys: list[str] = []
    all_sessions = store.list_sessions(limit=NO_LIMIT)
    keys = [f"session:{s.id}@{s.last_activity_at.isoformat()}" for s in all_sessions]
    seen_sessions = _seen_all(core, ns.version, keys)
    for session, key in zip(all_sessions, keys, strict=True):
        if key not in seen_sessions:
            sessions.append(session_record(session))
            session_keys.append(key)

    # Tombstones: what this folder knew we had, and we no longer have.
    known = _known_identities(root)
    candidates = sorted(set(known) - local)
    had = _seen_all(core, ns.have, candidates)
    gone = sorted(had - _seen_all(core, ns.tomb, sorted(had)))
    now = utcnow().isoformat()
    tombstones = [
        {
            "record": "tombstone",
            "identity": identity,
            "project": known[identity][0],
            "source": known[identity][1],
            "deleted_at": now,
        }
        for identity in gone
    ]

    everything = sessions + records + tombstones
    if not everything:
        return SyncPush(directory=str(root), machine=machine)
    with contextlib.ExitStack() as stack:
        machine_fd, chunks_fd = _own_dirs(root, machine, stack)
        machine_dir = root / "machines" / machine
        parts = list(_parts(everything))
        chunk_ids = [_write_chunk(machine_dir / "chunks", chunks_fd, part) for part in parts]
        _append_manifest(machine_dir, machine_fd, machine, chunk_ids, parts)
    with store.transaction():
        store.mark_seen(ns.version, versions + session_keys)
        store.mark_seen(ns.have, identities)
        store.mark_seen(ns.tomb, gone)
        store.mark_seen(ns.chunks, chunk_ids)
    return SyncPush(
        directory=str(root),
        machine=machine,
        chunks=tuple(chunk_ids),
        memories=memory_count,
        sessions=len(sessions),
        tombstones=len(tombstones),
    )


def _parts(records: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """``records`` in chunks of at most CHUNK_RECORDS records and about PUSH_CHUNK_BYTES."""
    part: list[dict[str, Any]] = []
    size = 0
    for record in records:
        length = len(json.dumps(record, ensure_ascii=False).encode("utf-8")) + 1
        if part and (len(part) >= CHUNK_RECORDS or size + length > PUSH_CHUNK_BYTES):
            yield part
            part, size = [], 0
        part.append(record)
        size += length
    if part:
        yield part


def _write_chunk(chunks: Path, folder: int, records: list[dict[str, Any]]) -> str:
    header = {"record": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION}
    lines = [json.dumps(header, sort_keys=True, ensure_ascii=False)]
    lines += [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records]
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    chunk_id = hashlib.sha256(raw).hexdigest()
    path = chunks / f"{chunk_id}.jsonl.gz"
    try:  # content-addressed: the same bytes are already there
        there = stat.S_ISREG(os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        there = False
    if not there:
        _write_atomic(path, folder, gzip.compress(raw, mtime=0))
    return chunk_id


def _append_manifest(
    machine_dir: Path,
    folder: int,
    machine: str,
    chunk_ids: list[str],
    parts: list[list[dict[str, Any]]],
) -> None:
    path = machine_dir / "manifest.json"
    try:
        manifest = _read_manifest(path, folder)
    except FileNotFoundError:
        manifest = {"format": SYNC_FORMAT, "version": SYNC_VERSION, "machine": machine}
        manifest["chunks"] = []
    # Only this machine writes it, but it is a file in a shared folder: skip what is not ours.
    listed = {entry.get("id") for entry in manifest["chunks"] if isinstance(entry, dict)}
    now = utcnow().isoformat()
    for chunk_id, part in zip(chunk_ids, parts, strict=True):
        if chunk_id in listed:
            continue
        manifest["chunks"].append(
            {
                "id": chunk_id,
                "created_at": now,
                "memories": sum(r["record"] == "memory" for r in part),
                "sessions": sum(r["record"] == "session" for r in part),
                "tombstones": sum(r["record"] == "tombstone" for r in part),
            }
        )
    manifest["updated_at"] = now
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    _write_atomic(path, folder, text.encode("utf-8"))


class _SyncApplier(RecordApplier):
    """A RecordApplier that also records tombstones it applies."""

    def __init__(self, core: Core, ns: Namespaces) -> None:
        super().__init__(
            core,
            with_vectors=False,
            is_tombstoned=lambda ids: core.store.seen(ns.tomb, ids),
        )
        self.ns = ns
        self.tombstoned: list[str] = []
        self.session_versions: list[str] = []

    def apply_tombstone(self, record: dict[str, Any]) -> None:
        super().apply_tombstone(record)
        self.tombstoned.append(str(record["identity"]))


def _existing_folder(directory: str) -> Path:
    """The sync folder ``directory`` names, which must exist to be read: a mistyped path
    is an error, not an empty folder with nothing pending."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise InvalidInput(f"no sync folder at {directory} (push to it first)")
    return root


def pull(core: Core, directory: str) -> InteropReport:
    """Apply the chunks other machines pushed to ``directory`` that are new here."""
    root = _existing_folder(directory)
    ns = Namespaces(root)
    machine = instance_id(core)
    tally = Tally()
    problems: list[str] = []
    skipped: list[str] = []
    told = 0  # the problems told so far: each in the order the machines come

    def tell_problems() -> None:
        # A problem's line is the record's line in its chunk; 0 (no line) for a manifest or
        # a whole chunk. It was a count of chunks, printed as "line 1: … line 3: …".
        nonlocal told
        for problem in problems[told:]:
            tally.error(0, f"manifest of {problem}")
        told = len(problems)

    with contextlib.ExitStack() as stack:
        for chunks in _iter_machines(root, stack, problems, skipped):
            tell_problems()
            listed = [c for c in chunks if c.machine != machine]
            _pull_chunks(core, ns, tally, listed)
    tell_problems()
    if skipped:
        tally.note(
            f"skipped {counted(len(skipped), 'folder')} not yours alone (another user's, or"
            f" others can write it): {'; '.join(skipped)}"
        )
    return tally.freeze(str(root))


def _pull_chunks(core: Core, ns: Namespaces, tally: Tally, listed: list[Chunk]) -> None:
    """Apply the chunks of ``listed`` (one machine's) not applied here yet, into ``tally``."""
    done = _seen_all(core, ns.chunks, [chunk.id for chunk in listed])
    for chunk in listed:
        source_machine, chunk_id = chunk.machine, chunk.id
        if chunk_id in done:
            continue
        applier = _SyncApplier(core, ns)
        try:
            _apply_chunk(core, ns, applier, chunk)
        except (OSError, EOFError, ValueError, InvalidInput) as exc:
            # Not marked as applied (rolled back): a later pull retries (e.g. after git
            # finishes), and stops at the same point.
            tally.error(0, f"chunk {source_machine}/{chunk_id[:12]}: {exc}")
            continue
        part = applier.tally
        tally.created += part.created
        tally.updated += part.updated
        tally.skipped += part.skipped
        tally.sessions += part.sessions
        tally.deleted += part.deleted
        for error in part.errors:
            tally.error(error.line, f"chunk {source_machine}/{chunk_id[:12]}: {error.message}")
        tally.errors_omitted += part.errors_omitted
        tally.bump("chunks")


def _apply_chunk(core: Core, ns: Namespaces, applier: _SyncApplier, chunk: Chunk) -> None:
    """Apply one chunk in one transaction, streamed; raises (and rolls back) when the
    chunk cannot be read or has more than MAX_BAD_RECORDS bad records."""
    store = core.store
    with store.transaction():
        for line, record in _chunk_records(chunk):
            if isinstance(record, dict) and record.get("record") == "header":
                check_header(record)  # a newer memlane's chunk waits, whole, for an upgrade
            applier.apply(line, record)
            if applier.tally.error_count > MAX_BAD_RECORDS:
                raise InvalidInput(
                    f"more than {MAX_BAD_RECORDS} bad records (the last: line {line});"
                    " not memlane's, skipped"
                )
            if isinstance(record, dict) and record.get("record") == "session":
                key = _session_key_if_current(core, record)
                if key is not None:
                    applier.session_versions.append(key)
        store.mark_seen(ns.version, [f"{i}@{v}" for i, v in applier.applied])
        store.mark_seen(ns.version, applier.session_versions)
        store.mark_seen(ns.have, [i for i, _v in applier.applied])
        store.mark_seen(ns.tomb, applier.tombstoned)
        store.mark_seen(ns.chunks, [chunk.id])


def _session_key_if_current(core: Core, record: dict[str, Any]) -> str | None:
    """The version key of a received session when ours now matches it (never pushed back).

    When our copy is newer, nothing is marked, so our activity is pushed.
    """
    session = core.store.get_session(str(record.get("id")))
    if session is None:
        return None
    try:
        incoming = parse_time(record.get("last_activity_at"), "last_activity_at")
    except InvalidInput:
        return None
    if session.last_activity_at != incoming:
        return None
    return f"session:{session.id}@{session.last_activity_at.isoformat()}"


def sync_status(core: Core, directory: str) -> dict[str, Any]:
    """Machines in a sync folder, their chunk counts, and how many are not applied here.

    ``problems``: machines whose manifest could not be read or used, or whose folder is
    not the user's alone, one line each.
    """
    root = _existing_folder(directory)
    ns = Namespaces(root)
    machine = instance_id(core)
    problems: list[str] = []
    skipped: list[str] = []
    with contextlib.ExitStack() as stack:
        listed = _iter_machines(root, stack, problems, skipped)
        chunks = [(c.machine, c.id) for machine_chunks in listed for c in machine_chunks]
    problems += [f"{folder}: not yours alone, not read" for folder in skipped]
    applied = _seen_all(core, ns.chunks, [chunk_id for _m, chunk_id in chunks])
    machines: dict[str, dict[str, int]] = {}
    for owner, chunk_id in chunks:
        entry = machines.setdefault(owner, {"chunks": 0, "pending": 0})
        entry["chunks"] += 1
        entry["pending"] += owner != machine and chunk_id not in applied
    return {"directory": str(root), "machine": machine, "machines": machines, "problems": problems}
