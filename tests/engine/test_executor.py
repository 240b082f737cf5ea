"""``Engine(executor=…)``: the engine records the specs (or reads the stored tasks) and
hands them to the executor, which drives each through ``Engine.drive_task``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.engine.support import ScriptedAdapter, engine, spec

from backstay.engine import Engine, Executor, TaskState
from backstay.engine.records import TaskRecord
from backstay.errors import ConfigError
from backstay.testing import capture_events

S = TaskState


class InOrder:
    """Drives the tasks one by one, in reverse, through ``drive_task``: an executor."""

    def __init__(self) -> None:
        self.handed: list[tuple[str, TaskState]] = []

    async def drive(self, engine: Engine, records: Sequence[TaskRecord]) -> None:
        for record in reversed(records):
            self.handed.append((record.operation_id, record.state))
            await engine.drive_task(record.operation_id)


def test_an_executor_is_handed_the_recorded_tasks_and_drives_each(tmp_path: Path) -> None:
    adapter, executor = ScriptedAdapter(), InOrder()
    assert isinstance(executor, Executor)
    specs = [spec(tmp_path, "t1"), spec(tmp_path, "t2")]
    with engine(tmp_path / "state", adapter, executor=executor) as eng:
        summary = eng.run_sync(specs)
    assert executor.handed == [("wf:t2:run_01", S.PENDING), ("wf:t1:run_01", S.PENDING)]
    assert [c.operation_id for c in adapter.calls] == ["wf:t2:run_01", "wf:t1:run_01"]
    assert summary.count(S.SUCCEEDED) == 2


def test_resume_hands_the_executor_only_the_tasks_left_to_drive(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path / "state", adapter) as eng:
        eng.run_sync([spec(tmp_path, "t1")])
        eng.store.register_all([spec(tmp_path, "t2")], at=eng.clock.now())
    executor = InOrder()
    with engine(tmp_path / "state", adapter, executor=executor) as eng:
        summary = eng.resume_sync()
    assert executor.handed == [("wf:t2:run_01", S.PENDING)]
    assert summary.count(S.SUCCEEDED) == 2


def test_driving_a_finished_task_returns_it_without_dispatching_it(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path / "state", adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        with capture_events() as events:
            again = asyncio.run(eng.drive_task("wf:t1:run_01"))
    assert again.state is S.SUCCEEDED
    assert len(adapter.calls) == 1
    assert list(events) == []


def test_driving_a_task_never_registered_is_a_lookup_error(tmp_path: Path) -> None:
    with engine(tmp_path / "state", ScriptedAdapter()) as eng, pytest.raises(LookupError):
        asyncio.run(eng.drive_task("wf:nope:run_01"))


def test_an_executor_that_is_not_one_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="executor"):
        engine(tmp_path / "state", ScriptedAdapter(), executor=object())
