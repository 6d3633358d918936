"""The folders setup creates, recorded so that uninstall removes them once they are empty.

Setup writes an agent's or an editor's file into a folder that may not exist yet (a
project's ``.kiro/hooks``, ``~/.codex``): :func:`make_dir` creates it (0700, as
:func:`memlane.paths.ensure_private_dir`) and records each folder it created, with its
device and inode, in ``setup-folders.json`` in memlane's data folder. After uninstall
deleted a file, :func:`remove_made` removes the file's folder when it is empty and still
the folder recorded (one of that name made since, by the user, is another inode), then
its parent on the same terms. A folder memlane did not create is never removed, empty or
not, and neither is one whose record is lost (another ``MEMLANE_HOME``, a record that is
not JSON): those stay, as they did before setup recorded anything.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

from memlane.paths import make_private_dirs, read_private_text, state_paths, write_private_text

RECORD_NAME = "setup-folders.json"


def make_dir(path: Path) -> None:
    """Create ``path`` and its missing parents, recording each folder created."""
    created = make_private_dirs(path)
    if not created:
        return
    record = _read()
    for folder in created:
        info = folder.lstat()
        record[str(folder.absolute())] = [info.st_dev, info.st_ino]
    _write(record)


def remove_made(folder: Path) -> list[str]:
    """Remove ``folder``, then each parent, while it is a folder :func:`make_dir` created
    (the same inode) and empty; a message for the user for each one removed."""
    record = _read()
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


def _read() -> dict[str, list[int]]:
    """Folder path → [device, inode] of the folders setup created; {} when there is no
    record or it is not one (then nothing is removed)."""
    try:
        data = json.loads(read_private_text(_record_path()))
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        path: made
        for path, made in data.items()
        if isinstance(made, list) and len(made) == 2 and all(type(n) is int for n in made)
    }


def _write(record: dict[str, list[int]]) -> None:
    write_private_text(_record_path(), json.dumps(record, indent=1, sort_keys=True) + "\n")
