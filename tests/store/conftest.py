"""Fixtures of the store tests: a manual clock, and every store behind one fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backstay.idempotency._store_base import StoreBase
from backstay.idempotency.memory import MemoryOperationStore
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.operations import RedisOperationStore
from backstay.store.sqlite.operations import SQLiteOperationStore
from backstay.testing import FakeClock

RESULT_TTL_S = 100.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> Iterator[StoreBase]:
    if request.param == "memory":
        yield MemoryOperationStore(clock=clock, result_ttl_s=RESULT_TTL_S)
        return
    if request.param == "redis":
        conn = RedisConnection(request.getfixturevalue("redis_location"))
        try:
            yield RedisOperationStore(conn, clock=clock, result_ttl_s=RESULT_TTL_S)
        finally:
            conn.close()
        return
    path = tmp_path / "operations.sqlite"
    with SQLiteOperationStore(path, clock=clock, result_ttl_s=RESULT_TTL_S) as opened:
        yield opened
