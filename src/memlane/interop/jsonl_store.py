"""Import a project memory store kept as JSONL files.

Some agents keep their project memory as append-only JSONL files in a folder:
``agent-notes.jsonl``, ``lessons.jsonl``, ``decisions.jsonl`` and
``postmortems.jsonl`` become memories of type note, lesson, decision and
postmortem (any other ``*.jsonl`` there imports as notes). Each line is one
JSON object; its text is the first of ``text``, ``content``, ``note``,
``body``, ``description``, ``lesson``, ``decision``, ``details``,
``message``; key facts come from ``summary``, ``decisions`` and ``outcomes``
(strings or lists) and are appended under "Key facts" and kept in
``metadata.key_facts``; every other field is kept in metadata.

Incremental: a line is known by its file name and the SHA-256 of its text, and
the lines imported into a project are remembered for that project, so only
lines it has not seen are imported, and never again one whose memory was
deleted. A line whose ``id`` (a non-empty string or an integer; ``1`` is ``"1"``)
no other line of its file gives is the memory ``<file>#<id>``
(:func:`memlane.interop.jsonl.file_source_id`): the line edited updates that
memory in place. Any other line is known by its hash alone (an append-only store
repeats ids; an id that is an object or holds a control character is no name),
its id kept in metadata. Bad lines are reported with their file and number; good
lines in the same batch still import, each batch in one transaction together
with its seen keys.

Before lines were remembered per project (and a line with an ``id`` was
known by its hash), the lines seen were one set for the whole database
(:data:`SEEN_NAMESPACE`); :func:`_write` still reads it (:func:`_seen_before`): a
line seen there is imported into a project only when another project holds its
memory (it was that project's line, not one deleted or kept here), and a memory
keyed by the hash of a line with an ``id`` is renamed to its id's key.

Vectors: a JSON file in the directory whose name contains ``index`` (the
semantic-memory tool keeps its index there) lends its embeddings to the lines
imported now whose text is an entry's text — when they come from the model
memlane searches with (:mod:`memlane.interop.index_vectors`). Lines without
one are embedded later, like any new memory.

Links: a store file or index there that is a link is not read (a note says it
was skipped), as ``memlane recover`` reads no link to a file: a store folder
in a cloned repository could link ``lessons.jsonl`` to another project's
transcript, or to ``/proc/self/environ``. Files are opened without following
a link (:func:`memlane.paths.open_regular_file`).
"""

from __future__ import annotations

import hashlib
import json
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlane import memories
from memlane.errors import InvalidInput
from memlane.interop import decode
from memlane.interop.index_file import IndexFile, embedding, read_index
from memlane.interop.jsonl import (
    STORE_FACT_FIELDS,
    STORE_TEXT_FIELDS,
    check_metadata,
    file_source_id,
    opt_str,
    parse_time,
)
from memlane.interop.report import InteropReport, Tally
from memlane.jsonlines import BadLine, numbered_lines
from memlane.memories import Draft
from memlane.models import JSONL_STORE_SOURCE, TYPES
from memlane.paths import UnsafePath, open_regular_file
from memlane.project import project_name

if TYPE_CHECKING:
    from memlane.core import Core

SOURCE = JSONL_STORE_SOURCE
SEEN_NAMESPACE = "jsonl-store"
BATCH = 500
FILE_TYPES = {
    "agent-notes.jsonl": "note",
    "lessons.jsonl": "lesson",
    "decisions.jsonl": "decision",
    "postmortems.jsonl": "postmortem",
}
TEXT_FIELDS = ("text", "content", *STORE_TEXT_FIELDS)
FACT_FIELDS = STORE_FACT_FIELDS
TIME_FIELDS = ("timestamp", "created_at", "created", "date", "ts", "time")
# Fields that name or place a line rather than say something: never appended to its text.
NOT_TEXT_FIELDS = frozenset({"id", "uuid", "type", "kind", "project", "source", "updated_at"})


@dataclass(frozen=True, slots=True)
class StoreLine:
    """One line of a store file: its seen key, where it stands, and its draft."""

    key: str  # the file and the SHA-256 of the line: what the import remembers
    file: str
    line: int
    text: str  # the line's own text, before key facts are appended
    draft: Draft  # keyed by ``key``; :func:`_keyed` keys it by its id
    record_id: str | None = None  # :func:`line_id`


def line_id(record: dict[str, Any]) -> str | None:
    """The ``id`` of a line that may key its memory: a non-empty string or an integer's
    digits (``1`` and ``"1"`` are one id); None for any other value (an object, ``true``,
    ``1.5``), which stays in the line's metadata only."""
    value = record.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value)
    return text if text.strip() else None


