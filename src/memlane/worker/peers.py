"""Who is at the other end of a TCP connection to the worker.

Every local user reaches the worker from the same address (127.0.0.1), so an
address cannot tell the owner's dashboard from another user's flood. For a
loopback connection the kernel knows more: the client's socket is owned by a
uid. :func:`loopback_peer_uid` asks it with one ``sock_diag`` netlink query
for that exact socket (Linux; tens of microseconds, no privilege needed, the
same interface ``ss`` uses). Elsewhere it answers None and callers fall back
to the address.

A connection's :class:`Peer` is its uid when known, else its address: the key
of connection limits (:mod:`memlane.worker.connections`) and rate buckets
(:mod:`memlane.worker.web.security`).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_ALL_TCP_STATES = 0xFFFFFFFF
_NO_COOKIE = 0xFFFFFFFF
# Where a request's peer key travels: its scope's ``state`` (set per connection).
PEER_STATE_KEY = "memlane.peer"
_HEADER = struct.Struct("=IHHII")  # struct nlmsghdr
_REQUEST = struct.Struct("=BBBxI")  # struct inet_diag_req_v2 without its sockid
_MESSAGE = struct.Struct("=BBBB")  # struct inet_diag_msg up to its sockid
_SOCKID_SIZE = 48
_UID_OFFSET = _HEADER.size + _MESSAGE.size + _SOCKID_SIZE + 12  # after expires, rqueue, wqueue


@dataclass(frozen=True, slots=True)
class Peer:
    """The client of one connection: a local uid, or an address when the uid is unknown."""

    uid: int | None
    address: str

    @property
    def key(self) -> str:
        return f"uid:{self.uid}" if self.uid is not None else f"addr:{self.address}"


def peer_of(local: object, remote: object, diag: SockDiag | None = None) -> Peer:
    """The peer of a connection from its socket names (``getsockname``/``getpeername``)."""
    if not (isinstance(local, tuple) and isinstance(remote, tuple)):
        return Peer(None, "unknown")
    address = str(remote[0])
    uid = loopback_peer_uid((str(local[0]), int(local[1])), (address, int(remote[1])), diag)
    return Peer(uid, address)


class SockDiag:
    """One netlink ``sock_diag`` socket kept open for many queries.

    A server asks about every connection it accepts; keeping the socket saves a
    descriptor per query, which matters exactly when a flood makes them scarce.
    Not thread-safe: one per event loop.
    """

    def __init__(self) -> None:
        self._sock: socket.socket | None = None

    def ask(self, request: bytes) -> bytes | None:
        """The kernel's answer to one request; None when sock_diag is unavailable."""
        for _attempt in range(2):  # a socket that broke is reopened once
            try:
                if self._sock is None:
                    self._sock = _open_diag()
                self._sock.send(request)
                return self._sock.recv(4096)
            except OSError:
                self.close()
        return None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _open_diag() -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
    try:
        sock.settimeout(1.0)
        sock.connect((0, 0))  # the kernel
    except OSError:
        sock.close()
        raise
    return sock


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # the client's own socket is plain IPv4
    return ip


def loopback_peer_uid(
    local: tuple[str, int], remote: tuple[str, int], diag: SockDiag | None = None
) -> int | None:
    """The uid owning the client end of the TCP connection ``remote`` → ``local``.

    Only for loopback connections (the client is on this machine); None when
    the client is remote, the system has no ``sock_diag``, or the client's
    socket is already gone. ``diag``: a socket to reuse (else one is opened).
    """
    ours, theirs = _ip(local[0]), _ip(remote[0])
    if ours is None or theirs is None or not theirs.is_loopback or ours.version != theirs.version:
        return None
    if not hasattr(socket, "AF_NETLINK"):
        return None
    family = socket.AF_INET if theirs.version == 4 else socket.AF_INET6
    # The client's socket: its source is the remote end of ours, its destination us.
    sockid = (
        struct.pack("!HH", remote[1], local[1])
        + theirs.packed.ljust(16, b"\0")
        + ours.packed.ljust(16, b"\0")
        + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    )
    body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, _ALL_TCP_STATES) + sockid
    request = _HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    if diag is None:
        one_off = SockDiag()
        try:
            answer = one_off.ask(request + body)
        finally:
            one_off.close()
    else:
        answer = diag.ask(request + body)
    if answer is None or len(answer) < _UID_OFFSET + 4:
        return None
    _length, kind, _flags, _seq, _pid = _HEADER.unpack_from(answer)
    if kind != _SOCK_DIAG_BY_FAMILY:  # an error message: no such socket (it closed already)
        return None
    found = answer[_HEADER.size + _MESSAGE.size : _HEADER.size + _MESSAGE.size + 4]
    if found != sockid[:4]:  # the ports of another socket: never trust it
        return None
    (uid,) = struct.unpack_from("=I", answer, _UID_OFFSET)
    return int(uid)
