"""The worker's front door: one pure-ASGI middleware that applies DESIGN §8.

Order of checks for every HTTP request (a failure answers at once with a JSON
:class:`~memlane.schemas.ErrorOut` body and the security headers):

1. **Host allow-list** — the ``Host`` header must name the worker itself
   (loopback names, or the address it was told to bind). A DNS-rebinding page
   reaches us under its own domain name and is refused here.
2. **Origin** — a request carrying a foreign ``Origin`` is refused on ``/api``,
   ``/mcp`` and ``/auth``; a write (POST/PUT/PATCH/DELETE) authenticated by the
   dashboard cookie must carry our own Origin. CORS answers only our own origin
   (so a foreign page can neither preflight nor read responses).
3. **Identity proof** — ``GET /health`` with an ``X-Memlane-Challenge`` nonce
   is answered at once with ``X-Memlane-Proof`` (:func:`memlane.runtime.worker_proof`:
   an HMAC of the nonce and our port under the token). The CLI sends the token
   only to a listener that proved it holds it (:mod:`memlane.worker.client`).
4. **Rate limits** — token buckets per client: ``rate_per_minute`` over
   everything, ``write_rate_per_minute`` on writes; 429 + ``Retry-After``. A
   client is its peer (the local user, by uid, from
   :mod:`memlane.worker.peers`; else the address) *and* whether the
   request is authenticated: another user's flood, or anyone's unauthenticated
   requests, never empty the owner's authenticated bucket.
5. **Authentication** on ``/api`` and ``/mcp``: ``Authorization: Bearer
   <token>`` (programs) or, on ``/api`` only, the dashboard cookie *with* its tab's
   session key in ``X-Memlane-Session``. Both are handed out only by redeeming a
   one-time code (:class:`LoginCodes`) at ``/auth``; they are a session of this
   worker run (:class:`DashboardSessions`), never the token nor derived from it.
   The cookie alone authorizes nothing: a browser sends it to every port of the
   host, so another local user's server on any other port gets it. The key goes to
   the page in the redirect's URL fragment (never sent to a server); the page keeps
   it in sessionStorage, which belongs to the origin (scheme, host *and* port).
6. **Body size** — ``Content-Length`` over the limit is refused up front; a
   streamed body is counted and cut at the limit (413).

Every response gets the security headers (CSP without inline script,
``nosniff``, ``frame-ancestors 'none'``, ``Referrer-Policy: no-referrer``).
Each step is one method of :class:`SecurityMiddleware` that returns a
:class:`Denial` or None; :class:`Responder` sends what goes back.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import math
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memlane.runtime import (
    ADMITTED_STATE_KEY,
    CHALLENGE_HEADER,
    LOGIN_CODE_TTL_S,
    PROOF_HEADER,
    WRITE_BUDGET_STATE_KEY,
    worker_proof,
)
from memlane.worker.peers import PEER_STATE_KEY

COOKIE_NAME = "memlane_session"
# The request header a dashboard tab sends its session key in, beside the cookie.
SESSION_HEADER = "x-memlane-session"
# How long a dashboard sign-in lasts (the cookie's Max-Age and its signed expiry).
SESSION_TTL_S = 12 * 3600
# Where the middleware leaves a cookie-authenticated request's session end (scope state).
SESSION_STATE_KEY = "memlane.session_expires"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# POSTs that only read (a body carries the query): limited like reads, still Origin-checked.
READ_POSTS = frozenset({"/api/recall", "/api/observations/batch"})
PROTECTED_PREFIXES = ("/api", "/mcp")
LIMITED_PREFIXES = ("/api", "/mcp", "/auth", "/health")
NONCE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_NONCE_CHARS = 128

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def default_allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Host names the worker answers to: loopback, the bind address, and ``extra``.

    Binding a wildcard address (``0.0.0.0``/``::``) also admits this machine's
    host name; anything else must be listed explicitly (``--allow-host``).
    """
    hosts = set(LOOPBACK_HOSTS)
    if bind_host in ("0.0.0.0", "::"):  # noqa: S104 - naming the wildcard, not binding it
        hosts.add(socket.gethostname().lower())
    else:
        hosts.add(bind_host.lower().strip("[]"))
    hosts.update(h.lower().strip("[]") for h in extra if h)
    return frozenset(hosts)