def file_ids(path: Path) -> set[str]:
    """The ids (:func:`line_id`) that exactly one line of the store file ``path`` gives;
    empty when it cannot be read (it is then skipped with a note)."""
    counts: dict[str, int] = {}
    try:
        opened = open_regular_file(path)
    except (UnsafePath, OSError):
        return set()
    if opened is None:
        return set()
    with opened as handle:
        for _number, line in numbered_lines(handle):
            if isinstance(line, BadLine) or '"id"' not in line:
                continue
            try:
                record = decode.loads(line)
            except json.JSONDecodeError:
                continue
            found = line_id(record) if isinstance(record, dict) else None
            if found is not None:
                counts[found] = counts.get(found, 0) + 1
    return {found for found, count in counts.items() if count == 1}


def _keyed(core: Core, item: StoreLine, unique: set[str]) -> StoreLine:
    """``item`` keyed by its id when no other line of its file gives that id and the key
    is a plain name (no control character, no secret, :meth:`Core.plain_name`);
    ``unique`` loses the id, so a line appended since :func:`file_ids` read the file
    cannot take the key over."""
    if item.record_id is None or item.record_id not in unique:
        return item
    unique.discard(item.record_id)
    try:
        key = core.plain_name("source id", file_source_id(item.file, item.record_id))
    except InvalidInput:
        return item
    return replace(item, draft=replace(item.draft, source_id=key))


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if isinstance(item, str):
                if item.strip():
                    out.append(item.strip())
            elif isinstance(item, dict):
                # e.g. {"decision": "...", "why": "..."}: keep it readable.
                out.append("; ".join(f"{k}: {v}" for k, v in item.items()))
            else:
                out.append(str(item))
        return out
    raise InvalidInput(f"{name!r} must be text or a list")


def parse_line(file: str, number: int, line: str, type_: str, project: str) -> StoreLine:
    """Validate one line of a store file (raises InvalidInput naming the problem)."""
    try:
        record = decode.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise InvalidInput("a line must be a JSON object")
    text = ""
    used: set[str] = set()
    for name in TEXT_FIELDS:
        value = record.get(name)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            used.add(name)
            break
    facts: list[str] = []
    for name in FACT_FIELDS:
        if name in record:
            facts.extend(f for f in _strings(record[name], name) if f != text)
            used.add(name)
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        raise InvalidInput("'title' must be text")
    if not text and not facts:
        if isinstance(title, str) and title.strip():
            text = title.strip()
        else:
            raise InvalidInput(
                "no text: give one of " + ", ".join(TEXT_FIELDS + FACT_FIELDS[:1]) + " or title"
            )
    content = text
    if facts:
        bullet_list = "\n".join(f"- {fact}" for fact in facts)
        content = f"{text}\n\nKey facts:\n{bullet_list}" if text else bullet_list
    created = None
    for name in TIME_FIELDS:
        if record.get(name) is not None:
            created = parse_time(record[name], name)
            used.add(name)
            break
    details = _details(record, used)
    if details:
        content = f"{content}\n\n" + "\n".join(details)
    type_ = _own_type(record, type_, used)
    tags_value = record.get("tags")
    if isinstance(tags_value, str):
        tags_value = [t.strip() for t in tags_value.split(",") if t.strip()]
    tags = tuple(_strings(tags_value, "tags"))
    files = tuple(_strings(record.get("files"), "files"))
    session = opt_str(record, "session", "session_id")  # as `import jsonl` takes it
    used.update({"title", "tags", "files", "session", "session_id", "metadata"})
    metadata = {k: v for k, v in record.items() if k not in used}
    own = record.get("metadata")
    if isinstance(own, dict):
        metadata.update(own)  # the line's own metadata, not nested one level down
    elif own is not None:
        metadata["metadata"] = own
    metadata["store_file"] = file
    if facts:
        metadata["key_facts"] = facts
    check_metadata(metadata)
    digest = hashlib.sha256(line.strip().encode("utf-8")).hexdigest()
    key = f"{file}:{digest}"
    draft = Draft(
        content,
        project=project,
        type=type_,
        title=title.strip() if isinstance(title, str) and title.strip() else None,
        session_id=session or None,
        source=SOURCE,
        source_id=key,
        created_at=created,
        files=files,
        tags=tags,
        metadata=metadata,
    )
    return StoreLine(key, file, number, text, draft, line_id(record))


def _details(record: dict[str, Any], used: set[str]) -> list[str]:
    """The line's other text fields (a postmortem's ``root_cause``, a decision's
    ``alternatives``), one line each, ``Root cause: …``, to append to its text: search
    finds them, and ``get`` and exports show them. They stay in metadata too."""
    lines: list[str] = []
    for name, value in record.items():
        if name in used or name in NOT_TEXT_FIELDS or name in TIME_FIELDS:
            continue
        if name in ("title", "tags", "files", "session", "session_id", "metadata"):
            continue
        if not isinstance(value, str | list):
            continue
        parts = _strings(value, name)
        if parts:
            label = name.replace("_", " ").replace("-", " ").strip().capitalize() or name
            lines.append(f"{label}: {'; '.join(parts)}")
    return lines


