"""``memlane hook <event>``: stdin JSON → normalized event → handler → stdout.

Contract (DESIGN §10, invariant 7): the hook exits 0 whatever happens, prints
nothing when it fails, and finishes inside its budget. Concretely:

* stdin is read with a size cap (larger input is refused, not parsed);
* stdin is decoded with invalid UTF-8 replaced (U+FFFD, as a lone surrogate is
  stored): a stray byte costs its character, not the prompt;
* any failure — bad JSON, a wrong field type, a database error, the budget running
  out — appends one line to ``<log_dir>/hooks.log`` (what failed, and whether the
  capture went to the spool) and the process prints nothing. Writes run in short
  transactions, so an interrupted hook leaves no half-written row;
* a watchdog enforces the budget twice: ``SIGALRM`` raises ``HookTimeout`` so the
  open transaction rolls back cleanly, and a daemon timer calls ``os._exit(0)``
  a moment later in case the main thread is stuck inside C code (a locked
  database) where the signal handler cannot run;
* output is built completely before anything is written;
* a capture the hook gives up on (the budget ran out, the database stayed busy) goes
  to the spool (:mod:`memlane.hooks.spool`), from the main thread or, when that one is
  stuck, from the watchdog's before its hard exit; the next capturing hook process
  (and the worker) stores it.

Import weight matters: this runs on every prompt. The module imports only the
standard library; handlers and the facade load when needed, and nothing on the
path imports click, pydantic, numpy, mcp, starlette or rich (tested).
"""

from __future__ import annotations

import os
import sys
import time
from types import FrameType

from memlane.hooks.events import (
    MAX_STDIN_BYTES,
    SPOOL_KINDS,
    SPOOL_TAG_CHARS,
    database_key,
    is_spooled_capture,
    lookup,
)

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from memlane.config import Settings
    from memlane.hooks.handlers import HookContext
    from memlane.service import Memory
# Seconds each event may take before the watchdog gives up silently.
BUDGETS: dict[str, float] = {
    "session-start": 5.0,
    "user-prompt-submit": 4.0,
    "post-tool-use": 4.0,
    "stop": 25.0,
    "subagent-stop": 25.0,
    "pre-compact": 8.0,
    "session-end": 1.2,
}
DEFAULT_BUDGET = 5.0
# What a hook keeps of its budget after its transcript ingest (the subagents', the summary
# and checkpoint): the ingest begins no batch past the rest (HookContext.deadline).
AFTER_INGEST_S = 5.0
# Extra time after the soft deadline before the hard exit.
HARD_GRACE_S = 0.3
# Events that read what relayed hooks wrote: run in-process (the worker did not take
# them), they first wait (at most FLUSH_TIMEOUT_S) for it to finish the hooks before them.
FLUSH_FIRST = frozenset({"stop", "subagent-stop", "session-end"})
FLUSH_TIMEOUT_S = 0.5
# How long the hard exit waits for the spool to be written (never forever: the main
# thread, stuck, might hold something the writing needs).
SPOOL_GRACE_S = 1.0
# A hook process of an event whose capture may be spooled (memlane.hooks.events.SPOOL_KINDS)
# replays what waits first, at most REPLAY_IN_HOOK files (the worker the rest).
REPLAY_IN_HOOK = 8
# The hook process's context while it runs (handle() sets it, for SPOOL_KINDS): what
# the spool keeps when the hook gives up before its capture is written.
_PENDING: list[HookContext] = []
# The watchdog's spool writer while it runs (appended before it starts): the main thread,
# giving up meanwhile, waits for it before its exit (see _give_up).
_WRITERS: list[Any] = []


class HookTimeout(BaseException):
    """Raised by the watchdog; a BaseException so no handler swallows it."""


class HookInputError(ValueError):
    """Stdin that is not a usable hook payload."""


