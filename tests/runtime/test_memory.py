"""Session memory, in the process, in SQLite and in Redis (one server, and a cluster): the
same behaviour, per tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backstay.runtime import InMemoryMemory, MemoryManager, Message, SessionMemory
from backstay.runtime.sensitive import SensitiveRedactor
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.runtime_memory import RedisMemory
from backstay.store.sqlite.runtime_memory import SQLiteMemory


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-cluster"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryManager]:
    if request.param == "memory":
        yield InMemoryMemory()
        return
    if request.param.startswith("redis"):
        where = "cluster_location" if request.param == "redis-cluster" else "redis_location"
        conn = RedisConnection(request.getfixturevalue(where))
        try:
            yield RedisMemory(conn)
        finally:
            conn.close()
        return
    with SQLiteMemory(tmp_path / "state.sqlite") as store:
        yield store


def _m(text: str) -> Message:
    return Message(role="user", content=text)


def test_the_window_keeps_the_newest_messages_within_the_budget(memory: MemoryManager) -> None:
    for text in ("a" * 40, "b" * 40, "c" * 40):
        memory.store("t", "s", _m(text))
    window = memory.window("t", "s", 25)
    assert [m.content[0] for m in window] == ["b", "c"]


def test_summarize_replaces_old_messages_by_one_summary_kept_first(memory: MemoryManager) -> None:
    for i in range(6):
        memory.store("t", "s", _m(f"message {i}"))
    summary = memory.summarize("t", "s", keep_last=2)
    history = memory.history("t", "s")
    assert summary is not None
    assert [m.role for m in history] == ["summary", "user", "user"]
    assert "message 0" in history[0].content
    assert memory.window("t", "s", 1000)[0].role == "summary"


def test_clear_empties_one_session_only(memory: MemoryManager) -> None:
    memory.store("t", "s1", _m("one"))
    memory.store("t", "s2", _m("two"))
    memory.clear("t", "s1")
    assert memory.history("t", "s1") == ()
    assert len(memory.history("t", "s2")) == 1


def test_one_tenant_never_reads_another_tenants_memory(memory: MemoryManager) -> None:
    memory.store("acme", "s", _m("acme's plans"))
    assert memory.history("rival", "s") == ()
    assert memory.window("rival", "s", 1000) == ()


def test_a_session_memory_redacts_what_it_stores(memory: MemoryManager) -> None:
    session = SessionMemory(memory, "t", "s", SensitiveRedactor())
    session.store("user", "my card is 4111 1111 1111 1111")
    assert session.history()[0].content == "my card is [CARD]"


def test_names_with_colons_never_share_a_session(memory: MemoryManager) -> None:
    memory.store("a:b", "c", _m("first"))
    memory.store("a", "b:c", _m("second"))
    assert [m.content for m in memory.history("a:b", "c")] == ["first"]
    assert [m.content for m in memory.history("a", "b:c")] == ["second"]
