"""The agent runtime's Redis stores (``RedisRunStore``, ``RedisMemory``) on a real
redis-server: what only Redis has — a write run again after its reply was lost (the
connection's ``wait`` mode) is not applied twice — and the keys they use. The behaviour
they share with the other stores is tested in tests/runtime (the run store contract, the
memory tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import redis

from backstay.runtime.memory import Message
from backstay.runtime.records import ApprovalStatus
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.runs import RedisRunStore
from backstay.store.redis.runtime_memory import RedisMemory

T = TypeVar("T")


@pytest.fixture
def conn(redis_location: StoreLocation) -> Iterator[RedisConnection]:
    opened = RedisConnection(redis_location)
    try:
        yield opened
    finally:
        opened.close()


def _reply_lost(self: RedisConnection, fn: Callable[[redis.Redis], T]) -> T:
    """``RedisConnection.call`` as when Redis applied ``fn`` and its reply was lost: the
    connection runs it again, ``replaying``."""
    fn(self.client)
    self._local.replaying = True
    try:
        return fn(self.client)
    finally:
        self._local.replaying = False


def _ask(runs: RedisRunStore) -> int:
    return runs.request_approval("acme", "r1", tool="write_file", key="k", arguments={}).id


def test_a_replayed_message_is_stored_once(
    conn: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = RedisMemory(conn)
    with monkeypatch.context() as patched:
        patched.setattr(RedisConnection, "call", _reply_lost)
        memory.store("acme", "s", Message(role="user", content="hello"))
    memory.store("acme", "s", Message(role="user", content="hello"))
    assert [m.content for m in memory.history("acme", "s")] == ["hello", "hello"]


def test_a_replayed_decision_gets_the_decision_not_a_refusal(
    conn: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = RedisRunStore(conn)
    approval_id = _ask(runs)
    with monkeypatch.context() as patched:
        patched.setattr(RedisConnection, "call", _reply_lost)
        decided = runs.decide("acme", approval_id, ApprovalStatus.APPROVED, note="ok")
    assert (decided.status, decided.note) == (ApprovalStatus.APPROVED, "ok")
    assert runs.approvals("acme", open_only=False) == (decided,)


def test_a_replayed_request_for_approval_records_one_approval(
    conn: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = RedisRunStore(conn)
    with monkeypatch.context() as patched:
        patched.setattr(RedisConnection, "call", _reply_lost)
        first = _ask(runs)
    assert _ask(runs) == first
    assert [a.id for a in runs.approvals("acme")] == [first]


def test_every_key_is_under_the_runtime_hash_tag_of_the_namespace(
    conn: RedisConnection,
) -> None:
    runs, memory = RedisRunStore(conn), RedisMemory(conn)
    _ask(runs)
    runs.cache_put("acme", "k", 1)
    memory.store("acme", "s", Message(role="user", content="hello"))
    keys: list[Any] = list(conn.client.scan_iter(match=f"*{conn.namespace}*"))
    assert keys
    assert all(key.decode().startswith(f"{{{conn.namespace}:runtime}}:") for key in keys)