def run_hook(
    event: str,
    db: str | None = None,
    *,
    config: str | None = None,
    stdin: bytes | None = None,
    exit_when_done: bool | None = None,
    relay: bool = True,
) -> int:
    """Run the hook for ``event`` (``[agent:]event``). Always returns 0.

    ``config``: the config file a ``--config`` names (over ``MEMLANE_CONFIG``).
    ``stdin``: the payload when the caller has read it already (the launcher).
    ``exit_when_done``: end the process at once after answering (default: when
    this process is ``memlane hook …`` itself).
    ``relay``: first offer the hook to the running worker, once
    (:mod:`memlane.hooks.relay`; never with an explicit ``db``); when it does not
    take it, the hook runs in this process. The launcher passes False: it made
    that one attempt itself.
    """
    started = time.perf_counter()
    _PENDING.clear()
    _WRITERS.clear()
    budget = _budget_for(event)
    deadline = time.monotonic() + max(budget - AFTER_INGEST_S, budget / 2)
    output = b""
    fast_exit = _is_process_entry() if exit_when_done is None else exit_when_done
    try:
        # Reading stdin and the relay are bounded by an alarm alone (the relay by its
        # socket timeouts too): a relayed hook never loads threading for the watchdog.
        disarm = _arm_alarm(event, budget)
        try:
            raw = stdin if stdin is not None else _read_stdin(wait=not _is_kiro(event))
            relayed = _relay(event, raw) if relay and db is None else None
        finally:
            disarm()
        if relayed is not None:
            output = relayed
        else:
            after: list[Callable[[], object]] = []
            disarm = _arm_watchdog(event, budget)
            try:
                text = _run(
                    event,
                    raw,
                    db,
                    config=config,
                    close=not fast_exit,
                    after=after,
                    started=started,
                    deadline=deadline,
                )
                output = text.encode("utf-8", "replace")
                if after:  # writes that wait for the answer (the injection log)
                    _emit(event, output)
                    output = b""
                    _run_after(event, after)
            finally:
                disarm()
    except BaseException as exc:  # the hook contract: never fail the agent
        output = b""
        _give_up(event, exc)  # logs the hook's one line
    _emit(event, output)
    if fast_exit:
        _exit_now()
    return 0


def _emit(event: str, output: bytes) -> None:
    """Print ``output`` (nothing when empty); a closed stdout is logged, never raised."""
    if not output:
        return
    try:
        _write_stdout(output)
    except (OSError, ValueError) as exc:
        log_failure(event, exc)
        _silence_stdout()


def _run_after(event: str, actions: list[Callable[[], object]]) -> None:
    """Run the actions that wait for the answer, each on its own: one failing (logged)
    does not skip the next (the last one closes the database)."""
    for action in actions:
        try:
            action()
        except Exception as exc:
            log_failure(event, exc)


def _write_stdout(output: bytes) -> None:
    if sys.stdout is None:  # started with stdout closed: no one to tell
        return
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:  # a text-only stdout (an embedding application, tests)
        sys.stdout.write(output.decode("utf-8", "replace"))
        sys.stdout.flush()
        return
    stream.write(output)
    stream.flush()


def _is_kiro(event: str) -> bool:
    found = lookup(event)
    prefix = event.split(":", 1)[0].strip().lower() if ":" in event else ""
    return prefix == "kiro" or (found is not None and found[1] == "kiro")


def _relay(event: str, raw: bytes) -> bytes | None:
    """The worker's answer, or None to run in-process (see memlane.hooks.relay)."""
    from memlane.hooks.relay import relay

    return relay(event, raw)


