"""The run store's contract, the same over every store: in the process, SQLite (a real
file) and Redis (a real redis-server, and a real three-node Redis Cluster): checkpoints,
approvals, decisions and the tool cache, each tenant kept apart."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.runtime.support import ScriptedFramework, model_reply

from backstay.errors import ConfigError
from backstay.runtime import MemoryRunStore, RunStatus, RunStore, Runtime
from backstay.runtime.records import ApprovalStatus
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.runs import RedisRunStore
from backstay.store.sqlite.runs import SQLiteRunStore
from backstay.store.sqlite.runtime_memory import SQLiteMemory


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    if request.param == "memory":
        yield MemoryRunStore()
        return
    if request.param.startswith("redis"):
        where = "cluster_location" if request.param == "redis-cluster" else "redis_location"
        conn = RedisConnection(request.getfixturevalue(where))
        try:
            yield RedisRunStore(conn)
        finally:
            conn.close()
        return
    with SQLiteRunStore(tmp_path / "state.sqlite") as opened:
        yield opened


def _ask(store: RunStore, tenant: str = "acme", run_id: str = "r1", key: str = "k1") -> int:
    arguments = {"path": "notes.txt", "lines": [1, 2]}
    return store.request_approval(
        tenant, run_id, tool="write_file", key=key, arguments=arguments
    ).id


def test_a_checkpoint_is_read_back_as_it_was_saved(store: RunStore) -> None:
    framework = ScriptedFramework({"a": model_reply("x")})
    done = asyncio.run(Runtime(framework, store=store).run({"actions": ["a", "a"]}, tenant="acme"))
    assert done.status is RunStatus.SUCCEEDED
    assert store.load_run("acme", done.run_id) == done
    assert store.load_run("globex", done.run_id) is None


def test_save_run_replaces_the_stored_step_results(store: RunStore) -> None:
    framework = ScriptedFramework({"a": model_reply("x")})
    done = asyncio.run(
        Runtime(framework, store=store).run({"actions": ["a", "a", "a"]}, tenant="acme")
    )
    cut = dataclasses.replace(done, status=RunStatus.RUNNING, results=done.results[:1])
    store.save_run(cut)
    assert store.load_run("acme", done.run_id) == cut


def test_a_resume_continues_after_the_last_successful_step(store: RunStore) -> None:
    framework = ScriptedFramework({"a": model_reply("x")})
    runtime = Runtime(framework, store=store)
    done = asyncio.run(runtime.run({"actions": ["a", "a", "a"]}, tenant="acme"))
    store.save_run(dataclasses.replace(done, status=RunStatus.RUNNING, results=done.results[:1]))
    framework.executed.clear()
    resumed = asyncio.run(runtime.resume(done.run_id, tenant="acme"))
    assert resumed.status is RunStatus.SUCCEEDED
    assert framework.executed == ["s1", "s2"]


def test_asking_twice_for_one_call_gives_one_approval(store: RunStore) -> None:
    first = _ask(store)
    assert _ask(store) == first
    assert _ask(store, key="k2") != first
    found = store.approval_for("acme", "r1", "k1")
    assert found is not None
    assert (found.id, found.tool, found.status) == (first, "write_file", ApprovalStatus.PENDING)
    assert dict(found.arguments) == {"path": "notes.txt", "lines": [1, 2]}


def test_a_decision_is_recorded_once(store: RunStore) -> None:
    approval_id = _ask(store)
    edited = {"path": "other.txt"}
    decided = store.decide(
        "acme", approval_id, ApprovalStatus.EDITED, edited_arguments=edited, note="n", by="jo"
    )
    assert (decided.status, decided.note, decided.by) == (ApprovalStatus.EDITED, "n", "jo")
    assert decided.edited_arguments == edited
    assert store.approvals("acme") == ()
    assert store.approvals("acme", open_only=False) == (decided,)
    with pytest.raises(ConfigError, match="already edited"):
        store.decide("acme", approval_id, ApprovalStatus.REJECTED)
    with pytest.raises(ConfigError, match="no approval 99"):
        store.decide("acme", 99, ApprovalStatus.APPROVED)


def test_one_tenant_never_sees_or_decides_another_tenants_approvals(store: RunStore) -> None:
    acme = _ask(store, tenant="acme")
    globex = _ask(store, tenant="globex")
    assert [a.id for a in store.approvals("acme")] == [acme]
    assert [a.id for a in store.approvals("globex")] == [globex]
    assert store.approval_for("globex", "r1", "k1") is not None
    assert store.approval_for("initech", "r1", "k1") is None
    with pytest.raises(ConfigError, match=f"no approval {acme}"):
        store.decide("globex", acme, ApprovalStatus.APPROVED)
    assert store.approvals("acme")[0].status is ApprovalStatus.PENDING


def test_the_tool_cache_is_per_tenant(store: RunStore) -> None:
    assert store.cache_get("acme", "k") == (False, None)
    store.cache_put("acme", "k", {"rows": [1, 2]})
    assert store.cache_get("acme", "k") == (True, {"rows": [1, 2]})
    assert store.cache_get("globex", "k") == (False, None)


def test_ids_with_colons_never_share_a_record(store: RunStore) -> None:
    framework = ScriptedFramework({"a": model_reply("x")})
    runtime = Runtime(framework, store=store)
    one = asyncio.run(runtime.run({"actions": ["a"]}, tenant="a:b", run_id="c"))
    two = asyncio.run(runtime.run({"actions": ["a"]}, tenant="a", run_id="b:c"))
    assert store.load_run("a:b", "c") == one
    assert store.load_run("a", "b:c") == two


def test_a_foreign_sqlite_file_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE my_app (k)")
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="not a backstay store"):
        SQLiteRunStore(path)
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists()


_UNVERSIONED: Final = """
CREATE TABLE agent_runs (
    tenant TEXT NOT NULL, run_id TEXT NOT NULL, status TEXT NOT NULL, record TEXT NOT NULL,
    plan TEXT, PRIMARY KEY (tenant, run_id));
CREATE TABLE agent_steps (
    tenant TEXT NOT NULL, run_id TEXT NOT NULL, step_id TEXT NOT NULL, seq INTEGER NOT NULL,
    result TEXT NOT NULL, PRIMARY KEY (tenant, run_id, step_id));
CREATE TABLE agent_approvals (
    id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, run_id TEXT NOT NULL,
    tool TEXT NOT NULL, key TEXT NOT NULL, arguments TEXT NOT NULL, status TEXT NOT NULL,
    edited_arguments TEXT, note TEXT NOT NULL DEFAULT '', decided_by TEXT NOT NULL DEFAULT '',
    UNIQUE (tenant, run_id, key));
CREATE TABLE agent_tool_cache (
    tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key));
CREATE TABLE agent_memory (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, session TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL, tokens INTEGER NOT NULL);
INSERT INTO agent_approvals (tenant, run_id, tool, key, arguments, status)
    VALUES ('acme', 'r1', 'write_file', 'k1', '{}', 'pending');
INSERT INTO agent_memory (tenant, session, role, content, tokens)
    VALUES ('acme', 's', 'user', 'hello', 2);
"""


def test_tables_made_before_they_had_a_schema_version_are_opened_with_their_records(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(_UNVERSIONED)
    conn.close()
    with SQLiteRunStore(path) as runs, SQLiteMemory(path) as memory:
        (pending,) = runs.approvals("acme")
        assert pending.tool == "write_file"
        assert [m.content for m in memory.history("acme", "s")] == ["hello"]
