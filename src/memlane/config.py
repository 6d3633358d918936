"""Settings: flags > ``MEMLANE_*`` env > ``config.toml`` > defaults, read once.

The config file is ``config.toml`` in the config directory, or the file named
by ``MEMLANE_CONFIG`` or the global ``--config PATH`` option (the flag wins).
A named file that does not exist is refused as one that cannot be read (the user
who named it expects its settings); a missing ``config.toml`` is no config.
Every key is optional and documented in ``SPECS``. A key in a section is
written ``section.key`` (``maintenance.max_age_days``); its environment
variable is ``MEMLANE_`` + the upper-cased key with dots as underscores
(``MEMLANE_MAINTENANCE_MAX_AGE_DAYS``). An unknown key yields a one-line warning.
A bad value — the wrong type, or a number outside the key's range in ``SPECS`` —
is one :func:`coerce` refuses: ``config set`` does not write it, a command run by
a person and the scheduled maintenance refuse to start on it
(``load_settings(strict=True)``; the maintenance logs the command's message in one line),
and a hook or the worker use the key's default and log one line. A value out of range
is never clamped: the nearest bound of a retention key is its most destructive value
(``maintenance.max_age_days = 0`` pruned all but a day). Two problems raise
:class:`ConfigError` for every caller, ``strict`` or not: a config file that cannot be
read or a named one that does not exist (defaults would undo all of it: a longer
retention, the excluded projects) and a bad value of a key in ``GUARDS`` (an invalid
secret pattern skipped stored what it should have masked). A command exits 2 on it,
the worker and the MCP server do not start, the scheduled maintenance does not run,
and a hook logs one line and stores nothing.

Stdlib only: the hook path loads settings on every prompt.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from memlane.errors import ConfigError
from memlane.models import FUSIONS, SCOPES, SEARCH_MODES
from memlane.paths import StatePaths, check_state_dirs, others_can_write, state_paths

TYPE_CHECKING = False  # typing is not imported at run time: hook path
if TYPE_CHECKING:
    from typing import Any


# Keyword-only scores run higher than hybrid ones for the same (ir)relevance: the
# best keyword hit's BM25 part is always 1 (relative to itself) and long chunks share
# common words with any prompt. Measured with benchmarks/recall_floor.py --sources
# coding,coding-bg,lme --distractors 4 (keyword columns): from 0.40 to 0.35, related
# prompts answered rise 0.68 -> 0.76 (coding), 0.59 -> 0.68 (with real transcripts as
# background), 0.79 -> 0.83 (LongMemEval), while prompts with nothing relevant that
# get anything go 0.00 -> 0.00, 0.19 -> 0.22, 0.01 -> 0.02; at 0.30 LongMemEval's
# rises to 0.07.
KEYWORD_RECALL_MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class Spec:
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None


# A context pack's token budget, wherever one is given: context_token_budget, the CLI's
# --budget, HTTP's and MCP's budget (schemas.Budget).
MIN_CONTEXT_BUDGET = 100
MAX_CONTEXT_BUDGET = 20_000

SPECS: dict[str, Spec] = {
    "recall_limit": Spec(3, "memories injected per prompt at most", 0, 20),
    "recall_max_chars": Spec(1200, "characters injected per prompt at most", 300, 9000),
    "min_relevance_score": Spec(
        0.30,
        "injected recall drops hits scoring below this (0..1; keyword-only recall needs"
        f" {KEYWORD_RECALL_MARGIN:.2f} more); 0 turns on the relaxation cascade",
        0.0,
        1.0,
    ),
    "context_token_budget": Spec(
        2000,
        "token budget of the SessionStart context pack",
        MIN_CONTEXT_BUDGET,
        MAX_CONTEXT_BUDGET,
    ),
    "scope": Spec("tiered", "project scope of recall", choices=SCOPES),
    "cross_project_penalty": Spec(
        0.5, "score factor for hits from other projects in tiered scope", 0.0, 1.0
    ),
    "recency_half_life_days": Spec(30.0, "age at which the recency signal halves", 0.1, 3650.0),
    "session_idle_hours": Spec(4.0, "idle sessions are auto-closed after this", 0.1, 720.0),
    "search_mode": Spec("hybrid", "default search mode", choices=SEARCH_MODES),
    "search.fusion": Spec(
        "calibrated",
        "how hybrid search fuses keyword and semantic candidates (calibrated scores, or"
        " reciprocal rank fusion)",
        choices=FUSIONS,
    ),
    "embedder": Spec("use", "embedding provider", choices=("use", "toy", "e5", "none")),
    "exclude_projects": Spec([], "glob patterns of project paths never captured"),
    "capture_home_and_tmp": Spec(False, "capture sessions started in ~ or /tmp"),
    "capture.unit_chars": Spec(
        900,
        "characters of a transcript unit at most (a request, a paragraph, a tool call)",
        200,
        8000,
    ),
    "capture.output_head_lines": Spec(
        120, "first lines of a long tool result a unit keeps", 0, 100_000
    ),
    "capture.output_tail_lines": Spec(
        30, "last lines of a long tool result a unit keeps", 0, 100_000
    ),
    "secret_patterns": Spec([], "extra regular expressions masked as [REDACTED:custom]"),
    "log_level": Spec(
        "warning", "log level of memlane's own log", choices=("debug", "info", "warning", "error")
    ),
    "worker.autostart": Spec(
        True, "SessionStart and prompt hooks start the worker when it is not running"
    ),
    "worker.host": Spec("127.0.0.1", "address the worker binds"),
    "worker.port": Spec(
        37777, "preferred worker port (a free one is picked if taken)", 1024, 65535
    ),
    "worker.idle_exit_minutes": Spec(
        30.0,
        "the worker exits after this many minutes without a request or a relayed hook (0: never)",
        0.0,
        10080.0,
    ),
    "maintenance.enabled": Spec(True, "run maintenance automatically after capture"),
    "maintenance.interval_hours": Spec(
        24.0, "hours between automatic maintenance runs", 1.0, 720.0
    ),
    "maintenance.max_age_days": Spec(90, "delete non-knowledge memories older than this", 1, 36500),
    "maintenance.max_db_size_mb": Spec(100, "keep the database under this size", 5, 1_000_000),
}


# Keys older configs may still carry: accepted, ignored, and named in a warning.
RETIRED: dict[str, str] = {
    "worker.recall_timeout_ms": "hooks reach the worker only through the relay"
    " (its timeout: MEMLANE_RELAY_TIMEOUT_MS)",
}


def retired_warning(key: str, where: str) -> str:
    """The one-line notice for a retired ``key`` found in ``where``."""
    return f"config: {key} ({where}) is no longer used: {RETIRED[key]}; remove it"


def env_var(key: str) -> str:
    return "MEMLANE_" + key.replace(".", "_").upper()


def _default(key: str) -> Any:
    """The default of ``key`` as Settings holds it (lists become tuples)."""
    value = SPECS[key].default
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True, slots=True)
class Settings:
    """Validated settings. Attribute names are the keys with dots as ``__``."""

    recall_limit: int = _default("recall_limit")
    recall_max_chars: int = _default("recall_max_chars")
    min_relevance_score: float = _default("min_relevance_score")
    context_token_budget: int = _default("context_token_budget")
    scope: str = _default("scope")
    cross_project_penalty: float = _default("cross_project_penalty")
    recency_half_life_days: float = _default("recency_half_life_days")
    session_idle_hours: float = _default("session_idle_hours")
    search_mode: str = _default("search_mode")
    search__fusion: str = _default("search.fusion")
    embedder: str = _default("embedder")
    exclude_projects: tuple[str, ...] = _default("exclude_projects")
    capture_home_and_tmp: bool = _default("capture_home_and_tmp")
    capture__unit_chars: int = _default("capture.unit_chars")
    capture__output_head_lines: int = _default("capture.output_head_lines")
    capture__output_tail_lines: int = _default("capture.output_tail_lines")
    secret_patterns: tuple[str, ...] = _default("secret_patterns")
    log_level: str = _default("log_level")
    worker__autostart: bool = _default("worker.autostart")
    worker__host: str = _default("worker.host")
    worker__port: int = _default("worker.port")
    worker__idle_exit_minutes: float = _default("worker.idle_exit_minutes")
    maintenance__enabled: bool = _default("maintenance.enabled")
    maintenance__interval_hours: float = _default("maintenance.interval_hours")
    maintenance__max_age_days: int = _default("maintenance.max_age_days")
    maintenance__max_db_size_mb: int = _default("maintenance.max_db_size_mb")
    paths: StatePaths = field(default_factory=state_paths, compare=False)
    db_target: str | None = None  # path or postgresql:// URL; None means paths.db_path

    def get(self, key: str) -> Any:
        return getattr(self, key.replace(".", "__"))

    def as_dict(self) -> dict[str, Any]:
        return {key: self.get(key) for key in SPECS}

    @property
    def database(self) -> str:
        return self.db_target if self.db_target is not None else str(self.paths.db_path)

    @property
    def database_display(self) -> str:
        """The database target fit for logs and status output (never a password)."""
        return display_target(self.database)


# The libpq connection keywords a connection string is written with: one followed by "="
# makes a target a keyword string (``host=db user=me password=… dbname=mem``).
LIBPQ_KEYWORDS = frozenset(
    {
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "service",
        "sslmode",
        "sslpassword",
        "options",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
    }
)


def is_libpq_keywords(target: str) -> bool:
    """True when ``target`` reads as a libpq keyword connection string
    (``host=… user=… password=… dbname=…``, blanks around ``=`` allowed) rather than a file
    path: a whole word before an ``=`` is one of libpq's keywords. A path with such a word
    inside a component (``/srv/user=me/memlane.db``) is a path."""
    if "=" not in target or "://" in target:
        return False
    words = target.replace("=", " = ").split()
    return any(
        word == "=" and at > 0 and words[at - 1].lower() in LIBPQ_KEYWORDS
        for at, word in enumerate(words)
    )


def display_target(target: str) -> str:
    """``target`` fit to show: a database URL without its password and query; a path
    unchanged; a libpq keyword string (which memlane refuses) by a placeholder.

    A malformed URL is shown the same way (psycopg refuses it later, and its error must not
    repeat the password): whatever stands before the URL's last ``@``, but the user name, may
    be password (an unescaped ``@``, ``/`` or ``?`` in it), and the query may hold one.
    """
    if is_libpq_keywords(target):
        return "<libpq keyword string>"
    if "://" not in target:
        return target
    scheme, _, rest = target.partition("://")
    userinfo, at, location = rest.rpartition("@")
    user = userinfo
    for stop in ":@/?#":
        user = user.split(stop, 1)[0]
    location = location.split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{user + '@' if at and user else ''}{location}"


def _attr(key: str) -> str:
    return key.replace(".", "__")


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, full + "."))
        else:
            out[full] = value
    return out


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@functools.lru_cache(maxsize=8)
def _patterns(patterns: tuple[str, ...]) -> None:
    r"""ValueError naming the first of ``patterns`` the filter cannot compile. ``re``
    checks them first: loading the config on the hook path need not load the filter.
    The filter compiles with ``regex`` (:func:`memlane.secret_rules.compile_custom`),
    which also reads what ``re`` refuses (``\p{Lu}``, ``(?<name>…)``): a pattern ``re``
    refuses or warns about (``[[:alpha:]]``: a FutureWarning on stderr, from a hook) is
    asked of it before it is refused."""
    import re
    import warnings

    for number, pattern in enumerate(patterns, 1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                re.compile(pattern)
        # re refuses "(?u)(?a)x" with a ValueError, "a{4294967296}" with an OverflowError and
        # a pattern nested 1,000 deep with a RecursionError.
        except (re.error, ValueError, TypeError, OverflowError, RecursionError, Warning):
            from memlane.secret_rules import compile_custom

            compile_custom(pattern, number)  # its refusal in its words


def coerce(key: str, raw: Any, where: str | None = None) -> tuple[Any, str | None]:
    """Validate ``raw`` for ``key``: (value, warning or None). Strings from env are parsed.

    ``where`` (e.g. the config file) is named in the warning after the key.
    """
    spec = SPECS[key]
    place = f" in {where}" if where else ""
    default = spec.default
    try:
        if isinstance(default, bool):
            if isinstance(raw, bool):
                return raw, None
            text = str(raw).strip().lower()
            if text in _TRUE:
                return True, None
            if text in _FALSE:
                return False, None
            raise ValueError("expected true or false")
        if isinstance(default, int | float):
            if isinstance(raw, bool):
                raise ValueError("expected a number")
            try:
                number = float(raw) if isinstance(default, float) else int(str(raw).strip())
            except (ValueError, TypeError, OverflowError):  # their text repeats the value
                whole = "" if isinstance(default, float) else "whole "
                raise ValueError(f"expected a {whole}number") from None
            if number != number:  # NaN passes every range check: refuse it
                raise ValueError("expected a number, got NaN")
            if (spec.minimum is not None and number < spec.minimum) or (
                spec.maximum is not None and number > spec.maximum
            ):
                return default, (
                    f"config: {key}={_shown(raw)}{place} is outside"
                    f" [{spec.minimum}, {spec.maximum}]; using default {default!r}"
                )
            return number, None
        if isinstance(default, list):
            if isinstance(raw, str):
                items = [part.strip() for part in raw.split(",") if part.strip()]
            elif isinstance(raw, list) and all(isinstance(item, str) for item in raw):
                items = list(raw)
            else:
                raise ValueError("expected a list of strings")
            for item in items:
                _utf8(item)
            if key == "secret_patterns" and items:
                _patterns(tuple(items))
            return tuple(items), None
        text = _utf8(str(raw).strip())
        if spec.choices is not None and text not in spec.choices:
            raise ValueError("expected one of " + ", ".join(spec.choices))
        return text, None
    except (ValueError, TypeError, OverflowError) as exc:  # a list or table where a number goes
        fallback = tuple(default) if isinstance(default, list) else default
        return fallback, (
            f"config: bad value {_shown(raw)} for {key}{place} ({exc}); using default {default!r}"
        )


def _utf8(text: str) -> str:
    """``text`` when it is UTF-8 text; an argument or variable holding other bytes
    (``$'\\xff'``) arrives as lone surrogates, which no file can be written with."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not UTF-8 text") from None
    return text