def _is_process_entry() -> bool:
    """True when this process is `memlane hook …` itself (not a test calling run_hook)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name in ("memlane", "memlane.__main__"):
        return True
    return os.path.basename(sys.argv[0] if sys.argv else "") == "memlane"


def _exit_now() -> None:
    """Exit 0 without interpreter teardown.

    Every transaction is committed by now. Closing the SQLite connection would
    checkpoint the WAL with an fsync (~20 ms measured), and teardown frees every
    module: neither is needed by a process that is done. SQLite's automatic
    checkpoints during later commits keep the WAL bounded.
    """
    for stream in (sys.stdout, sys.stderr):  # None when started with the fd closed
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's exit flush cannot fail (exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        return


def _run(
    event_arg: str,
    raw: bytes,
    db: str | None,
    *,
    config: str | None = None,
    close: bool = True,
    after: list[Callable[[], object]] | None = None,
    started: float | None = None,
    deadline: float | None = None,
) -> str:
    from memlane.config import load_settings

    if len(raw) > MAX_STDIN_BYTES:
        raise HookInputError(f"stdin is larger than {MAX_STDIN_BYTES} bytes; ignored")
    settings, warnings = load_settings(db_target=db, config_path=config)
    from memlane.hooks.relay import event_name, flush

    if warnings and event_name(event_arg) == "session-start":
        # A bad value was replaced by its default: said once a session, where hooks report
        # (every event would push real failures out of the capped log).
        from memlane.hooks.log import log_note

        log_note(event_arg, f"config: {warnings[0]}")

    if db is None and event_name(event_arg) in FLUSH_FIRST:
        flush(timeout_s=FLUSH_TIMEOUT_S)  # relayed hooks before this one may still be writing
    return handle(
        event_arg,
        raw,
        settings,
        close=close,
        after=after,
        started=started,
        deadline=deadline,
        pending=_PENDING,
    )


def handle(
    event_arg: str,
    raw: bytes,
    settings: Settings,
    *,
    memory: Memory | None = None,
    deferred: list[Callable[[], object]] | None = None,
    close: bool = True,
    after: list[Callable[[], object]] | None = None,
    started: float | None = None,
    deadline: float | None = None,
    origin: str | None = None,
    pending: list[HookContext] | None = None,
) -> str:
    """What the hook prints for ``event_arg`` given its stdin bytes ``raw``.

    The one implementation of a hook, shared by the hook process and the worker
    (which passes its open ``memory`` and a ``deferred`` list for the writes).
    A hook process passes ``after``: the writes that wait until it printed the
    answer (the injection log), then the closing of the database. ``started``:
    the ``time.perf_counter()`` the hook started at (default: now). ``deadline``: the
    ``time.monotonic()`` past which a transcript ingest begins no batch (the worker
    passes its client's: past it the client runs the hook itself). ``origin``: the
    hook process's directory when another process runs the hook (the worker).
    ``pending`` receives the hook's context (for SPOOL_KINDS' events): what
    :func:`spool_pending` keeps when the caller gives up on its writes.
    Raises on bad input; the callers log and stay silent.
    """
    started = time.perf_counter() if started is None else started
    import json

    from memlane.hooks.agents import InvalidPayload, normalize

    if raw.strip():
        try:
            # Decoded as json.loads would, but a byte that is not UTF-8 becomes U+FFFD.
            payload = json.loads(raw.decode(json.detect_encoding(raw), "replace"))
        except RecursionError as exc:
            raise HookInputError("stdin JSON is nested too deeply") from exc
    else:
        payload = {}
    if not isinstance(payload, dict):
        raise InvalidPayload(f"stdin JSON must be an object, got {type(payload).__name__}")
    event = normalize(event_arg, payload, origin=origin)
    from memlane.hooks.render import answer
    from memlane.project import capture_disabled, project_name

    if capture_disabled(
        event.cwd,
        exclude_globs=settings.exclude_projects,
        capture_home_and_tmp=settings.capture_home_and_tmp,
    ):
        return answer(event, None)
    from memlane.hooks.handlers import HANDLERS, HookContext, log_injection

    ctx = HookContext(
        event,
        settings,
        project_name(event.cwd),
        memory=memory,
        deferred=deferred,
        after=after,
        deadline=deadline,
    )
    if pending is not None and event.event in SPOOL_KINDS:
        pending[:] = [ctx]
    replay_failed = None
    if memory is None and event.event in SPOOL_KINDS and spool_waiting(settings):
        replay_failed = _replay_spool(ctx)  # a hook process; the worker replays on its own
    try:
        context = HANDLERS[event.event](ctx)
        output = answer(event, context)
        log_injection(ctx, (context or "").strip(), started)
    except BaseException:
        if after is not None:
            after.clear()  # nothing is answered: nothing to log
        if close:
            ctx.close()
        raise  # its line is the hook's one: the replay's failure is left out of the log
    if replay_failed is not None:
        log_failure(event_arg, replay_failed, then="the spooled captures wait for a later replay")
    if close:
        ctx.close()  # after the pending writes, when there are any
    return output


def _read_stdin(*, wait: bool = True) -> bytes:
    """Stdin up to the cap. Kiro may leave stdin open and empty: then don't block."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None or (_isatty(stream)):
        return b""
    if not wait:
        import select

        try:
            ready, _, _ = select.select([stream], [], [], 0.05)
        except (OSError, ValueError):
            ready = []
        if not ready:
            return b""
    data: bytes = stream.read(MAX_STDIN_BYTES + 1)
    return data


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError):
        return False


