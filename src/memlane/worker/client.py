"""The CLI's HTTP client of the worker: the token goes only to a listener that proves it holds it.

The port in the runtime file is a hint. After a worker crash (and pid reuse)
another local user's program may listen on it, and sending that program
``Authorization: Bearer <token>`` would hand it every memory. So each call
first challenges the listener on the very connection it will use: ``GET
/health`` with a fresh nonce in ``X-Memlane-Challenge``. The request carrying
the token follows on that connection only if the answer is
:func:`~memlane.runtime.worker_proof` of the nonce and this port, which only a
holder of the token can compute. The connection never reopens by itself, so
the token cannot reach a second, unchecked listener.
"""

from __future__ import annotations

import hmac
import http.client
import json
import secrets
from dataclasses import dataclass
from typing import Any

from memlane.errors import Conflict, StoreError
from memlane.runtime import CHALLENGE_HEADER, PROOF_HEADER, WorkerInfo, worker_proof


class WorkerUnreachable(StoreError):
    """Nothing answers at the worker's address (or it hung up)."""


class NotOurWorker(Conflict):
    """The listener at the worker's address could not prove it holds the token."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _connect_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host  # noqa: S104


def _host_header(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def call(
    info: WorkerInfo,
    token: str,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    timeout: float = 5.0,
) -> Reply:
    """One authenticated request to the worker ``info`` names, after it proved itself.

    Raises :class:`NotOurWorker` (the token was not sent) or
    :class:`WorkerUnreachable`.
    """
    host = _connect_host(info.host)
    where = _host_header(host, info.port)
    conn = http.client.HTTPConnection(host, info.port, timeout=timeout)
    headers = {"Host": where}
    try:
        _challenge(conn, headers, token, info.port, where)
        conn.auto_open = 0  # a closed connection raises instead of dialling again, unchecked
        headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return Reply(response.status, response.read())
    except (OSError, http.client.HTTPException) as exc:
        raise WorkerUnreachable(f"the worker at http://{where} does not answer ({exc})") from None
    finally:
        conn.close()


def _challenge(
    conn: http.client.HTTPConnection, headers: dict[str, str], token: str, port: int, where: str
) -> None:
    nonce = secrets.token_urlsafe(32)
    conn.request("GET", "/health", headers={**headers, CHALLENGE_HEADER: nonce})
    response = conn.getresponse()
    response.read()
    answer = (response.getheader(PROOF_HEADER) or "").encode("latin-1", "replace")
    expected = worker_proof(token, port, nonce).encode()
    if response.status != 204 or not hmac.compare_digest(answer, expected):
        raise NotOurWorker(
            f"the program listening on {where} is not this user's memlane worker (it could not"
            " prove it holds the token), so the token was not sent; if memlane's worker runs,"
            " restart it (`memlane stop`, then `memlane serve --daemon`)"
        )
