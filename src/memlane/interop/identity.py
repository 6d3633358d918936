"""Identity of a memory across databases and machines.

A memory's local id is only meaningful inside one database. Export, import and
sync need a name that survives the trip, so every memory has an *identity*:

* ``uid:<instance>:<id>`` for a memory born in this database (no ``source_id``):
  the instance id of the database that created it plus its id there;
* the same ``uid:…`` string, kept verbatim as ``source_id``, for a copy of such a
  memory received from another database (so a second import finds it);
* ``src:["project", "source", "source_id"]`` for a memory that came from an
  outside tool (claude-mem, a JSONL store…), whose own key is already global.

The instance id is a random name kept in ``machine-id`` under memlane's data
directory (0600), suffixed with a short hash of the database location when
the database is not the default one, so two databases on one machine never
share ids. It names the machine's folder in a sync directory too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.interop import decode
from memlane.models import Memory as MemoryRecord
from memlane.paths import check_private_dir, ensure_private_dir

if TYPE_CHECKING:
    from memlane.core import Core
    from memlane.store.base import Store

UID = "uid:"
SRC = "src:"
MACHINE_FILE = "machine-id"
_VALID_MACHINE = re.compile(r"^[a-z0-9][a-z0-9.-]{3,63}$")


def is_machine_id(name: str) -> bool:
    """True when ``name`` has the form of an instance id (a sync folder's machine name)."""
    return _VALID_MACHINE.match(name) is not None


def machine_id(data_dir: Path) -> str:
    """This machine's stable random id, created on first use (0600, race-safe)."""
    path = data_dir / MACHINE_FILE
    with contextlib.suppress(FileNotFoundError):
        text = path.read_text(encoding="utf-8").strip()
        if _VALID_MACHINE.match(text):
            return text
    ensure_private_dir(data_dir)
    check_private_dir(data_dir)  # missing when the settings were read: whose is it now?
    candidate = secrets.token_hex(6)
    tmp = path.with_name(f".{MACHINE_FILE}.{os.getpid()}.{candidate}")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(candidate + "\n")
    try:
        # link() fails when another process created the file first: theirs wins.
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    text = path.read_text(encoding="utf-8").strip()
    if not _VALID_MACHINE.match(text):
        raise ValueError(f"{path} does not hold a machine id; delete it to create a new one")
    return text


def instance_id(core: Core) -> str:
    """The id of this database: the machine id (+ a location hash if it is not the default)."""
    default = core.store.same_database(core.settings.paths.db_path)
    return instance_for(core.settings.paths.data_dir, core.store.location, default=default)


def instance_for(data_dir: Path, location: str, *, default: bool) -> str:
    """The instance id of the database at ``location`` (:func:`instance_id`), also for a
    file no store can open (a salvage names its memories as their own database did)."""
    base = machine_id(data_dir)
    if default:
        return base
    digest = hashlib.sha256(location.encode("utf-8")).hexdigest()[:6]
    return f"{base}.{digest}"


def identity_of(memory: MemoryRecord, instance: str) -> str:
    """The identity string of a stored memory (see the module docstring)."""
    if memory.source_id is None:
        return f"{UID}{instance}:{memory.id}"
    if memory.source_id.startswith(UID):
        return memory.source_id
    return source_identity(memory.project, memory.source, memory.source_id)


def source_identity(project: str, source: str, source_id: str) -> str:
    return SRC + json.dumps([project, source, source_id], ensure_ascii=False)


def parse_uid(identity: str) -> tuple[str, int] | None:
    """(instance, id) of a ``uid:`` identity, or None."""
    if not identity.startswith(UID):
        return None
    instance, _, number = identity[len(UID) :].rpartition(":")
    if not instance or not number.isdigit():
        return None
    return instance, int(number)


def parse_source(identity: str) -> tuple[str, str, str] | None:
    """(project, source, source_id) of a ``src:`` identity, or None."""
    if not identity.startswith(SRC):
        return None
    try:
        value = decode.loads(identity[len(SRC) :])
    except json.JSONDecodeError:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 3
        or not all(isinstance(part, str) for part in value)
    ):
        return None
    return value[0], value[1], value[2]


def valid_identity(identity: str) -> bool:
    return parse_uid(identity) is not None or parse_source(identity) is not None


def find_by_identity(
    store: Store, identity: str, *, project: str, source: str, instance: str
) -> MemoryRecord | None:
    """The local memory carrying ``identity`` (a copy or the original), or None.

    ``project`` is where the copy lives (the record's project, or the project an
    import was told to use); ``source`` is the record's source.
    """
    uid = parse_uid(identity)
    if uid is not None:
        origin, number = uid
        if origin == instance:
            found = store.get_memories([number])
            if found and found[0].source_id is None and found[0].project == project:
                return found[0]
        return store.find_memory(project, source=source, source_id=identity)
    parsed = parse_source(identity)
    if parsed is None:
        return None
    _origin_project, own_source, source_id = parsed
    return store.find_memory(project, source=own_source, source_id=source_id)
