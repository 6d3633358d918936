"""What the hook command runs: ``python -S …/memlane/hooks/launch.py EVENT``.

``memlane setup`` writes this command (absolute interpreter and file paths) so a
hook pays for nothing it does not use: ``-S`` skips site-packages and ``.pth``
processing, and no console-script wrapper imports :mod:`re`. The launcher reads
stdin, offers the hook to the running worker (:mod:`memlane.hooks.relay`) and
prints its answer; when no worker takes it, it loads ``site`` after all and runs
the hook in this process like ``memlane hook EVENT``, without a second offer:
this is the hook's one attempt to reach the worker.

The script ``launch.py`` only puts the package on the path and calls :func:`main`:
a script is compiled anew on every run, a module once (its ``.pyc``), and this
code cost ~0.5 ms to compile on every hook.
"""

import _signal  # type: ignore[import-not-found]  # loaded at start, unlike signal
import posix  # not os: see memlane.hooks.relay on import weight
import sys

# An agent that never closes our stdin must not hang the hook (the relay has its own
# socket timeouts; the in-process path its watchdog).
READ_BUDGET_S = 4.0


class _ReadExpired(BaseException):
    """Stdin stayed open past READ_BUDGET_S."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _ReadExpired


def _read_stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or stream.isatty():
        return b""
    from memlane.hooks.events import MAX_STDIN_BYTES

    previous = _signal.signal(_signal.SIGALRM, _on_alarm)
    _signal.setitimer(_signal.ITIMER_REAL, READ_BUDGET_S)
    try:
        data: bytes = stream.read(MAX_STDIN_BYTES + 1)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, previous)
    return data


def _give_up(event: str, why: str) -> None:
    """Log one line and end the process silently (exit 0, nothing printed)."""
    try:
        from memlane.hooks.dispatch import log_failure  # standard library only

        log_failure(event, TimeoutError(why))
    finally:
        posix._exit(0)


def _in_process(event: str | None, raw: bytes | None) -> None:
    import site

    site.main()  # the in-process path may need third-party packages
    if event is None:
        from memlane.__main__ import main

        main()
        return
    from memlane.hooks.dispatch import run_hook

    # The worker was offered this hook above, or it is not relayable: no second attempt.
    run_hook(event, stdin=raw, exit_when_done=True, relay=False)


def main() -> None:
    """Relay the hook named in ``sys.argv`` or run it here (``launch.py`` set the path)."""
    args = sys.argv[1:]
    if len(args) != 1 or args[0].startswith("-"):
        _in_process(None, None)  # not a hook call: the ordinary CLI
        return
    event = args[0]
    from memlane.hooks.relay import relay, relayable

    if not relayable(event):  # e.g. Kiro (its prompt is in the environment)
        _in_process(event, None)  # the dispatcher reads stdin itself
        return
    try:
        raw = _read_stdin()
    except _ReadExpired:
        _give_up(event, f"stdin not closed within {READ_BUDGET_S:.0f} s; ignored")
        return
    except Exception:  # the in-process path below logs whatever is wrong
        raw = None
    try:
        answer = relay(event, raw) if raw is not None else None
    except Exception:  # the in-process path below logs whatever is wrong
        answer = None
    if answer is None:
        _in_process(event, raw)
        return
    try:
        if answer and sys.stdout is not None:  # None: started with stdout closed
            sys.stdout.buffer.write(answer)
            sys.stdout.buffer.flush()
    except (OSError, ValueError):
        pass  # the agent closed our stdout: nothing left to tell it
    posix._exit(0)
