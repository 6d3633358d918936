"""Where memlane keeps its state, and creating it privately.

``MEMLANE_HOME`` moves everything (database, config, logs, runtime files) under
one directory — what tests use. Otherwise the XDG base directories apply.
``MEMLANE_CONFIG`` (or the global ``--config`` option) names another config
file. Directories are created 0700 and files 0600.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class StatePaths:
    data_dir: Path
    config_dir: Path
    log_dir: Path
    runtime_dir: Path
    config_file: Path | None = None  # named by MEMLANE_CONFIG or --config

    @property
    def db_path(self) -> Path:
        return self.data_dir / "memlane.db"

    @property
    def config_path(self) -> Path:
        return self.config_file or self.config_dir / "config.toml"


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def state_paths(environ: Mapping[str, str] | None = None) -> StatePaths:
    """Resolve the state directories from the environment (read once per call)."""
    env = os.environ if environ is None else environ
    named = env.get("MEMLANE_CONFIG")
    config_file = Path(named).expanduser().absolute() if named else None
    home = env.get("MEMLANE_HOME")
    if home:
        root = Path(home).expanduser()
        return StatePaths(root, root, root / "logs", root / "run", config_file)
    data = _xdg(env, "XDG_DATA_HOME", ".local/share") / "memlane"
    config = _xdg(env, "XDG_CONFIG_HOME", ".config") / "memlane"
    state = _xdg(env, "XDG_STATE_HOME", ".local/state") / "memlane"
    return StatePaths(data, config, state / "logs", state / "run", config_file)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 if missing."""
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A parent we do not own may refuse; the creation mode then stands.
        with contextlib.suppress(OSError):
            path.chmod(0o700)
    return path


def ensure_private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if missing; tighten its mode if present.

    An existing file is never opened: closing any descriptor of a SQLite
    database drops every POSIX lock the process holds on it, which lets other
    processes write underneath an open connection and corrupts the file.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        ensure_private_dir(path.parent)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        return path
    if mode & 0o077:
        path.chmod(0o600)
    return path


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` atomically to a 0600 file."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
