"""Backfill: every session an agent already wrote to disk, captured as if hooked live.

A new user has months of Claude Code transcripts and Codex rollouts on disk
(:mod:`memlane.capture.sources`). :func:`recover` ingests each through the same
path as the Stop hook — units, observations derived from its tool pairs,
then its summary — so the first SessionStart after installing memlane already
knows the project's history. Rules:

* **the project** of a session is the one its working directory names (git
  repository root, as for the hooks); the capture opt-outs apply
  (``MEMLANE_DISABLED``, ``.memlane-ignore``, ``exclude_projects``, the home and
  temp directories), and a session whose directory is unknown is skipped;
* **idempotent**: a transcript is read from the byte offset its session
  reached, so a second run ingests only what was appended since (nothing, most
  often), and a session captured live is only completed;
* **finished once**: a session recover reads is ended (at its last activity) when it
  did not know it (a session of the past) or it is idle, in the commit that writes its
  summary. A file counts as captured when its session is read up to the file's end and
  not left open idle (:func:`captured`), so a run stopped after a file's ingest, before
  that commit, leaves a session the next run wraps up, reading nothing again; an active
  session not idle is in use, and its wrap-up is the hooks' (Stop, an idle close);
* **one bad file does not stop the rest**: its error is reported in one line, and so
  is a file or folder that cannot be read, and a working directory that cannot be
  checked for an opt-out (under a folder the user may not enter): such a session is
  not read;
* **a second core**: while it runs, a large transcript has part of each batch
  prepared by a helper process when a core is idle, as in the worker
  (:mod:`memlane.capture.helper`); the helper is stopped when it ends.

Summaries are written with ``activity=False`` (reading an old session is not
work in it) and dated when the session worked (:mod:`memlane.capture.lifecycle`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlane import feedback
from memlane.capture.sources import SessionFile
from memlane.errors import MemlaneError

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from datetime import datetime

    from memlane.config import Settings
    from memlane.core import Core
    from memlane.models import Session
    from memlane.store.base import Store


@dataclass(frozen=True, slots=True)
class RecoverReport:
    """What one backfill did."""

    files: int  # session files found
    sessions: int = 0  # sessions with something new ingested, or only wrapped up
    units: int = 0
    skipped: int = 0  # opted out of capture, or no working directory
    unchanged: int = 0  # captured already (see captured)
    seconds: float = 0.0
    errors: tuple[str, ...] = ()


def recover(
    core: Core,
    files: Sequence[SessionFile],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> RecoverReport:
    """Ingest every session of ``files`` not fully captured yet (see the module docstring)."""
    from memlane.capture import helper

    with helper.lent(core.settings):
        return _recover(core, files, progress)


def captured(store: Store, found: SessionFile, *, idle_before: datetime) -> bool:
    """Whether :func:`recover` leaves ``found`` as it is: its session read up to the file's
    end already (by recover or the hooks) and not left open idle, quiet since before
    ``idle_before`` (one indexed lookup, no read of the file)."""
    if found.error is not None or not found.size:
        return False
    return _complete(store.get_session(found.session_id), found, idle_before)


def _complete(session: Session | None, found: SessionFile, idle_before: datetime) -> bool:
    """Whether ``session`` is as recover leaves the session of ``found`` (see
    :func:`captured`)."""
    return _read_to_end(session, found) and not _left_open(session, idle_before)


def _read_to_end(session: Session | None, found: SessionFile) -> bool:
    """Whether ``session``'s stored offset is the size of ``found``, a file not empty."""
    return session is not None and 0 < found.size == session.transcript_offset


def _left_open(session: Session | None, idle_before: datetime) -> bool:
    """Whether ``session`` is one recover ends once read, though it knew it: idle."""
    from memlane.sessions import is_idle

    return session is not None and is_idle(session, idle_before)