def _shown(raw: Any) -> str:
    """``raw`` quoted for a warning: short and filtered (a value in the wrong key, or an
    environment variable, may be a secret)."""
    from memlane.privacy import excerpt

    return excerpt(raw)


# Keys whose default would store what the user's value keeps out (text a pattern masks,
# an excluded project's sessions): a bad value refuses every caller, a hook too.
GUARDS = frozenset({"secret_patterns", "exclude_projects"})

# A settings file of a few dozen lines; one larger is not a config memlane wrote.
MAX_CONFIG_BYTES = 1 << 20


def read_config_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Flattened keys of a TOML file, or ({}, [problem]) when it cannot be read.

    A missing file is an empty one; the problem names the file and the reason. A file
    (or a link's target: dotfiles are often links) that another user owns or that other
    users can write (:func:`memlane.paths.others_can_write`) is not read: whoever can
    write it could turn capture off, bind the worker to every interface, name another
    database or make maintenance delete a day's memories. Writable by the user's private
    group (the usual umask 002) stays readable.
    """
    if not path.exists():
        return {}, []
    import tomllib  # only when there is a file: saves milliseconds on every hook

    try:
        # Without waiting: a FIFO there hung every command and hook (stat first, then open,
        # would race with a file replaced in between).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return {}, [f"{path} is not a regular file; not read"]
            if info.st_size > MAX_CONFIG_BYTES:
                return {}, [
                    f"{path} is {info.st_size:,} bytes (at most {MAX_CONFIG_BYTES:,}); not read"
                ]
            if info.st_uid not in (os.geteuid(), 0):
                return {}, [f"{path} belongs to another user (uid {info.st_uid}); not read"]
            if others_can_write(info):
                mode = info.st_mode & 0o777
                return {}, [
                    f"{path} can be written by other users (mode {mode:o}); not read:"
                    f" run `chmod 600 {path}`"
                ]
            return _flatten(tomllib.load(handle)), []
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"cannot read {path} ({exc})"]
    except RecursionError:  # tomllib reads nested arrays recursively
        return {}, [f"cannot read {path} (nested too deep)"]


def load_settings(
    *,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    db_target: str | None = None,
    config_path: str | Path | None = None,
    strict: bool = False,
) -> tuple[Settings, list[str]]:
    """Build Settings from defaults, the config file, MEMLANE_* env and overrides.

    ``config_path`` (the ``--config`` flag) names the config file, over
    ``MEMLANE_CONFIG`` and the default ``config.toml``. ``strict`` (a command run by a
    person) raises :class:`ConfigError` for the first bad value instead of using the
    key's default: the person can fix it, a hook's user never sees the warning. An
    unreadable file and a bad value of a ``GUARDS`` key raise whatever ``strict``.
    """
    env = dict(os.environ) if environ is None else environ
    paths = config_paths(env, config_path)
    file = paths.config_path
    values: dict[str, Any] = {}
    warnings: list[str] = []
    bad: list[str] = []  # values coerce refused: the default is used, or strict raises

    def take(key: str, raw: Any, where: str | None) -> None:
        values[key], warning = coerce(key, raw, where)
        if warning is None:
            return
        if key in GUARDS:
            raise ConfigError(refusal(warning))
        bad.append(warning)
        warnings.append(warning)

    if paths.config_file is not None and not file.is_file():
        named_by, then = (
            ("--config", "give another --config")
            if config_path is not None
            else ("MEMLANE_CONFIG", "unset MEMLANE_CONFIG")
        )
        raise ConfigError(
            unreadable(f"no config file at {file} (named by {named_by})", f"create it or {then}")
        )
    file_values, problems = read_config_file(file)
    if problems:
        raise ConfigError(unreadable(problems[0]))
    for key, raw in file_values.items():
        if key in RETIRED:
            warnings.append(retired_warning(key, str(file)))
        elif key not in SPECS:
            warnings.append(f"config: unknown key {key!r} in {file}; ignored")
        else:
            take(key, raw, str(file))
    warnings.extend(
        retired_warning(key, f"env {env_var(key)}") for key in RETIRED if env_var(key) in env
    )
    for key in SPECS:
        raw_env = env.get(env_var(key))
        if raw_env is not None:
            take(key, raw_env, f"env {env_var(key)}")
    for key, raw in (overrides or {}).items():
        if key in RETIRED:
            warnings.append(retired_warning(key, "override"))
        elif key not in SPECS:
            warnings.append(f"config: unknown key {key!r}; ignored")
        else:
            take(key, raw, None)
    if strict and bad:
        raise ConfigError(refusal(bad[0]))
    # An empty --db or MEMLANE_DB is kept, for the store to refuse: read as absent, it put
    # a script's team memory (`--db "$TEAM_DB"`, the variable unset) in the personal one.
    target = db_target if db_target is not None else env.get("MEMLANE_DB")
    settings = Settings(paths=paths, db_target=target)
    settings = replace(settings, **{_attr(k): v for k, v in values.items()})
    return settings, warnings


def config_paths(environ: dict[str, str], config_path: str | Path | None = None) -> StatePaths:
    """The state paths, with ``config_path`` (the ``--config`` flag) as the config file:
    where `config path` and `config set` look without reading the settings (a file
    they are there to fix would refuse them)."""
    paths = state_paths(environ)
    check_state_dirs(paths)  # before trusting a config file found there
    if config_path is not None:
        paths = replace(paths, config_file=Path(config_path).expanduser().absolute())
    return paths


def unreadable(problem: str, then: str = "fix the file") -> str:
    """A config file that cannot be read (or is named and missing), as the refusal every
    caller gives: in place of the file's settings, defaults would undo what the user set
    there."""
    return f"config: {problem}; {then} (memlane does not run on defaults in its place)"


def refusal(warning: str, then: str = "fix or remove it (`memlane config set KEY VALUE`)") -> str:
    """:func:`coerce`'s warning said as the refusal it is where nothing falls back to the
    default: its "; using default …" becomes ``then``."""
    head, found, _ = warning.removeprefix("config: ").rpartition("; using ")
    return f"{head if found else warning.removeprefix('config: ')}; {then}"


def setting_names() -> list[str]:
    return [f.name for f in fields(Settings)]
