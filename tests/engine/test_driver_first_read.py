"""The task's record is read once per attempt: a driver takes the task up as its runner
read it when the operation's lease is its first (no runner can have run it since), and
reads it again under any later lease (``TaskDriver._first_read``, ``held_lease``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.engine.support import OK, ScriptedAdapter, engine, spec

from backstay.engine import TaskState
from backstay.idempotency.guard import IdempotencyGuard, held_lease
from backstay.store.sqlite.tasks import SQLiteTaskStore


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = SQLiteTaskStore.task

    def task(self: SQLiteTaskStore, operation_id: str) -> object:
        reads.append(operation_id)
        return real(self, operation_id)

    monkeypatch.setattr(SQLiteTaskStore, "task", task)
    return reads


def test_a_fresh_task_is_read_once_before_its_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = [spec(tmp_path, f"t{i}") for i in range(3)]
    with engine(tmp_path / "s", ScriptedAdapter({f"t{i}": [OK] for i in range(3)})) as eng:
        reads = _counting_reads(monkeypatch)
        summary = eng.run_sync(specs)
    assert summary.count(TaskState.SUCCEEDED) == 3
    assert sorted(reads) == sorted(s.operation_id for s in specs)


def test_a_task_leased_before_is_read_again_under_its_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = spec(tmp_path, "t1")
    with engine(tmp_path / "s", ScriptedAdapter({"t1": [OK]})) as eng:
        eng.store.register(one, at=eng.clock.now())
        claim = eng.operations.claim(one.operation_id, "earlier-runner", 60.0)
        eng.operations.release(claim.lease)  # type: ignore[union-attr]
        reads = _counting_reads(monkeypatch)
        summary = eng.run_sync([one])
    assert summary.count(TaskState.SUCCEEDED) == 1
    assert reads == [one.operation_id, one.operation_id]


def test_the_held_lease_is_seen_inside_the_operation_only(tmp_path: Path) -> None:
    with engine(tmp_path / "s", ScriptedAdapter()) as eng:
        guard = IdempotencyGuard(eng.operations, owner="me", clock=eng.clock)
        seen = []

        async def operation() -> dict[str, object]:
            seen.append(held_lease())
            return {}

        async def both() -> None:
            await guard.run("op-a", operation)
            await guard.run("op-b", operation)  # a second operation: its own first lease
            seen.append(held_lease())  # none out here

        asyncio.run(both())

        def sync_operation() -> dict[str, object]:
            seen.append(held_lease())
            return {}

        guard.run_sync("op-c", sync_operation)
        seen.append(held_lease())
    assert [
        None if lease is None else (lease.operation_id, lease.generation) for lease in seen
    ] == [
        ("op-a", 1),
        ("op-b", 1),
        None,
        ("op-c", 1),
        None,
    ]
