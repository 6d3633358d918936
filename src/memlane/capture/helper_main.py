"""The prepare helper process (:mod:`memlane.capture.helper` starts it): reads its
settings, then answers each request with the units and observations of its turns,
prepared by the ingest's own functions; exits when its stdin ends."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from datetime import datetime

from memlane.capture.helper import Reply, Request, read_frame, write_frame
from memlane.capture.pipeline import PreparedPart, prepared_part
from memlane.core import Core
from memlane.secret_rules import compile_all


def _stopped_at(moment: datetime) -> Callable[[], datetime]:
    """A clock showing the worker's moment of the request: undated units and observations
    are dated by it, as in the worker."""
    return lambda: moment


def serve(requests: int, replies: int) -> None:
    """Answer requests from fd ``requests`` on fd ``replies`` until the first ends."""
    # Frames come from the parent process only (our stdin, which it holds).
    settings = pickle.loads(read_frame(requests, None))  # noqa: S301
    compile_all()
    core = Core(None, settings)  # type: ignore[arg-type]  # preparing reads no store
    while True:
        try:
            request: Request = pickle.loads(read_frame(requests, None))  # noqa: S301
        except EOFError:
            return  # the worker closed the pipe, or died
        core.clock = _stopped_at(request.now)
        try:
            prepared = prepared_part(core, request.project, request.session_id, request.turns)
            reply = Reply(request.number, PreparedPart.of(*prepared))
            data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # answered: the worker prepares the turns itself
            data = pickle.dumps(Reply(request.number, None, repr(exc)))
        write_frame(replies, data)


def main() -> None:
    # Ctrl-C in the worker's terminal reaches its whole group: the worker decides when
    # this process ends (by closing its pipe).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol gets its own copy of stdout; anything printed goes to stderr instead.
    replies = os.dup(1)
    os.dup2(2, 1)
    with contextlib.suppress(BrokenPipeError):  # the worker went away mid-reply
        serve(0, replies)


if __name__ == "__main__":
    main()