def _budget_for(event: str) -> float:
    found = lookup(event)
    return BUDGETS.get(found[0], DEFAULT_BUDGET) if found is not None else DEFAULT_BUDGET


def _arm_alarm(event: str, budget: float) -> Any:
    """The soft deadline only (``SIGALRM``); returns the disarmer."""
    import signal

    if not hasattr(signal, "setitimer") or not _on_main_thread():
        return lambda: None

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise HookTimeout(f"budget of {budget:.1f}s exceeded")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return disarm


def _on_main_thread() -> bool:
    main = sys.modules.get("threading")
    return main is None or main.current_thread() is main.main_thread()


def _arm_watchdog(event: str, budget: float) -> Any:
    """The soft deadline (:func:`_arm_alarm`) plus a hard one: a timer thread that
    ends the process a moment later, in case the main thread is stuck in C code."""
    import threading

    disarm_alarm = _arm_alarm(event, budget)

    def hard_exit() -> None:
        exc = HookTimeout(f"budget of {budget:.1f}s exceeded; hard exit")
        if _PENDING:
            _spool_in_time(event, exc)  # its writer logs the hook's line
        else:
            log_failure(event, exc)
        os._exit(0)

    timer = threading.Timer(budget + HARD_GRACE_S, hard_exit)
    timer.daemon = True
    timer.start()

    def disarm() -> None:
        timer.cancel()
        disarm_alarm()

    return disarm


def log_failure(
    event: str, exc: BaseException, log_dir: Path | None = None, *, then: str = ""
) -> None:
    """One line in the hook log (of ``log_dir``: :func:`memlane.hooks.log.log_note`) for a
    hook that failed or gave up, ``then`` (what became of its capture) after its error
    (never raises). A failing hook writes one line: this one."""
    try:
        from memlane.hooks.log import log_note

        failure = f"{type(exc).__name__}: {exc}"
        log_note(event, f"{failure}; {then}" if then else failure, log_dir)
    except BaseException:
        return


# -- the spool (memlane.hooks.spool): loaded only when it is used -----------------------


def spool_waiting(settings: Settings) -> bool:
    """Whether the spool holds a capture of this database, by the names in its folder
    (a replay leaves the folder, its lock file and rejected captures): the spool module
    loads only when one may be a capture."""
    spool = settings.paths.spool_dir
    if not os.path.isdir(spool):
        return False  # the usual case
    try:
        tag = database_key(settings.database)[:SPOOL_TAG_CHARS]
        with os.scandir(spool / tag) as found:
            return any(is_spooled_capture(entry.name) for entry in found)
    except OSError:
        return False


def _replay_spool(ctx: Any) -> Exception | None:
    """Store what earlier hooks spooled, before this hook's own capture (the order they
    came in; what the bound leaves waiting, the capture goes after: :func:`keep_behind`);
    its failure, returned for :func:`handle` to log unless the hook fails too (the same
    database: one line says it), or None. This hook goes on either way."""
    try:
        replay_before(ctx.memory, ctx.settings, REPLAY_IN_HOOK, [ctx])
    except Exception as exc:
        return exc
    return None


def replay_before(
    memory: Memory, settings: Settings, limit: int, behind: list[HookContext]
) -> tuple[int, bool | None]:
    """A bounded replay of the spool (:func:`memlane.hooks.spool.replay`, its answer)
    before the captures of ``behind``: when files may wait (the pass left some, or another
    process replays them now), each of those goes to the spool after them
    (:func:`keep_behind`), so a session's captures are stored in the order they came. The
    one rule, for a hook process and for the worker's relay alike."""
    from memlane.hooks.spool import replay

    stored, more = replay(memory, settings, limit=limit)
    if more is not False:
        for ctx in behind:
            ctx.spool_first = keep_behind
    return stored, more


