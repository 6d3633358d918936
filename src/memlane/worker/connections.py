"""Connection limits of the worker's HTTP server: per local user, and a deadline per request.

uvicorn accepts every connection and waits as long as a client likes for its
request head. Another local user who opens a thousand connections and sends
nothing would use up the worker's file descriptors, and then nobody gets in:
not the dashboard, not the hook relay, not even SQLite. So
:func:`guarded_protocol` wraps uvicorn's HTTP protocol class:

* **per-peer limits** — each connection counts against its
  :class:`~memlane.worker.peers.Peer` (a local user by uid, or a remote
  address); past the peer's limit it is closed at once, before a byte is read.
  The worker's own user has a budget of its own, so other users' connections
  never crowd out the owner's dashboard;
* **a deadline for each request** — a connection that made no progress
  through a whole ``head_timeout`` period (no complete request head since the
  last one, or a request body still trickling in) is closed: the slow-loris
  client. A response being sent (the live feed) is never cut;
* **the peer travels with the request** — its key goes into the scope's
  ``state`` (:data:`PEER_STATE_KEY`), so the rate limiter counts per user, not
  per address.

Everything runs on the event loop's thread: no locks.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from memlane.worker.peers import PEER_STATE_KEY, Peer, SockDiag, peer_of

log = logging.getLogger("memlane.worker")

# How many connections the event loop accepts per wakeup (asyncio's ``backlog``, also
# the kernel's queue): sockets accepted but not yet seen by the guard hold descriptors.
ACCEPT_BACKLOG = 128
# File descriptors kept for the database, logs, the relay, the model and a few accept
# batches in flight.
RESERVED_FDS = 128 + 3 * ACCEPT_BACKLOG
REFUSAL_LOG_INTERVAL_S = 60.0


OWN_CONNECTIONS = 256
PEER_CONNECTIONS = 32
OTHERS_CONNECTIONS = 256
HEAD_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """How many connections each peer may hold, and how long a request head may take."""

    own: int = OWN_CONNECTIONS  # the worker's own user: dashboard tabs, live feeds, the CLI
    per_peer: int = PEER_CONNECTIONS  # any other local user, or a remote address
    others: int = OTHERS_CONNECTIONS  # all peers but the worker's own user together
    head_timeout: float = HEAD_TIMEOUT_S

    @classmethod
    def for_fd_limit(
        cls, soft_limit: int, *, head_timeout: float = HEAD_TIMEOUT_S
    ) -> ConnectionLimits:
        """Limits that leave the process RESERVED_FDS descriptors whatever the peers do."""
        spare = max(soft_limit - RESERVED_FDS, 16)
        return cls(
            own=min(OWN_CONNECTIONS, spare // 2),
            per_peer=min(PEER_CONNECTIONS, max(spare // 8, 1)),
            others=min(OTHERS_CONNECTIONS, spare // 2),
            head_timeout=head_timeout,
        )

    @classmethod
    def for_this_process(cls, *, head_timeout: float = HEAD_TIMEOUT_S) -> ConnectionLimits:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return cls(head_timeout=head_timeout)
        return cls.for_fd_limit(soft, head_timeout=head_timeout)


class ConnectionGuard:
    """Counts open connections per peer and admits a new one only within the limits."""

    def __init__(self, limits: ConnectionLimits, own_uid: int) -> None:
        self.limits = limits
        self.own_uid = own_uid
        self._open: Counter[str] = Counter()
        self._others = 0
        self.refused = 0
        self._last_warning = 0.0
        self.diag = SockDiag()

    def admit(self, peer: Peer) -> bool:
        """Count ``peer``'s new connection and return True, or False when over a limit."""
        count = self._open[peer.key]
        own = peer.uid == self.own_uid
        if own:
            allowed = count < self.limits.own
        else:
            allowed = count < self.limits.per_peer and self._others < self.limits.others
        if not allowed:
            self._refuse(peer)
            return False
        self._open[peer.key] = count + 1
        if not own:
            self._others += 1
        return True

    def release(self, peer: Peer) -> None:
        """Forget one connection of ``peer`` (it closed)."""
        left = self._open[peer.key] - 1
        if left > 0:
            self._open[peer.key] = left
        else:
            del self._open[peer.key]
        if peer.uid != self.own_uid:
            self._others -= 1

    def close(self) -> None:
        """Release the kernel query socket (the server stopped)."""
        self.diag.close()

    def open_connections(self, peer: Peer) -> int:
        return self._open.get(peer.key, 0)

    def _refuse(self, peer: Peer) -> None:
        self.refused += 1
        now = time.monotonic()
        if now - self._last_warning >= REFUSAL_LOG_INTERVAL_S:
            self._last_warning = now
            log.warning(
                "refusing connections from %s: over its limit of open connections (%d refused)",
                peer.key,
                self.refused,
            )


def guarded_protocol(base: type[Any], guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """``base`` (a uvicorn HTTP protocol class) with the guard's limits and deadlines.

    Relies on two attributes both uvicorn protocols (h11, httptools) keep:
    ``app_state`` (copied into each request's scope as ``state``) and ``cycle``
    (the current request, with ``response_complete`` and ``more_body``).
    """

    class GuardedProtocol(base):  # type: ignore[misc]
        # Set by uvicorn's protocol (``base``):
        app_state: dict[str, Any]
        cycle: Any
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport
        # Ours:
        _peer: Peer | None = None
        _timer: asyncio.TimerHandle | None = None
        _seen: object = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            peer = peer_of(
                transport.get_extra_info("sockname"),
                transport.get_extra_info("peername"),
                guard.diag,
            )
            if not guard.admit(peer):
                transport.abort()
                return
            self._peer = peer
            self.app_state = {**self.app_state, PEER_STATE_KEY: peer.key}
            super().connection_made(transport)
            self._seen = self.cycle
            self._timer = self.loop.call_later(guard.limits.head_timeout, self._check_progress)

        def data_received(self, data: bytes) -> None:
            if self._peer is not None:
                super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            peer, self._peer = self._peer, None
            if peer is None:
                return  # refused in connection_made: uvicorn never saw it
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            guard.release(peer)
            super().connection_lost(exc)

        def _check_progress(self) -> None:
            cycle = self.cycle
            waiting = cycle is None or cycle.response_complete or cycle.more_body
            if waiting and cycle is self._seen:
                self.transport.close()  # nothing new for a whole period: a slow-loris client
                return
            self._seen = cycle
            self._timer = self.loop.call_later(guard.limits.head_timeout, self._check_progress)

    return GuardedProtocol


def http_protocol(guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """uvicorn's default HTTP protocol (httptools when installed, else h11), guarded."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return guarded_protocol(AutoHTTPProtocol, guard)
