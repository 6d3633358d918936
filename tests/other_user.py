"""Another local user, for the tests of what one can do to memlane (not a test module).

When the suite runs as root, :func:`other_user` makes a locked system account
(``useradd --system``, as ``scripts/pg_server.py`` does for PostgreSQL) and
:func:`spawn_as` runs a stdlib-only Python script under it. Without root, or
without an interpreter that account can execute, those tests skip.

The script runs with ``/usr/bin/python3``: the venv's interpreter may live
under a 0700 home (``/root/.pyenv``) that the other account cannot enter.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

PROBE_USER = "memlane-probe"
PYTHON = "/usr/bin/python3"
RUN_MARKER = "MEMLANE_TEST_RUN"


def _create(name: str) -> None:
    cmd = ["useradd", "--system", "--user-group", "--no-create-home"]
    cmd += ["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name]
    subprocess.run(cmd, check=False, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)


def _env() -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/"}
    if RUN_MARKER in os.environ:  # scripts/leftovers.py finds what a run left behind by it
        env[RUN_MARKER] = os.environ[RUN_MARKER]
    return env


def account() -> pwd.struct_passwd:
    """The other user (created on first use); skips the test when that is not possible."""
    if os.geteuid() != 0:
        pytest.skip("another local user needs root to create (the suite runs as root in CI)")
    if shutil.which("useradd") is None or not Path(PYTHON).exists():
        pytest.skip(f"useradd or {PYTHON} is missing")
    try:
        return pwd.getpwnam(PROBE_USER)
    except KeyError:
        _create(PROBE_USER)  # another xdist worker may create it at the same moment: re-read
    try:
        return pwd.getpwnam(PROBE_USER)
    except KeyError:
        pytest.skip(f"could not create the system user {PROBE_USER}")


def runnable_account() -> pwd.struct_passwd:
    """:func:`account`, checked to run :data:`PYTHON` (the ``other_user`` fixture)."""
    user = account()
    probe = spawn_as(user, "print('ok')")
    out, _ = probe.communicate(timeout=60)
    if probe.returncode != 0 or out.strip() != b"ok":
        pytest.skip(f"{PROBE_USER} cannot run {PYTHON}")
    return user


def spawn_as(user: pwd.struct_passwd, code: str, *args: str) -> subprocess.Popen[bytes]:
    """``python3 -c code args…`` as ``user``; stdin, stdout and stderr are pipes."""
    return subprocess.Popen(
        [PYTHON, "-c", code, *args],
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        env=_env(),
        cwd="/",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
