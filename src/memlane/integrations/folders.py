"""The folders setup creates, recorded so that uninstall removes them once they are empty.

Setup writes an agent's or an editor's file into a folder that may not exist yet (a
project's ``.kiro/hooks``, ``~/.codex``): :func:`make_dir` creates it (0700, as
:func:`memlane.paths.ensure_private_dir`) and records each folder it created, with its
device and inode, in ``setup-folders.json`` in memlane's data folder. After uninstall
deleted a file, :func:`remove_made` removes the file's folder when it is recorded, empty
and still of the inode recorded, then its parent on the same terms.

An inode is no name for ever: a folder deleted and made again (``rm -rf .kiro; mkdir -p
.kiro/hooks``) may get the same one. So a setup that finds a recorded folder already
there drops it from the record (unless that same run made it for an earlier file): it
did not create it this time, and cannot tell it from one the user made in its place.
After setup ran again for an agent, its folders stay at uninstall, as they did before
setup recorded anything. A folder memlane did not create is never removed, empty or not,
and neither is one whose record is lost (another ``MEMLANE_HOME``), not JSON, or not to
be trusted (a link, a file another user can write: one warning line, and the record is
neither read nor replaced).
"""

from __future__ import annotations

import functools
import json
import logging
import stat
from pathlib import Path

from memlane.errors import MemlaneError
from memlane.paths import make_private_dirs, read_private_text, state_paths, write_private_text

RECORD_NAME = "setup-folders.json"

log = logging.getLogger(__name__)


def make_dir(path: Path) -> None:
    """Create ``path`` and its missing parents, recording each folder created and
    forgetting each recorded one found already there (unless this process made it)."""
    record = _read()
    created = {}
    for folder in make_private_dirs(path):
        info = folder.lstat()
        created[str(folder.absolute())] = [info.st_dev, info.st_ino]
        _made_here.add((str(folder.absolute()), info.st_dev, info.st_ino))
    if record is None:  # not trusted: warned, and left as it is
        return
    known = dict(record)
    where = path.absolute()
    for key in map(str, (where, *where.parents)):
        made = record.get(key)
        if made is not None and (key, made[0], made[1]) not in _made_here:
            del record[key]
    record.update(created)
    if record != known:
        _write(record)


# The folders this process created (path, device, inode): a second file setup writes in
# one of them (Kiro's hooks, an editor's rules) finds it there, and it is still memlane's.
_made_here: set[tuple[str, int, int]] = set()


def remove_made(folder: Path) -> list[str]:
    """Remove ``folder``, then each parent, while it is a folder :func:`make_dir` created
    (the same inode) and empty; a message for the user for each one removed."""
    record = _read()
    if record is None:
        return []
    known = len(record)
    removed: list[Path] = []
    current = folder.absolute()
    while (made := record.get(key := str(current))) is not None:
        if not _same_folder(current, made):
            del record[key]  # gone, or another folder now: not memlane's to remove
            break
        try:
            current.rmdir()
        except OSError:  # not empty: something besides memlane's files is in it
            break
        del record[key]
        removed.append(current)
        current = current.parent
    if len(record) != known:
        _write(record)
    return [f"removed {path}: memlane created it and it is empty now" for path in removed]


def _same_folder(path: Path, made: list[int]) -> bool:
    """Whether ``path`` is still the folder recorded as ``made`` (a folder, not a link)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and [info.st_dev, info.st_ino] == made


def _record_path() -> Path:
    return state_paths().data_dir / RECORD_NAME


def _read() -> dict[str, list[int]] | None:
    """Folder path → [device, inode] of the folders setup created: {} when there is no
    record or it is not one (nothing is removed), None when it is not to be trusted (a
    link, a file another user can write: warned once, and neither read nor replaced)."""
    path = _record_path()
    try:
        data = json.loads(read_private_text(path))
    except (FileNotFoundError, ValueError):
        return {}
    except (MemlaneError, OSError) as exc:
        _warn(f"memlane: the record of the folders setup created is not used: {exc}")
        return None
    if not isinstance(data, dict):
        return {}
    return {
        path: made
        for path, made in data.items()
        if isinstance(made, list) and len(made) == 2 and all(type(n) is int for n in made)
    }


@functools.cache
def _warn(message: str) -> None:
    log.warning("%s", message)


def _write(record: dict[str, list[int]]) -> None:
    write_private_text(_record_path(), json.dumps(record, indent=1, sort_keys=True) + "\n")
