"""sha256 as hex, without loading OpenSSL: the hook path hashes on every call.

``hashlib`` loads OpenSSL (milliseconds per process); CPython's builtin ``_sha256``
module gives the same digest without it. No ``__future__`` import: the hook relay's
launcher loads this module and nothing it does not need.
"""


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``, in hex."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest
