"""Every test starts without the providers' standard variables, whatever the shell that
runs the tests exports: runs inherit them (``backstay.adapters.provider_env``), and a
test says itself which ones it sets.

``redis_server`` is one real ``redis-server`` for the whole test process (started on first
use, stopped by PID at the end); ``redis_location`` a fresh namespace on it per test."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator

import pytest
from tests.redis_server import RedisServer, start_redis

from backstay.adapters.provider_env import declared_env
from backstay.adapters.registry import BUILTIN_ADAPTERS, adapter_class
from backstay.store.location import StoreLocation, parse_store

PROVIDER_VARIABLES = sorted(
    {name for adapter in BUILTIN_ADAPTERS for name in declared_env(adapter_class(adapter)).names}
)


@pytest.fixture(autouse=True)
def _no_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


_namespaces = itertools.count()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/install-test-deps installs it)")
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_location(redis_server: RedisServer) -> StoreLocation:
    """A namespace of its own on the shared test server (``stop`` when it is down)."""
    url = redis_server.url
    namespace = f"t{os.getpid()}-{next(_namespaces)}"
    return parse_store(f"{url}?namespace={namespace}")
