"""RedisOperationStore beyond the shared contract (tests/store/test_contract.py runs that
against Redis too): leases stamped with Redis's clock, results that expire in Redis, and
replays after a lost reply."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from backstay.idempotency.records import Acquired, Done
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.operations import RedisOperationStore


@pytest.fixture
def conn(redis_location: StoreLocation) -> Iterator[RedisConnection]:
    opened = RedisConnection(redis_location)
    yield opened
    opened.close()


def test_leases_are_stamped_with_the_redis_clock(conn: RedisConnection) -> None:
    store = RedisOperationStore(conn)
    seconds, micros = conn.client.time()
    claim = store.claim("op", "w1", 30.0)
    assert isinstance(claim, Acquired)
    assert abs(claim.lease.expires_at - (seconds + micros / 1e6 + 30.0)) < 1.0


def test_a_completed_operation_key_expires_after_its_result(conn: RedisConnection) -> None:
    store = RedisOperationStore(conn, result_ttl_s=5.0)
    claim = store.claim("op", "w1", 30.0)
    assert isinstance(claim, Acquired)
    store.complete(claim.lease, {"ok": True})
    ttl_ms = conn.client.pttl(conn.key("op:op"))
    assert 5_000 < ttl_ms <= 65_000


def test_a_lease_key_never_expires_on_its_own(conn: RedisConnection) -> None:
    RedisOperationStore(conn).claim("op", "w1", 30.0)
    assert conn.client.pttl(conn.key("op:op")) == -1


def test_a_replayed_completion_gets_its_result_not_a_refusal(
    conn: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisOperationStore(conn)
    claim = store.claim("op", "w1", 30.0)
    assert isinstance(claim, Acquired)
    first = store.complete(claim.lease, {"n": 1})
    monkeypatch.setattr(RedisConnection, "replaying", property(lambda self: True))
    assert store.complete(claim.lease, {"n": 1}) == first
    assert isinstance(store.claim("op", "w2", 30.0), Done)


def test_a_replayed_release_is_accepted(
    conn: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisOperationStore(conn)
    claim = store.claim("op", "w1", 30.0)
    assert isinstance(claim, Acquired)
    assert store.release(claim.lease) is True
    assert store.release(claim.lease) is False
    monkeypatch.setattr(RedisConnection, "replaying", property(lambda self: True))
    assert store.release(claim.lease) is True


def test_get_reads_the_result_with_the_redis_clock(conn: RedisConnection) -> None:
    store = RedisOperationStore(conn, result_ttl_s=0.3)
    claim = store.claim("op", "w1", 30.0)
    assert isinstance(claim, Acquired)
    store.complete(claim.lease, {"n": 1})
    assert store.get("op") is not None
    time.sleep(0.4)
    assert store.get("op") is None


def test_a_replayed_claim_gets_the_lease_it_took(
    conn: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisOperationStore(conn)
    first = store.claim("op", "w1", 30.0)
    assert isinstance(first, Acquired)
    monkeypatch.setattr(RedisConnection, "replaying", property(lambda self: True))
    again = store.claim("op", "w1", 30.0)
    assert isinstance(again, Acquired)
    assert again.lease.generation == first.lease.generation
    assert store.complete(again.lease, {"n": 1}) is not None