def keep_behind(ctx: HookContext) -> bool:
    """Keep ``ctx``'s capture in the spool, after the captures a bounded replay left there
    (:attr:`HookContext.spool_first`); False when the spool does not keep it (a transcript
    holds it) or refuses it (too large, unwritable: one log line): it is stored now."""
    notes: list[str] = []
    try:
        kept = _keep(ctx, notes)
    except Exception as exc:
        kept = None
        notes.append(_not_spooled(exc))
    if kept is None and notes:
        from memlane.hooks.log import log_note

        log_note(ctx.event.event, f"{'; '.join(notes)}; stored before the spooled captures")
    return kept is not None


def gave_up(exc: BaseException) -> bool:
    """Whether ``exc`` ends a hook whose capture is worth keeping: the budget ran out or
    the database could not be written now (busy, full: the spool's replay keeps a file
    by the same rule), not a refused input or record."""
    if isinstance(exc, HookTimeout):
        return True
    from memlane.errors import write_may_succeed_later

    return write_may_succeed_later(exc)


def spool_pending(pending: list[HookContext]) -> str:
    """Keep the capture of the hook in ``pending`` (see :func:`handle`), given up on, in
    the spool unless it was stored; what became of it, for the hook's log line ('' when
    there was nothing to keep). Never raises; runs once, whichever thread is first."""
    try:
        ctx = pending.pop()
    except IndexError:
        return ""
    notes: list[str] = []
    try:
        if ctx.captured:
            return ""
        kept = _keep(ctx, notes)
        if kept is not None and ctx.captured:  # the main thread's write got through meanwhile
            kept.unlink(missing_ok=True)
            return ""
    except BaseException as exc:
        notes.append(_not_spooled(exc))
    return "; ".join(notes)


def _keep(ctx: HookContext, notes: list[str]) -> Path | None:
    """``ctx``'s capture kept in the spool (:func:`memlane.hooks.spool.keep`: None when it
    keeps none, why in ``notes``)."""
    from memlane.hooks.spool import keep

    return keep(
        ctx.event, ctx.project, ctx.settings, ctx.started_at, reply=ctx.keeps_reply, notes=notes
    )


def _not_spooled(exc: BaseException) -> str:
    return f"not spooled ({type(exc).__name__}: {exc})"


def keep_and_log(
    event: str, exc: BaseException, pending: list[HookContext], log_dir: Path | None = None
) -> None:
    """The hook's one log line for ``exc``, after the capture in ``pending`` went to the
    spool when ``exc`` is worth it (:func:`gave_up`); never raises."""
    log_failure(event, exc, log_dir, then=spool_pending(pending) if gave_up(exc) else "")


def _give_up(event: str, exc: BaseException) -> None:
    """Log the failure ``exc`` of a hook, with its capture kept when worth it; unless the
    watchdog's writer took the capture: its line is the hook's, and it is waited for (at
    most SPOOL_GRACE_S), as the exit that follows would end it before its file is written."""
    if not _WRITERS:
        keep_and_log(event, exc, _PENDING)
    for writer in _WRITERS:
        if writer.ident is not None:  # one not started yet has not taken it
            writer.join(SPOOL_GRACE_S)


def _spool_in_time(event: str, exc: BaseException) -> None:
    """:func:`keep_and_log` from the watchdog: on a thread of its own, waited for at most
    SPOOL_GRACE_S, so the hard exit comes whatever the stuck main thread holds."""
    import threading

    writer = threading.Thread(
        target=keep_and_log, args=(event, exc, _PENDING), name="memlane-spool", daemon=True
    )
    _WRITERS.append(writer)  # before it can take the capture: see _give_up
    writer.start()
    writer.join(SPOOL_GRACE_S)
    if writer.is_alive():
        log_failure(event, exc, then=f"capture not spooled within {SPOOL_GRACE_S:.1f} s")
