"""Where memlane keeps its state, and keeping it private.

``MEMLANE_HOME`` moves everything (database, config, logs, runtime files) under
one directory — what tests use. Otherwise the XDG base directories apply.
``MEMLANE_CONFIG`` (or the global ``--config`` option) names another config
file.

Rules, for every state directory and file:

* directories memlane creates are 0700 (each missing component, not only the
  last), files 0600;
* an existing state directory must belong to the user and be writable by no
  one else (:func:`check_state_dirs`): another user's directory, or one anyone
  can write, could hold a planted token, config or database, so memlane
  refuses it rather than trust or fill it;
* state files are opened without following symbolic links and must belong to
  the user (:func:`read_private_text`, :func:`ensure_private_file`); a mode is
  tightened only on a regular file of the user's, never through a link;
* writes go to a new 0600 file renamed over the target
  (:func:`write_private_text`), which must not be a link.

Violations raise :class:`UnsafePath` (a ConfigError: one line, exit 2).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memlane.errors import ConfigError, InvalidInput

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import BinaryIO, TextIO

# Open flags of the files memlane reads and writes: never through a link, never inherited
# by children.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# Open flags of a folder held by descriptor (its entries reached with ``dir_fd``); add
# NOFOLLOW where a link must not be followed.
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class StatePaths:
    data_dir: Path
    config_dir: Path
    log_dir: Path
    runtime_dir: Path
    config_file: Path | None = None  # named by MEMLANE_CONFIG or --config
    home_given: bool = False  # MEMLANE_HOME names the folders: the user's, not memlane's

    @property
    def db_path(self) -> Path:
        return self.data_dir / "memlane.db"

    @property
    def config_path(self) -> Path:
        return self.config_file or self.config_dir / "config.toml"

    @property
    def spool_dir(self) -> Path:
        """Where hooks keep the captures they could not store in time (memlane.hooks.spool)."""
        return self.data_dir / "spool"


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def state_paths(environ: Mapping[str, str] | None = None) -> StatePaths:
    """Resolve the state directories from the environment (read once per call)."""
    env = os.environ if environ is None else environ
    named = env.get("MEMLANE_CONFIG")
    config_file = Path(named).expanduser().absolute() if named else None
    home = env.get("MEMLANE_HOME")
    if home:
        root = Path(home).expanduser()
        return StatePaths(root, root, root / "logs", root / "run", config_file, home_given=True)
    data = _xdg(env, "XDG_DATA_HOME", ".local/share") / "memlane"
    config = _xdg(env, "XDG_CONFIG_HOME", ".config") / "memlane"
    state = _xdg(env, "XDG_STATE_HOME", ".local/state") / "memlane"
    return StatePaths(data, config, state / "logs", state / "run", config_file)


class UnsafePath(ConfigError):
    """A state directory or file that another user owns or can change, or a link."""


def _owner(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _check_owned(path: Path, info: os.stat_result, what: str, *, ours: bool = True) -> None:
    """Refuse ``path`` unless it is the user's and writable by no one else.

    ``ours``: a directory memlane made for the user, whose mode it may tell them to
    tighten. Any other folder (``/tmp``, a parent, a team's folder) is left as it is:
    a chmod there would break it for everyone else, so the advice is a folder of one's
    own; a sticky folder is shared by design, whatever the caller says.
    """
    me = os.geteuid()
    if info.st_uid != me:
        raise UnsafePath(
            f"{what} {path} belongs to {_owner(info.st_uid)}, not to you ({_owner(me)});"
            " memlane will not trust or write it: use a directory of your own (MEMLANE_HOME)"
            " or remove it"
        )
    if info.st_mode & 0o022:
        mode = stat.S_IMODE(info.st_mode)
        problem = f"{what} {path} can be written by other users (mode {mode:o}); memlane"
        if not stat.S_ISDIR(info.st_mode):
            raise UnsafePath(f"{problem} will not trust it: run `chmod 600 {path}`")
        if ours and not info.st_mode & stat.S_ISVTX:
            raise UnsafePath(f"{problem} will not trust it: run `chmod 700 {path}`")
        raise UnsafePath(
            f"{problem} keeps its state only in a directory of your own: set MEMLANE_HOME"
            " to a new one (memlane creates it, private); leave this folder's mode as it is"
        )


def check_private_dir(path: Path, *, ours: bool = False) -> None:
    """Refuse an existing ``path`` that is not a directory of the user's, private to them.

    ``path`` itself may be a link (a home moved elsewhere): its target is checked.
    ``ours``: a folder memlane makes itself (``logs``, ``run``, ``…/memlane``), which
    the error may tell the user to ``chmod``; never a folder they named.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{path} is not a directory; memlane keeps its state there")
    _check_owned(path, info, "the memlane directory", ours=ours)


def check_state_dirs(paths: StatePaths) -> None:
    """Refuse state directories another user owns or can write (those that exist).

    Only the XDG folders (``…/memlane`` and its ``logs`` and ``run``) are memlane's
    own, with a ``chmod`` in the advice: a MEMLANE_HOME, whatever its name, and a
    ``logs`` folder in it may be the user's or a team's from before."""
    seen: set[Path] = set()
    for directory in (paths.data_dir, paths.config_dir, paths.log_dir, paths.runtime_dir):
        if directory not in seen:
            seen.add(directory)
            check_private_dir(directory, ours=not paths.home_given)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` and each missing parent with mode 0700; an existing one is left as is.

    Every directory memlane creates goes through here, its state's and an agent's (a
    missing ``~/.claude``, a project's ``.cursor/rules``): under a umask of 000 a plain
    ``mkdir`` made them writable by every user, who could then replace the agent's
    settings with their own hook command.
    """
    make_private_dirs(path)
    return path


def make_private_dirs(path: Path) -> list[Path]:
    """:func:`ensure_private_dir`, returning the folders it created, outermost first.

    A folder it finds missing and then cannot make because it exists was made a moment
    ago: by another memlane process of the user's (kept), or, in a shared folder such as
    ``/tmp``, by another user, between the look and the ``mkdir`` (refused, UnsafePath,
    unless it is a directory of the user's that no one else can write)."""
    if path.is_dir():
        return []
    missing: list[Path] = []
    current = path
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    created: list[Path] = []
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            _check_made_meanwhile(directory)
            continue
        # mkdir's mode passes through the umask; 0700 is what the README promises.
        os.chmod(directory, 0o700)
        created.append(directory)
    return created


def _check_made_meanwhile(directory: Path) -> None:
    """Refuse a folder someone else made while memlane was making it (see above)."""
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(
            f"{directory} is a link or not a directory, made while memlane was creating the"
            f" folder; memlane will not use it: remove it (`rm {directory}`) and try again"
        )
    _check_owned(directory, info, "the folder", ours=False)


def ensure_state_dir(directory: Path, paths: StatePaths) -> Path:
    """:func:`ensure_private_dir` for one of ``paths``' state folders (or one in them),
    with :func:`check_state_dirs` again before and after: a state folder missing when the
    settings were read (a new MEMLANE_HOME in ``/tmp``) may since have been made by
    another user, and nothing is made in it."""
    check_state_dirs(paths)
    make_private_dirs(directory)
    check_state_dirs(paths)
    return directory


def _refuse_link(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(
            f"{path} is a symbolic link; memlane does not follow links for its files:"
            f" remove it (`rm {path}`) and try again"
        )
    if not stat.S_ISREG(info.st_mode):
        # Never "remove it": the path may be /dev/null, a FIFO or a folder of the user's.
        raise UnsafePath(
            f"{path} is not a regular file (a folder, a device or a FIFO); memlane reads and"
            " writes only regular files: give the path of one"
        )


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` (``~`` expanded, links followed) name one file; False when
    either cannot be resolved."""
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError):  # RuntimeError: a loop of links (Python 3.11)
        return False


def check_own_file(path: Path) -> None:
    """Refuse an existing ``path`` that is a link, not a regular file, not the user's or
    writable by others (UnsafePath); its mode is left alone. Missing: nothing to check."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    _refuse_link(path, info)
    _check_owned(path, info, "the file")


def ensure_private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if missing; tighten its mode if present.

    An existing file is never opened: closing any descriptor of a SQLite
    database drops every POSIX lock the process holds on it, which lets other
    processes write underneath an open connection and corrupts the file. It
    must be a regular file of the user's (not a link): its mode is changed only then.
    """
    try:
        info = path.lstat()
    except FileNotFoundError:
        ensure_private_dir(path.parent)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o600)
        except FileExistsError:  # created by another process a moment ago
            return ensure_private_file(path)
        os.close(fd)
        return path
    _refuse_link(path, info)
    _check_owned(path, info, "the file")
    if info.st_mode & 0o077:
        path.chmod(0o600)  # lstat said: a regular file, not a link
    return path


def read_private_text(path: Path) -> str:
    """The text of the state file ``path``, opened without following a link.

    It must be a regular file of the user's that no one else can write; a file
    others can read is tightened to 0600. Raises FileNotFoundError when missing,
    :class:`UnsafePath` otherwise.
    """
    fd = open_own_file(path)
    with os.fdopen(fd, "r", encoding="utf-8") as handle:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        return handle.read()


def _open_nofollow(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that refuses a link at ``path`` with UnsafePath (not a bare ELOOP)."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except FileNotFoundError:
        raise
    except OSError:
        with contextlib.suppress(OSError):
            _refuse_link(path, path.lstat())
        raise


def open_own_file(path: Path, flags: int = os.O_RDONLY) -> int:
    """A descriptor of ``path``, which must be a regular file of the user's that no one
    else can write (:class:`UnsafePath` otherwise; FileNotFoundError when missing, unless
    ``flags`` has ``O_CREAT``: then a new file is made 0600).

    Opened without following a link and without waiting: a FIFO there is refused, not
    waited on (a cache file that was a FIFO hung every search). A descriptor that may
    write also needs a file with one name: a hard link planted in a folder others could
    write would make a write land in a file elsewhere.
    """
    fd = _open_nofollow(path, flags | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        _refuse_link(path, info)
        _check_owned(path, info, "the file")
        if flags & os.O_ACCMODE != os.O_RDONLY and info.st_nlink != 1:
            raise UnsafePath(
                f"{path} has {info.st_nlink} names (hard links); memlane writes only a file"
                f" of its own: remove it (`rm {path}`) and try again"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def new_own_file(path: Path) -> int:
    """A descriptor writing a new, empty 0600 file at ``path``: whatever was there (a
    link, a file a crash left) is removed first (the entry itself, never a link's
    target), and the file is created exclusively, so nothing is written through a link."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)  # as asked, whatever the umask
    return fd


def tighten_own_dir(path: Path, *, follow_link: bool = False) -> bool:
    """Check an existing ``path`` for a cache memlane keeps its own files in: a directory
    (not a link, unless ``follow_link``: then the directory it leads to) of the user's; a
    mode that lets others in is tightened to 0700.

    Unlike :func:`check_private_dir`, which refuses a state directory others can write,
    this one is fixed: a cache's files are checked one by one before use
    (:func:`open_own_file`), so a file another user planted while it was open is
    refused, and the cache is rebuilt. Another user's directory, a link or a file
    there raises :class:`UnsafePath`, as does a directory that cannot be opened; a
    missing one is left to be created. True when the mode was tightened.
    """
    import errno

    flags = DIR_FLAGS | (0 if follow_link else NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePath(
                f"{path} is a symbolic link or not a directory; memlane keeps a cache there"
                f" only in a directory of its own: remove it (`rm {path}`)"
            ) from None
        raise UnsafePath(f"cannot open the cache directory {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise UnsafePath(
                f"the cache directory {path} belongs to {_owner(info.st_uid)}, not to you"
                f" ({_owner(os.geteuid())}); memlane will not read or write it: remove it"
            )
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o700)
            return True
        return False
    finally:
        os.close(fd)


def open_private_append(path: Path) -> int:
    """A descriptor appending to the log ``path`` (created 0600) by :func:`open_own_file`'s
    rule: never through a link, nor to anything but a regular file (opening a FIFO there
    waited for a reader forever: a hook never ended, not even by its last-resort exit,
    which logs first), nor to a file another user owns or can write, or one with another
    name (`serve --log-file /tmp/x.log`, where another user made x.log 0666)."""
    ensure_private_dir(path.parent)
    return open_own_file(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND)


class MissingFolder(InvalidInput):
    """The folder a file was to be written in does not exist (and was not to be made)."""


def output_folder(path: Path, what: str, *, create: bool = False) -> Path:
    """The folder of ``path``, the file ``what`` ("the backup") a command writes, which
    must exist: a typo must not put the file in a new folder nobody looks in. Missing:
    :class:`MissingFolder`, unless ``create`` (the caller makes it), which needs the
    folder's parent to exist; not a directory: InvalidInput."""
    folder = path.expanduser().absolute().parent
    if folder.is_dir():
        return folder
    where = f"the folder {folder} of {what} {path}"
    if folder.exists():
        raise InvalidInput(f"{where} is not a directory")
    if not create:
        raise MissingFolder(f"{where} does not exist")
    if not folder.parent.is_dir():
        raise InvalidInput(f"cannot create {where}: {folder.parent} does not exist either")
    return folder


def check_output_target(path: Path, dir_fd: int | None = None) -> None:
    """Refuse to replace ``path`` when it is a link or not a regular file (its name looked
    up in the folder ``dir_fd`` when given)."""
    with contextlib.suppress(FileNotFoundError):
        name = path if dir_fd is None else path.name
        _refuse_link(path, os.stat(name, dir_fd=dir_fd, follow_symlinks=False))


def _private_group(gid: int) -> bool:
    """Whether ``gid`` is the user's own group with no one else in it (Debian's user private
    groups: under their umask 002 every folder a user makes is group-writable)."""
    import grp
    import pwd

    try:
        me = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return gid == me.pw_gid and group.gr_name == me.pw_name and set(group.gr_mem) <= {me.pw_name}


def others_can_write(info: os.stat_result) -> bool:
    """Whether a user other than the owner (and root) can write the folder or file
    ``info``: it is writable by all, or by a group that is not the user's private one."""
    if info.st_mode & 0o002:
        return True
    return bool(info.st_mode & 0o020) and not _private_group(info.st_gid)


def folder_info_problem(info: os.stat_result) -> str | None:
    """Why the folder ``info`` describes (``lstat`` or ``fstat``) is not the user's alone
    (None when it is): a link or not a directory, another user's, or one others can write.
    Such a folder's files can be swapped by someone else between a check and a use."""
    if not stat.S_ISDIR(info.st_mode):
        return "is a link or not a directory"
    if info.st_uid != os.geteuid():
        return f"belongs to {_owner(info.st_uid)}, not to you"
    if others_can_write(info):
        return f"can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def check_names_fixed(folder: Path) -> None:
    """Refuse (UnsafePath) to write by name under ``folder`` when another user could rename
    a folder on its way: one of the folders from ``/`` to it belongs to someone but the user
    or root, or others can write it and it is not sticky. SQLite opens its files (and
    journals) by name: in such a place a folder swapped for a link sends them elsewhere."""
    resolved = folder.resolve()
    me = os.geteuid()
    for step in (resolved, *resolved.parents):
        info = step.stat()
        if info.st_uid not in (me, 0):
            why = f"belongs to {_owner(info.st_uid)}"
        elif others_can_write(info) and not info.st_mode & stat.S_ISVTX:
            why = f"can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
        else:
            continue
        raise UnsafePath(
            f"{step} {why}: another user could swap a folder there for a link while memlane"
            f" writes a database in {folder}; use a folder of your own"
        )


class Staging:
    """A new 0700 folder of the user's inside the folder of ``dest``, where ``dest`` is
    written before it is renamed into place: every file memlane writes whole (a backup,
    a sync chunk, an export, a state or an agent's file) goes through one.

    No other user can create, rename or replace anything inside it, so a file written
    there stays the one written (a temporary file in a shared folder was swapped for a
    link between its creation and its use). The folder and the staging folder are held
    by descriptors: the new file is created in it exclusively, never through a link, and
    renamed from it by descriptor (:meth:`publish`), which is safe in any folder the user
    can write. SQLite, which opens files by name, writes there only when no one else can
    rename a folder on the way (:meth:`sqlite_path`). Leaving the block removes the
    staging folder and what is left in it; one a killed process left is removed by the
    next Staging in that folder (:func:`remove_orphaned_temps`).
    """

    def __init__(self, dest: Path, folder_fd: int | None = None) -> None:
        """``folder_fd``: the folder of ``dest`` already open (and checked), used as is."""
        self.dest = dest
        self.folder = dest.parent
        if folder_fd is None:
            ensure_private_dir(self.folder)
            self._folder_fd = os.open(self.folder, DIR_FLAGS)
        else:
            self._folder_fd = os.dup(folder_fd)
        try:
            _remove_orphans_in(self._folder_fd, dest.name)
            self.name = f".{dest.name}.{os.getpid()}.{os.urandom(6).hex()}.stage"
            os.mkdir(self.name, 0o700, dir_fd=self._folder_fd)
            try:
                self._fd = _open_own_subfolder(self._folder_fd, self.name, self.folder)
            except BaseException:
                with contextlib.suppress(OSError):  # empty, or not the one made: kept
                    os.rmdir(self.name, dir_fd=self._folder_fd)
                raise
        except BaseException:
            os.close(self._folder_fd)
            raise

    def sqlite_path(self) -> Path:
        """The path of the staged file, made empty and 0600 (SQLite gives its journals
        the mode of the database), for SQLite: :func:`check_names_fixed` first."""
        check_names_fixed(self.folder)
        os.close(self.new_file())
        return self.folder / self.name / self.dest.name

    def new_file(self, mode: int = 0o600) -> int:
        """A descriptor writing the staged file, new and of ``mode`` (created exclusively)."""
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW
        fd = os.open(self.dest.name, flags, mode, dir_fd=self._fd)
        os.fchmod(fd, mode)  # as asked, whatever the umask
        return fd

    def read_file(self) -> int:
        """A descriptor reading the staged file."""
        return os.open(self.dest.name, os.O_RDONLY | NOFOLLOW, dir_fd=self._fd)

    def clear(self) -> None:
        """Remove what was written in the staging folder (a failed attempt)."""
        for entry in os.listdir(self._fd):
            os.unlink(entry, dir_fd=self._fd)  # only the user's files can be there

    def publish(self, final: Path | None = None) -> None:
        """Rename the staged file to ``final`` (default ``dest``), in the same folder."""
        target = self.dest if final is None else final
        if target.parent != self.folder:
            raise ValueError(f"{target} is not in {self.folder}")
        os.replace(self.dest.name, target.name, src_dir_fd=self._fd, dst_dir_fd=self._folder_fd)

    def close(self) -> None:
        try:
            self.clear()
            mine = os.fstat(self._fd)
            with contextlib.suppress(OSError):
                there = os.stat(self.name, dir_fd=self._folder_fd, follow_symlinks=False)
                if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
                    os.rmdir(self.name, dir_fd=self._folder_fd)
        finally:
            os.close(self._fd)
            os.close(self._folder_fd)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_own_subfolder(folder_fd: int, name: str, folder: Path) -> int:
    """A descriptor of the new folder ``name`` in ``folder_fd`` (``folder``): a directory
    of the user's, 0700 and empty (UnsafePath otherwise), never reached through a link."""
    fd = os.open(name, DIR_FLAGS | NOFOLLOW, dir_fd=folder_fd)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            # NFS with root_squash: root's mkdir makes a folder of nobody's.
            raise UnsafePath(
                f"a folder memlane made in {folder} belongs to {_owner(info.st_uid)}, not to"
                f" you ({_owner(os.geteuid())}), as on a network drive that maps root to"
                " nobody: memlane writes there only through a folder of its own; use a"
                " folder on a local disk"
            )
        if os.listdir(fd):
            raise UnsafePath(f"the staging folder {name} was replaced while memlane wrote it")
        os.fchmod(fd, 0o700)  # mkdir's mode passes through the umask
    except BaseException:
        os.close(fd)
        raise
    return fd


# What SQLite may keep beside a database file (a temporary copy is one).
_SQLITE_BESIDE = ("-journal", "-wal", "-shm")


def remove_temp(tmp: Path) -> None:
    """Remove a temporary file and the journal files SQLite may have left beside it."""
    for suffix in ("", *_SQLITE_BESIDE):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{tmp}{suffix}")


def remove_orphaned_temps(folder: Path) -> None:
    """Remove what a process now gone left in ``folder`` while it wrote a file: every
    staging folder ``.<file>.<pid>.<random>.stage`` of the user's (:class:`Staging`; a
    killed backup's holds a full copy of the memories), with what is in it, and the
    ``.<name>.<pid>.tmp`` files earlier versions wrote with the journal files SQLite kept
    beside one. A write of a process still running is in progress, however old: kept."""
    try:
        fd = os.open(folder, DIR_FLAGS)
    except OSError:
        return
    try:
        _remove_orphans_in(fd, "")
    finally:
        os.close(fd)


def _remove_orphans_in(folder_fd: int, name: str) -> None:
    """:func:`remove_orphaned_temps` in the folder open as ``folder_fd``."""
    kinds = ("tmp", *(f"tmp{s}" for s in _SQLITE_BESIDE))
    try:
        entries = os.listdir(folder_fd)
    except OSError:
        return
    for entry in entries:
        head, dot, kind = entry.rpartition(".")
        if kind == "stage":
            head, _dot, random = head.rpartition(".")
            if len(random) != 12 or not all(c in "0123456789abcdef" for c in random):
                continue
        target, dot_pid, pid = head.rpartition(".")
        if not (dot and dot_pid and kind in (*kinds, "stage") and pid.isdigit()):
            continue
        if not target.startswith(".") or (name and kind != "stage" and target != f".{name}"):
            continue
        if int(pid) != os.getpid() and not _running(int(pid)):
            with contextlib.suppress(OSError):
                if kind == "stage":
                    _remove_staging(folder_fd, entry)
                else:
                    os.unlink(entry, dir_fd=folder_fd)  # a link itself, never its target


def _remove_staging(parent: int, name: str) -> None:
    """Remove the staging folder ``name`` of the folder ``parent`` and its files when it
    is the user's (a link or anyone else's folder is left alone)."""
    fd = os.open(name, DIR_FLAGS | NOFOLLOW, dir_fd=parent)
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return
        for inner in os.listdir(fd):
            os.unlink(inner, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or a number no pid can be
        return False
    except PermissionError:
        return True  # another user's process holds the number now
    return True


def open_regular_file(path: Path) -> BinaryIO | None:
    """``path`` open for reading (binary), None when it is missing. A link, a FIFO, a
    device or a directory there is refused (UnsafePath), not followed or waited on: a
    file of a project's checkout may be any of these (an agent's settings, an editor's
    rules, git's ``HEAD``, a JSONL store's ``lessons.jsonl``)."""
    try:
        fd = _open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        _refuse_link(path, os.fstat(fd))  # before fdopen, which names a folder by its fd
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular_file(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of ``path`` (its first ``limit`` when given), None when it is missing;
    anything but a regular file is refused (:func:`open_regular_file`)."""
    handle = open_regular_file(path)
    if handle is None:
        return None
    with handle:
        return handle.read(-1 if limit is None else limit)


def replace_file(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a new file of ``mode`` renamed over ``path`` (:func:`_replacing`):
    for files outside memlane's state, an agent's settings or an editor's rules in a
    project, which are never written through a link."""
    with _replacing(path, mode) as handle:
        handle.write(data)


@contextlib.contextmanager
def _replacing(path: Path, mode: int) -> Iterator[BinaryIO]:
    """A new file of ``mode`` that replaces ``path`` when the block ends without error:
    a link or anything but a regular file at ``path`` is refused (UnsafePath), the new
    file is written in a :class:`Staging` folder beside it, and on error ``path`` is
    untouched."""
    check_output_target(path)
    with Staging(path) as stage:
        with os.fdopen(stage.new_file(mode), "wb") as handle:
            yield handle
        stage.publish()


def refuse_shared_folder(path: Path) -> None:
    """Refuse (UnsafePath) to write ``path`` when the folder that holds it (the nearest
    existing one: memlane creates the rest, 0700) belongs to another user who, or whose
    group, can write it: they could rename a file of theirs over an agent's hook, which
    the agent then runs as the user. A folder of the user's own is their choice."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    info = folder.stat()
    if info.st_uid != os.geteuid() and info.st_mode & 0o022:
        raise UnsafePath(
            f"{folder} belongs to {_owner(info.st_uid)} and others can write it (mode"
            f" {stat.S_IMODE(info.st_mode):o}): memlane will not put {path.name} there,"
            " which an agent runs as you; use a folder of your own"
        )


def refuse_links_below(root: Path, path: Path) -> None:
    """Refuse (UnsafePath) ``path`` when a folder between ``root`` and it is a link: a
    project's files are written inside the project, not where a link in it points."""
    folder = path.parent
    while folder != root and root in folder.parents:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(folder.lstat().st_mode):
                raise UnsafePath(
                    f"{folder} is a symbolic link; memlane writes {path.name} only inside"
                    f" {root}: remove the link (`rm {folder}`) and try again"
                )
        folder = folder.parent


@contextlib.contextmanager
def replace_privately(path: Path) -> Iterator[TextIO]:
    """Write a new 0600 file that replaces ``path`` when the block ends without error.

    The target must be a regular file or missing (a link or a device is refused);
    its old mode, owner and link are not kept. On error the target is untouched.
    """
    with _replacing(path, 0o600) as handle, io.TextIOWrapper(handle, encoding="utf-8") as out:
        yield out


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` atomically to a new 0600 file renamed over ``path`` (not a link)."""
    with replace_privately(path) as out:
        out.write(text)