def refusal(settings: Settings, found: SessionFile) -> str | None:
    """Why :func:`recover` reads nothing of ``found`` whatever the database holds: the
    error it reports (a line), ``""`` when it skips it quietly (no working directory,
    capture off there: ``MEMLANE_DISABLED``, ``.memlane-ignore``, ``exclude_projects``,
    the home or temp directory), or None when it reads it."""
    from memlane.project import capture_disabled

    if found.error is not None:
        return f"{found.path}: {_reason(found.error, found.path)}"
    if not found.cwd:
        return ""
    try:
        off = capture_disabled(
            found.cwd,
            exclude_globs=settings.exclude_projects,
            capture_home_and_tmp=settings.capture_home_and_tmp,
        )
    except OSError as exc:
        return (
            f"{found.path}: not read: its working directory {found.cwd} cannot be"
            f" checked for a .memlane-ignore ({_reason(exc, found.cwd)})"
        )
    return "" if off else None


def would_read(
    settings: Settings, store: Store | None, found: SessionFile, *, now: datetime | None = None
) -> bool:
    """Whether :func:`recover` would capture something of ``found`` at ``now`` (default:
    the present): not refused, not empty, not :func:`captured` already (``store`` None: a
    database not made yet, where nothing is). ``recover --dry-run`` and ``memlane setup``
    count with it."""
    from memlane.models import utcnow
    from memlane.sessions import idle_cutoff

    if refusal(settings, found) is not None or not found.size:
        return False
    if store is None:
        return True
    return not captured(store, found, idle_before=idle_cutoff(settings, now or utcnow()))


def _recover(
    core: Core, files: Sequence[SessionFile], progress: Callable[[int, int], None] | None
) -> RecoverReport:
    from memlane import sessions
    from memlane.capture.lifecycle import refresh_summary
    from memlane.capture.pipeline import ingest_transcript
    from memlane.project import project_name

    started = time.perf_counter()
    settings = core.settings
    idle_before = sessions.idle_cutoff(settings, core.now())
    ingested = units = skipped = unchanged = 0
    errors: list[str] = []
    for done, found in enumerate(files, 1):
        if progress is not None:
            progress(done - 1, len(files))
        why = refusal(settings, found)
        if why is not None:
            if why:
                errors.append(why)
            else:
                skipped += 1
            continue
        try:
            known = sessions.find_session(core, found.session_id)
            if _complete(known, found, idle_before):
                unchanged += 1
                continue
            if known is None:  # started when it did, not now
                sessions.start_session(
                    core,
                    found.session_id,
                    project=project_name(found.cwd),
                    agent=found.agent,
                    transcript_path=found.path,
                    parent_session_id=found.parent_session_id,
                    now=found.started,
                )
            report = ingest_transcript(
                core,
                found.session_id,
                found.path,
                project=project_name(found.cwd),
                parent_session_id=found.parent_session_id,
                count_prompts=True,
            )
            # Read to its end already but left open idle (a run stopped before its
            # wrap-up): the wrap-up is what is left.
            unwrapped = _read_to_end(known, found)
            nothing_read = report.end_offset <= report.start_offset and not report.replaced_chunks
            if nothing_read and not unwrapped:
                unchanged += 1
                continue
            # The file counts as done with its last commit; one that writes nothing
            # counts at the next one's start.
            with feedback.commit_and_count():
                with core.store.transaction():  # its summary and its end: both or neither
                    refresh_summary(core, found.session_id, activity=False)
                    session = sessions.get_session(core, found.session_id)
                    if known is None or _left_open(session, idle_before):
                        # Nobody is in it (of the past, or idle): ended when it was.
                        sessions.end_session(core, found.session_id, now=session.last_activity_at)
                ingested += 1
                units += report.chunks
                if progress is not None:
                    progress(done, len(files))
        except OSError as exc:
            errors.append(f"{found.path}: {_reason(exc, found.path)}")
        except MemlaneError as exc:
            errors.append(f"{found.path}: {exc}")
    if progress is not None:
        progress(len(files), len(files))
    return RecoverReport(
        files=len(files),
        sessions=ingested,
        units=units,
        skipped=skipped,
        unchanged=unchanged,
        seconds=time.perf_counter() - started,
        errors=tuple(errors),
    )


def _reason(exc: OSError, path: str) -> str:
    """What went wrong with ``path`` in a few words: the file that failed when another,
    and the next step for a permission refused."""
    import errno

    where = f"{exc.filename}: " if exc.filename and str(exc.filename) != path else ""
    hint = "; check its permissions" if exc.errno in (errno.EACCES, errno.EPERM) else ""
    return f"{where}{exc.strerror or exc}{hint}"
