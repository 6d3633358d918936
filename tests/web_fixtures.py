"""The HTTP fixtures shared by the web tests: a live worker app and a client with the token.

A pytest plugin (``pytest_plugins`` in ``conftest.py``), so the tests ask for ``server``
or ``client`` by name; a module that needs another server (a shorter poll interval,
seeded data) defines its own ``server``, which takes precedence there.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from memlane.service import Memory
from tests.test_web_support import LiveServer


@pytest.fixture
def server(memory: Memory) -> Iterator[LiveServer]:
    """The worker app on a free loopback port, over ``memory``."""
    live = LiveServer(memory).start()
    yield live
    live.stop()


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    """An HTTP client for ``server`` that sends its token."""
    with httpx.Client(base_url=server.base_url, headers=server.auth(), timeout=10) as c:
        yield c