def split_host(header: str) -> tuple[str, int | None]:
    """``"[::1]:8080"`` → ``("::1", 8080)``; ``"localhost"`` → ``("localhost", None)``."""
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        if end < 0:
            return header, None
        host, rest = header[1:end], header[end + 1 :]
        port = rest[1:] if rest.startswith(":") else rest  # "[::1]x": not a port, refused
    elif header.count(":") == 1:
        host, port = header.split(":")
    else:
        host, port = header, ""
    if not port:
        return host, None
    return (host, int(port)) if port.isdigit() else (host, -1)


def burst_for(per_minute: int) -> int:
    """How many requests may arrive at once: a quarter of the minute's budget (at least
    10, or the whole budget when smaller), so one burst cannot queue a minute of work."""
    return max(per_minute // 4, min(per_minute, 10))


@dataclass
class TokenBucket:
    """``capacity`` requests at once, refilled at ``per_minute`` per minute."""

    capacity: float
    tokens: float
    updated: float
    per_minute: float

    def take(self, now: float) -> float:
        """Take one token; 0.0 when allowed, else seconds until one is available."""
        refill = self.per_minute / 60.0
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * refill)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / refill


class RateLimiter:
    """Per-client token buckets (the event loop is single-threaded: no lock needed)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, TokenBucket] = {}

    def check(self, client: str, now: float | None = None) -> float:
        """0.0 when ``client`` may proceed, else the seconds to wait."""
        if self.per_minute <= 0:
            return 0.0
        moment = time.monotonic() if now is None else now
        bucket = self._buckets.get(client)
        if bucket is None:
            if len(self._buckets) > 10_000:
                # Many distinct clients only happens off loopback; forget the idle ones.
                self._buckets.clear()
            burst = float(burst_for(self.per_minute))
            bucket = TokenBucket(burst, burst, moment, float(self.per_minute))
            self._buckets[client] = bucket
        return bucket.take(moment)


class LoginCodes:
    """One-time dashboard sign-in codes: short-lived, single use.

    A code must never be on a command line (``/proc/PID/cmdline`` is readable by
    every local user): `memlane dashboard` gives the browser a private page that
    forwards to the URL (:func:`memlane.runtime.write_signin_page`).
    """

    def __init__(self, ttl_seconds: float = LOGIN_CODE_TTL_S) -> None:
        self.ttl = ttl_seconds
        self._codes: dict[str, float] = {}

    def issue(self) -> str:
        now = time.monotonic()
        self._codes = {c: t for c, t in self._codes.items() if t > now}
        code = secrets.token_urlsafe(24)
        self._codes[code] = now + self.ttl
        return code

    def redeem(self, code: str) -> bool:
        """True once for a live code; the code is gone afterwards either way."""
        expires = self._codes.pop(code, None)
        return expires is not None and expires > time.monotonic()


class DashboardSessions:
    """Dashboard sessions: a cookie ``<expiry>.<id>.<HMAC of both>`` under a key of this
    worker run, and the tab's key that must come with it (:meth:`tab_key`).

    The key is random and lives only in this process's memory, so a cookie dies
    with the worker that handed it out. It once was an HMAC of the token: valid
    for every later worker and never expiring. When a worker exited, its port
    was free for anyone; an open dashboard's live feed reconnected to another
    user's listener there, cookie and all, and that user replayed the cookie on
    the next worker (reads, writes, new sign-in links). The signed expiry (also
    the cookie's ``Max-Age``) ends a sign-in after ``ttl`` seconds on a worker
    that runs for days; the random id makes every sign-in a session of its own.
    """

    def __init__(
        self, ttl_seconds: float = SESSION_TTL_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.ttl = ttl_seconds
        self._clock = clock
        self._key = secrets.token_bytes(32)

    def issue(self) -> str:
        """A new cookie value, valid for ``ttl`` seconds on this worker run."""
        expires = math.ceil(self._clock() + self.ttl)
        session_id = secrets.token_hex(16)
        return f"{expires}.{session_id}.{self._sign(f'{expires}.{session_id}')}"

    def expires_at(self, value: str) -> float | None:
        """When the session ``value`` ends; None unless this run issued it and it is live."""
        signed, dot, signature = value.rpartition(".")
        stamp = signed.partition(".")[0]
        if not (dot and stamp.isascii() and stamp.isdigit() and len(stamp) <= 12):
            return None
        if not hmac.compare_digest(signature.encode(), self._sign(signed).encode()):
            return None
        expires = int(stamp)
        return float(expires) if expires > self._clock() else None

    def tab_key(self, value: str) -> str:
        """The session key that goes with the cookie ``value``: the dashboard tab holds it
        and sends it as :data:`SESSION_HEADER`. Whoever got only the cookie (another
        port's server) cannot make it without this run's key."""
        return self._sign(f"tab of {value}")

    def _sign(self, what: str) -> str:
        message = f"memlane dashboard session {what}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()


def session_cookies(cookie_header: str) -> list[str]:
    """The values of every dashboard cookie in a ``Cookie`` header (each sign-in has a
    cookie of its own name, :func:`cookie_name`)."""
    values = []
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE_NAME or name.startswith(f"{COOKIE_NAME}_"):
            values.append(value)
    return values


def cookie_name(value: str) -> str:
    """The name of the cookie of the session ``value``: one per sign-in, so signing in
    from a second tab does not replace the cookie the first tab's key goes with."""
    session_id = value.split(".")[1] if value.count(".") == 2 else ""
    return f"{COOKIE_NAME}_{session_id[:12]}"


@dataclass
class SecurityPolicy:
    """Everything the middleware needs to decide; built once by the app factory."""

    token: str
    port: int
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS
    # Where the token is, for the 401 to name ("": not said, `memlane status` shows it).
    token_file: str = ""
    rate_per_minute: int = 200
    write_rate_per_minute: int = 60
    max_body_bytes: int = 1_048_576
    login_codes: LoginCodes = field(default_factory=LoginCodes)
    sessions: DashboardSessions = field(default_factory=DashboardSessions)

    def own_origin(self, origin: str) -> bool:
        """True when ``origin`` is this worker (scheme http, allowed host, our port)."""
        if not origin.startswith("http://"):
            return False
        host, port = split_host(origin[len("http://") :])
        return host in self.allowed_hosts and port == self.port

    def host_allowed(self, header: str) -> bool:
        host, port = split_host(header)
        # A port that is not a number ("127.0.0.1:80.evil.example") is no URL's Host.
        return bool(host) and host in self.allowed_hosts and port != -1

    def bearer_ok(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            value.strip().encode(), self.token.encode()
        )

    def live_cookie(self, cookie_header: str) -> bool:
        """True when ``cookie_header`` holds a live dashboard cookie of this run (with or
        without its tab's key: that tells a missing sign-in from an ended one)."""
        cookies = session_cookies(cookie_header)
        return any(self.sessions.expires_at(value) is not None for value in cookies)

    def session_expiry(self, cookie_header: str, tab_key: str) -> float | None:
        """When the dashboard session ends whose cookie is in ``cookie_header`` and whose
        key is ``tab_key``; None without such a live session."""
        for value in session_cookies(cookie_header):
            expires = self.sessions.expires_at(value)
            key = self.sessions.tab_key(value)
            if expires is not None and hmac.compare_digest(tab_key.encode(), key.encode()):
                return expires
        return None

    def cookie_ok(self, cookie_header: str, tab_key: str) -> bool:
        """A signed-in dashboard tab: a live cookie and the key that goes with it."""
        return self.session_expiry(cookie_header, tab_key) is not None

    def new_session(self) -> tuple[str, str]:
        """A new dashboard session for a redeemed sign-in code: the ``Set-Cookie`` value,
        and the key the tab must send with the cookie (:data:`SESSION_HEADER`)."""
        value = self.sessions.issue()
        cookie = (
            f"{cookie_name(value)}={value}; Max-Age={int(self.sessions.ttl)};"
            " HttpOnly; SameSite=Strict; Path=/"
        )
        return cookie, self.sessions.tab_key(value)

    def proof(self, nonce: str) -> str:
        """Our answer to a client's identity challenge (see :func:`worker_proof`)."""
        return worker_proof(self.token, self.port, nonce)


class BodyTooLarge(Exception):
    """Raised inside ``receive`` when a streamed body passes the limit."""


@dataclass(frozen=True, slots=True)
class Denial:
    """A refusal: the status, the ``error`` code and message of the JSON body, extra headers."""

    status: int
    error: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Incoming:
    """What the checks read from one HTTP request's scope."""

    path: str
    method: str
    headers: dict[str, str]
    client: str  # the peer: a local user's uid, else the address
    origin: str | None
    own_origin: bool  # the request's Origin is this worker
    by_bearer: bool  # carries the bearer token
    by_cookie: bool  # carries a live dashboard cookie and its tab's key (and not the token)
    session_expires: float | None  # when that cookie's session ends
    stale_cookie: bool  # carries only dashboard cookies of an earlier run, or expired ones

    @classmethod
    def of(cls, scope: Scope, policy: SecurityPolicy) -> Incoming:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        by_bearer = policy.bearer_ok(headers.get("authorization", ""))
        # The dashboard's cookie is for the dashboard: MCP clients are programs with the
        # token (a cookie-opened MCP stream would outlive the sign-in, as the feed does not).
        cookie = "" if scope["path"].startswith("/mcp") else headers.get("cookie", "")
        tab_key = headers.get(SESSION_HEADER, "")
        expires = None if by_bearer else policy.session_expiry(cookie, tab_key)
        peer = (scope.get("state") or {}).get(PEER_STATE_KEY)
        return cls(
            path=scope["path"],
            method=scope["method"],
            headers=headers,
            client=str(peer or "addr:" + (scope.get("client") or ("unknown", 0))[0]),
            origin=origin,
            own_origin=origin is not None and policy.own_origin(origin),
            by_bearer=by_bearer,
            by_cookie=expires is not None,
            session_expires=expires,
            stale_cookie=(
                expires is None and bool(session_cookies(cookie)) and not policy.live_cookie(cookie)
            ),
        )

    @property
    def authenticated(self) -> bool:
        return self.by_bearer or self.by_cookie

    def response_headers(self) -> list[tuple[bytes, bytes]]:
        """Headers every response to this request gets besides SECURITY_HEADERS."""
        extra: list[tuple[bytes, bytes]] = []
        if self.own_origin and self.origin is not None:
            extra = [(b"access-control-allow-origin", self.origin.encode()), (b"vary", b"Origin")]
        if self.path.startswith("/api"):
            extra.append((b"cache-control", b"no-store"))
        return extra


class Responder:
    """Sends a request's response with the security headers; answers refusals and preflights."""

    def __init__(self, send: Send, extra: list[tuple[bytes, bytes]]) -> None:
        self._send = send
        self._extra = extra
        self.started = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            message = dict(message)
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS, *self._extra]
        await self._send(message)

    async def deny(self, denial: Denial) -> None:
        body = json.dumps({"error": denial.error, "message": denial.message, "fields": []})
        await self._answer(
            denial.status,
            [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((k.encode(), v.encode()) for k, v in denial.headers),
            ],
            body.encode(),
        )

    async def prove(self, proof: str) -> None:
        """The answer to an identity challenge: no body, the proof in a header."""
        await self._answer(204, [(PROOF_HEADER.encode(), proof.encode())], b"")

    async def preflight(self) -> None:
        """The CORS preflight answer, for our own origin only."""
        allow = [
            (b"access-control-allow-methods", b"GET, POST, PATCH, DELETE"),
            (b"access-control-allow-headers", b"Authorization, Content-Type"),
            (b"access-control-max-age", b"600"),
        ]
        await self._answer(204, allow, b"")

    async def _answer(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        await self.send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Pure ASGI middleware applying :class:`SecurityPolicy` (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy
        self.all_limiter = RateLimiter(policy.rate_per_minute)
        self.write_limiter = RateLimiter(policy.write_rate_per_minute)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Incoming.of(scope, self.policy)
        responder = Responder(send, request.response_headers())
        denial = self.check_host(request) or self.check_origin(request)
        if denial is None and request.method == "OPTIONS" and request.own_origin:
            await responder.preflight()
            return
        nonce = request.headers.get(CHALLENGE_HEADER)
        if denial is None and nonce is not None and request.path == "/health":
            # Before the rate limit: another user's flood must not stop the CLI from
            # checking whom it talks to. An HMAC costs no more than a 429.
            denial = self.check_nonce(nonce)
            if denial is None:
                await responder.prove(self.policy.proof(nonce))
                return
        if denial is None:  # the rate check takes a token: only for requests that got here
            denial = (
                self.check_rate(request)
                or self.check_auth(request)
                or self.check_declared_size(request)
            )
        if denial is not None:
            await responder.deny(denial)
            return
        if request.by_cookie:
            # The live feed ends a dashboard's stream when its sign-in does.
            scope.setdefault("state", {})[SESSION_STATE_KEY] = request.session_expires
        if request.path.startswith("/mcp"):
            budget = functools.partial(self.write_limiter.check, self.bucket(request))
            scope.setdefault("state", {})[WRITE_BUDGET_STATE_KEY] = budget
        if request.authenticated and (admitted := scope.get("state", {}).get(ADMITTED_STATE_KEY)):
            admitted()  # the worker is in use (memlane.worker.lifecycle.track_requests)
        await self.forward(scope, receive, responder)

    def check_host(self, request: Incoming) -> Denial | None:
        """1. The Host header names this worker (DNS rebinding guard)."""
        if self.policy.host_allowed(request.headers.get("host", "")):
            return None
        return Denial(
            403,
            "forbidden_host",
            "this worker only answers to its own host names (DNS rebinding guard);"
            " use http://127.0.0.1:<port>",
        )

    def check_origin(self, request: Incoming) -> Denial | None:
        """2. A foreign Origin never reaches the API, MCP or the sign-in."""
        guarded = request.path.startswith(("/api", "/mcp", "/auth"))
        if guarded and request.origin is not None and not request.own_origin:
            return Denial(
                403, "forbidden_origin", f"requests from origin {request.origin!r} are refused"
            )
        return None

    def check_nonce(self, nonce: str) -> Denial | None:
        """3. An identity challenge is a short URL-safe string."""
        if 16 <= len(nonce) <= MAX_NONCE_CHARS and NONCE_CHARS.issuperset(nonce):
            return None
        return Denial(
            400, "bad_challenge", f"{CHALLENGE_HEADER} must be 16-{MAX_NONCE_CHARS} URL-safe chars"
        )

    def check_rate(self, request: Incoming) -> Denial | None:
        """4. The client's token buckets: everything, and writes apart; authenticated
        requests have buckets of their own."""
        if not request.path.startswith(LIMITED_PREFIXES):
            return None
        # Every MCP message is a POST: the MCP app takes a write for the tool calls that
        # write (WRITE_BUDGET_STATE_KEY), the others count as reads.
        is_write = (
            request.method in WRITE_METHODS
            and request.path not in READ_POSTS
            and not request.path.startswith("/mcp")
        )
        bucket = self.bucket(request)
        wait = self.all_limiter.check(bucket)
        if not wait and is_write:
            wait = self.write_limiter.check(bucket)
        if not wait:
            return None
        retry = str(max(1, math.ceil(wait)))
        return Denial(
            429, "rate_limited", "too many requests; retry later", (("retry-after", retry),)
        )

    @staticmethod
    def bucket(request: Incoming) -> str:
        """The rate buckets' key: the client, and whether the request is authenticated."""
        return f"{'auth' if request.authenticated else 'anon'} {request.client}"

    def check_auth(self, request: Incoming) -> Denial | None:
        """5. The bearer token, or the dashboard cookie and its tab's key, with our Origin
        on writes (CSRF)."""
        if not request.path.startswith(PROTECTED_PREFIXES):
            return None
        if not request.authenticated and request.stale_cookie:
            return Denial(
                401,
                "session_ended",
                "this dashboard session has ended (the worker restarted since you signed in,"
                " or the sign-in expired): run `memlane dashboard` to sign in again",
                (("www-authenticate", "Bearer"),),
            )
        if not request.authenticated:
            where = self.policy.token_file or "the worker's token file"
            return Denial(
                401,
                "unauthorized",
                f"missing or bad token: send 'Authorization: Bearer <token>' (the token is"
                f" in {where}; `memlane status` shows where) or open the dashboard with"
                " `memlane dashboard`",
                (("www-authenticate", "Bearer"),),
            )
        if request.by_cookie and request.method in WRITE_METHODS and not request.own_origin:
            # A browser always sends Origin on writes; without it the cookie alone
            # must not authorize a change.
            return Denial(403, "forbidden_origin", "writes from the dashboard need its Origin")
        return None

    def check_declared_size(self, request: Incoming) -> Denial | None:
        """6a. A declared body over the limit is refused before it is read."""
        declared = request.headers.get("content-length")
        limit = self.policy.max_body_bytes
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return Denial(413, "body_too_large", f"request body over {limit} bytes")
        return None

    async def forward(self, scope: Scope, receive: Receive, responder: Responder) -> None:
        """6b. Hand the request to the app, cutting a streamed body at the limit."""
        limit = self.policy.max_body_bytes
        received = 0

        async def receive_limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        try:
            await self.app(scope, receive_limited, responder.send)
        except BodyTooLarge:
            if not responder.started:
                await responder.deny(
                    Denial(413, "body_too_large", f"request body over {limit} bytes")
                )


def describe_policy(policy: SecurityPolicy) -> dict[str, Any]:
    """What the worker logs at start (no secrets)."""
    return {
        "allowed_hosts": sorted(policy.allowed_hosts),
        "rate_per_minute": policy.rate_per_minute,
        "write_rate_per_minute": policy.write_rate_per_minute,
        "max_body_bytes": policy.max_body_bytes,
    }
