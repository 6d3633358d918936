"""The one exception hierarchy of memlane.

The core raises these domain errors; each adapter turns them into its own form
(CLI: a one-line message and exit code; HTTP: status + JSON; MCP: an error
result). Messages name the thing and the next step.

    MemlaneError
    ├── NotFound          (exit 3, HTTP 404)  no such memory / session / file
    ├── InvalidInput      (exit 2, HTTP 422)  a bad argument, date, record or query
    │   └── NothingToStore                   text empty once private parts are removed
    ├── ConfigError       (exit 2)            a config file that cannot be used
    ├── StoreError        (exit 4, HTTP 503)  the database failed or is unreachable
    │   └── RecordRefused (exit 2, HTTP 422)  it refuses a value given (again if retried)
    ├── MissingDependency (exit 5)            an optional extra is not installed
    └── Conflict          (exit 6, HTTP 409)  e.g. a second worker on one database
"""

from __future__ import annotations


class MemlaneError(Exception):
    """Base of every error memlane raises on purpose."""

    exit_code = 1
    http_status = 500


class NotFound(MemlaneError):
    exit_code = 3
    http_status = 404


class InvalidInput(MemlaneError):
    exit_code = 2
    http_status = 422


class NothingToStore(InvalidInput):
    """The text to store is empty, as given or after privacy filtering (capture skips it
    quietly)."""


class ConfigError(MemlaneError):
    exit_code = 2
    http_status = 500


class StoreError(MemlaneError):
    exit_code = 4
    http_status = 503


class RecordRefused(StoreError):
    """The database refuses a value given to it (a constraint, a value too large or of the
    wrong type): unlike the other StoreErrors (busy, full, read-only, unreachable), giving
    it again is refused again. So it is answered as an invalid input is (exit 2, HTTP
    422), not with the 503 that tells a client to retry later."""

    exit_code = InvalidInput.exit_code
    http_status = InvalidInput.http_status


def write_may_succeed_later(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be written now (a StoreError other than
    :class:`RecordRefused`), so what was to be written is worth keeping for a later try:
    the one rule of the hooks' spool, for a capture given up on and for one replayed."""
    return isinstance(exc, StoreError) and not isinstance(exc, RecordRefused)


class MissingDependency(MemlaneError):
    exit_code = 5
    http_status = 501

    @classmethod
    def for_extra(cls, module: str, extra: str) -> MissingDependency:
        return cls(f"{module} is not installed (try {cls.install_hint(extra)})")

    @staticmethod
    def install_hint(extra: str) -> str:
        """How to install ``extra`` into this memlane, the command alone in backticks:
        from the folder it was installed from, with this interpreter's pip. memlane is not
        on PyPI, where ``memlane[…]`` could fetch a stranger's package."""
        import shlex
        import sys

        found = _installed_from()
        if found is None:
            return f"`pip install -e '.[{extra}]'` in your memlane clone"
        source, editable = found
        target = shlex.quote(f"{source}[{extra}]")
        return f"`{shlex.quote(sys.executable)} -m pip install {'-e ' if editable else ''}{target}`"


def _installed_from() -> tuple[str, bool] | None:
    """The local folder memlane was installed from and whether editably (pip records both
    in ``direct_url.json``); None when it came from elsewhere or the folder is gone."""
    import json
    from importlib import metadata
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    try:
        origin = json.loads(metadata.distribution("memlane").read_text("direct_url.json") or "")
        url = urlparse(origin["url"])
        editable = bool(origin.get("dir_info", {}).get("editable"))
    except (metadata.PackageNotFoundError, ValueError, TypeError, KeyError, AttributeError):
        return None
    source = Path(unquote(url.path))
    if url.scheme != "file" or not (source / "pyproject.toml").is_file():
        return None
    return str(source), editable


class Conflict(MemlaneError):
    exit_code = 6
    http_status = 409