def _own_type(record: dict[str, Any], file_type: str, used: set[str]) -> str:
    """The line's ``type`` when it is one of memlane's (a ``constraint`` in
    ``decisions.jsonl``), else its file's; another value stays in ``metadata.type``."""
    value = record.get("type")
    if isinstance(value, str) and value.strip().lower() in TYPES:
        used.add("type")
        return value.strip().lower()
    return file_type


def _kind(path: Path) -> str:
    """What ``path`` itself is, a link not followed: "file", "link", "folder", "other" (a
    FIFO, a device), or "" (missing)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return ""
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "other"


def store_files(directory: Path) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    """The JSONL files of a store and the type each one's lines get (known files first),
    and the names not read among them with their :func:`_kind`: a link (a store folder in
    a cloned repository could link ``lessons.jsonl`` to a file anywhere, another project's
    transcript or ``/proc/self/environ``, as ``memlane recover`` does not read a link to a
    file), a folder, a FIFO (reading one waits for a writer) or a device."""
    names = [*FILE_TYPES, *sorted(p.name for p in directory.glob("*.jsonl"))]
    files: list[tuple[Path, str]] = []
    skipped: list[tuple[Path, str]] = []
    for name in dict.fromkeys(names):  # known files first, each once
        path = directory / name
        kind = _kind(path)
        if kind == "file":
            files.append((path, FILE_TYPES.get(name, "note")))
        elif kind:
            skipped.append((path, kind))
    return files, skipped


def _skip_note(path: Path, kind: str) -> str:
    """Why ``path`` of :func:`_kind` ``kind`` (see :func:`store_files`) was not read."""
    if kind == "link":
        return _link_note(path)
    what = "a folder" if kind == "folder" else "not a regular file (a FIFO or a device)"
    return f"{path.name} skipped: it is {what}; not read"


def _link_note(path: Path) -> str:
    return f"{path.name} skipped: it is a link (a link to a file is not read)"


class IndexVectors:
    """The embeddings of a store's index files, by entry text, under the model to keep."""

    def __init__(self, model: str | None, by_text: dict[str, bytes]) -> None:
        self.model = model
        self.by_text = by_text

    def attach(self, core: Core, memory_id: int, item: StoreLine) -> bool:
        """Store the vector of ``item``'s text for ``memory_id``; False when there is none."""
        if self.model is None:
            return False
        vector = self.by_text.get(item.text) if item.text else None
        vector = vector or self.by_text.get(item.draft.content.strip())
        if vector is None:
            return False
        core.store.put_embeddings(self.model, len(vector) // 4, [(memory_id, vector)])
        return True


def index_vectors(core: Core, root: Path, tally: Tally, *, with_vectors: bool) -> IndexVectors:
    """The usable vectors of the index files in ``root``; notes say what was left out."""
    model: str | None = None
    by_text: dict[str, bytes] = {}
    for path in sorted(root.glob("*index*.json")):
        try:
            index = read_index(
                path,
                embedder=core.settings.embedder,
                with_vectors=with_vectors,
                follow_links=False,
            )
        except UnsafePath:
            tally.note(_link_note(path) if _kind(path) == "link" else f"{path.name} skipped")
            continue
        except OSError as exc:  # unreadable (another user's file): as good as invalid
            tally.note(f"{path.name} skipped: {exc.strerror or exc}")
            continue
        except InvalidInput as exc:
            tally.note(f"{path.name} skipped: {exc}")
            continue
        if index.plan.note:
            tally.note(f"{path.name}: {index.plan.note}")
        if index.plan.model is None or model not in (None, index.plan.model):
            continue
        model = index.plan.model
        try:
            _lend(index, by_text)
        except (InvalidInput, OSError, UnsafePath) as exc:
            tally.note(f"{path.name}: {exc}")
    return IndexVectors(model, by_text)


def _lend(index: IndexFile, by_text: dict[str, bytes]) -> None:
    """Add the vectors of ``index``'s entries to ``by_text``, by their text."""
    for entry in index.entries():
        text = entry.get("text") if isinstance(entry, dict) else None
        if not isinstance(text, str) or not text.strip():
            continue
        try:
            vector = embedding(entry.get("embedding"), index.dim)
        except InvalidInput:
            continue  # a bad entry lends nothing; its line is embedded later
        if vector is not None:
            by_text.setdefault(text.strip(), vector)


def import_jsonl_store(
    core: Core, directory: str, *, project: str | None = None, with_vectors: bool = True
) -> InteropReport:
    """Import the lines of ``directory``'s JSONL files not imported before."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise InvalidInput(f"no such directory: {directory}")
    files, skipped = store_files(root)
    if not files:
        links = [p.name for p, kind in skipped if kind == "link"]
        others = [p.name for p, kind in skipped if kind != "link"]
        unread = "".join(
            f" ({', '.join(names)}: {what}, not read)"
            for names, what in ((links, "links"), (others, "not regular files"))
            if names
        )
        raise InvalidInput(
            f"{directory} holds no JSONL store files{unread} (expected {', '.join(FILE_TYPES)})"
        )
    target = core.resolve_project(project or project_name(root))
    tally = Tally()
    for path, kind in skipped:
        tally.note(_skip_note(path, kind))
    vectors = index_vectors(core, root, tally, with_vectors=with_vectors)
    # Line numbers are per file; the report says which file in each message.
    for path, type_ in files:
        pending: list[StoreLine] = []
        unique = file_ids(path)
        try:  # never through a link put there since the folder was listed
            opened = open_regular_file(path)
        except UnsafePath:
            opened = None
        except OSError as exc:  # unreadable (another user's file)
            tally.note(f"{path.name} skipped: {exc.strerror or exc}")
            continue
        if opened is None:
            tally.note(f"{path.name} skipped: no longer a regular file")
            continue
        with opened as handle:
            for number, line in numbered_lines(handle):
                if isinstance(line, BadLine):
                    tally.error(number, f"{path.name}: {line.message}")
                    continue
                if not line.strip():
                    continue
                try:
                    item = parse_line(path.name, number, line, type_, target)
                    pending.append(_keyed(core, item, unique))
                except InvalidInput as exc:
                    tally.error(number, f"{path.name}: {exc}")
                    continue
                if len(pending) >= BATCH:
                    _write(core, target, pending, tally, vectors)
        if pending:
            _write(core, target, pending, tally, vectors)
    return tally.freeze(str(root))


def seen_namespace(project: str) -> str:
    """Where the lines imported into ``project`` are remembered."""
    return f"{SEEN_NAMESPACE}:{project}"


def _write(
    core: Core, project: str, pending: list[StoreLine], tally: Tally, vectors: IndexVectors
) -> None:
    store = core.store
    namespace = seen_namespace(project)
    with memories.batch(core) as writer:
        seen = store.seen(namespace, [item.key for item in pending])
        fresh = [item for item in pending if item.key not in seen]
        tally.skipped += len(pending) - len(fresh)
        before = _seen_before(core, project, fresh)
        done: list[str] = []
        for item in fresh:
            if item.key in before:
                tally.count("skipped")
                done.append(item.key)
                continue
            try:
                result = writer.save(item.draft)
            except InvalidInput as exc:
                tally.error(item.line, f"{item.file}: {exc}")
                continue
            tally.count(result.status)
            tally.bump(item.file)
            if vectors.attach(core, result.id, item):
                tally.vectors += 1
            done.append(item.key)
        store.mark_seen(namespace, done)
    pending.clear()


def _seen_before(core: Core, project: str, items: list[StoreLine]) -> set[str]:
    """The keys of ``items`` an import saw before lines were remembered per project (the
    whole database's :data:`SEEN_NAMESPACE`) that were this project's: its memory is
    here, or nowhere (deleted since). They are not imported again (a memory edited since
    keeps the edit); a memory of a line with an ``id`` still under the line's hash is
    renamed to the id's key, so an edit of the line updates it. A line whose memory only
    another project holds was that project's: it is imported here."""
    store = core.store
    legacy = store.seen(SEEN_NAMESPACE, [item.key for item in items])
    if not legacy:
        return set()
    owns = {item.key: item.draft.source_id or item.key for item in items if item.key in legacy}
    here = store.present_keys(project, "source_id", sorted({*owns, *owns.values()}), source=SOURCE)
    for key, own in owns.items():
        if key in here and own not in here:
            _rename(core, project, key, own)
    others = {key: own for key, own in owns.items() if key not in here and own not in here}
    for other in store.project_names():
        if others and other != project:
            held = store.present_keys(
                other, "source_id", sorted({*others, *others.values()}), source=SOURCE
            )
            others = {
                key: own for key, own in others.items() if key not in held and own not in held
            }
    elsewhere = {key for key in owns if key not in here} - set(others)
    return set(owns) - elsewhere


def _rename(core: Core, project: str, old: str, new: str) -> None:
    """Give the memory of ``project`` imported as ``old`` the source_id ``new``, unless a
    memory holds ``new`` already."""
    store = core.store
    try:
        new = core.plain_name("source id", new)
    except InvalidInput:
        return  # the line is refused, with this reason, when it is saved
    if store.find_memory(project, source=SOURCE, source_id=new) is not None:
        return
    found = store.find_memory(project, source=SOURCE, source_id=old)
    if found is not None:
        store.update_memory(found.id, {"source_id": new})
