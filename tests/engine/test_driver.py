"""TaskDriver: each attempt recorded before it is dispatched, each decision recorded before
the engine acts on it, and the policy fed from the stored attempts."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import OK, QUICK, WALL, Call, ScriptedAdapter, engine, spec

from backstay.adapters.contract import AgentRequest, AgentResult
from backstay.engine import AttemptOutcome, ResolveAction, TaskRecord, TaskState
from backstay.engine.driver import TaskDriver, TaskStopped
from backstay.engine.records import StateChange
from backstay.failure import Failure
from backstay.store import SQLiteTaskStore
from backstay.store.location import StoreLocation
from backstay.testing import FakeClock

OP = "wf:t1:run_01"
S = TaskState


def test_an_attempt_is_recorded_running_before_it_is_dispatched(tmp_path: Path) -> None:
    seen: list[tuple[TaskState, int, AttemptOutcome]] = []

    def on_dispatch(call: Call) -> None:
        with SQLiteTaskStore(tmp_path) as reader:  # another connection: only committed rows
            record = reader.task(OP)
            assert record is not None
            seen.append((record.state, record.attempts_used, reader.attempts(OP)[-1].outcome))

    adapter = ScriptedAdapter(on_dispatch=on_dispatch)
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
    assert seen == [(S.RUNNING, 1, AttemptOutcome.RUNNING)]


class RecordingClock(FakeClock):
    """A fake clock that reads the state file (another connection) whenever it sleeps."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(wall=WALL)
        self.state_dir = state_dir
        self.seen: list[tuple[TaskState, float | None]] = []

    def sleep(self, seconds: float) -> None:
        with SQLiteTaskStore(self.state_dir) as reader:
            record = reader.task(OP)
            assert record is not None
            self.seen.append((record.state, reader.attempts(OP)[-1].delay_s))
        super().sleep(seconds)


def test_the_retry_decision_is_recorded_before_the_engine_sleeps(tmp_path: Path) -> None:
    fake = RecordingClock(tmp_path)
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL"), OK]})
    with engine(tmp_path, adapter, fake=fake) as eng:
        eng.run_sync([spec(tmp_path)])
    assert fake.seen == [(S.RETRYING, 1.0)]


def test_a_retrying_task_records_when_it_runs_next(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL"), OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        first = eng.store.attempts(OP)[0]
    assert first.delay_s == 1.0
    assert first.ended_at is not None


def test_backoff_grows_from_the_recorded_attempts(tmp_path: Path) -> None:
    fake = FakeClock(wall=WALL)
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL")] * 3 + [OK]})
    with engine(tmp_path, adapter, fake=fake) as eng:
        eng.run_sync([spec(tmp_path)])
    assert fake.sleeps == [1.0, 2.0, 4.0]


def test_a_quota_pauses_the_task_until_its_reset(tmp_path: Path) -> None:
    resets = WALL + dt.timedelta(hours=3)
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=resets)]})
    with engine(tmp_path, adapter) as eng:
        summary = eng.run_sync([spec(tmp_path)])
        record = eng.store.task(OP)
    assert record is not None
    assert (record.state, record.next_run_at) == (S.PAUSED, resets)
    assert (summary.next_resume_at, summary.open_escalations) == (resets, 1)


def test_an_escalation_keeps_the_attempts_partial_output_and_directory(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_AUTH_INVALID_KEY")]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        (escalation,) = eng.escalations.list()
    assert escalation.context["partial_output"] == "partial answer"
    assert escalation.context["output_dir"].endswith("run_01/attempt_1")


@pytest.mark.parametrize("code", ["ERR_AUTH_INVALID_KEY", "ERR_SECURITY_VIOLATION"])
def test_auth_and_security_failures_escalate_without_a_retry(tmp_path: Path, code: str) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code=code)]})
    with engine(tmp_path, adapter) as eng:
        summary = eng.run_sync([spec(tmp_path)])
    assert (summary.count(S.ESCALATED), summary.open_escalations, len(adapter.calls)) == (1, 1, 1)


class HumanFirstStore(SQLiteTaskStore):
    """A store where a human skips the task just before the engine requeues it."""

    def change_state(
        self, operation_id: str, change: StateChange, *, close_escalations: str | None = None
    ) -> TaskRecord:
        (escalation,) = self.escalations(open_only=True)
        skip = StateChange(state=S.CANCELLED, reason="skipped", at=change.at)
        self.resolve(
            escalation.escalation_id, action=ResolveAction.SKIP, note="", by="h", change=skip
        )
        return super().change_state(operation_id, change, close_escalations=close_escalations)


def test_a_humans_decision_made_while_the_engine_takes_the_task_up_wins(tmp_path: Path) -> None:
    quota = Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=WALL)
    adapter = ScriptedAdapter({"t1": [quota, OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
    fake = FakeClock(wall=WALL + dt.timedelta(seconds=1))
    with HumanFirstStore(tmp_path) as store:
        driver = TaskDriver(
            spec(tmp_path),
            adapter=adapter,
            policy=QUICK,
            store=store,
            clock=fake,
            state_dir=tmp_path,
        )
        with pytest.raises(TaskStopped) as stopped:
            asyncio.run(driver.drive())
    assert stopped.value.record.state is S.CANCELLED
    assert len(adapter.calls) == 1


class StoreSeeingAdapter(ScriptedAdapter):
    """Keeps the store location of each request it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.stores: list[object] = []

    async def execute(self, request: AgentRequest, **kwargs: Any) -> AgentResult:
        self.stores.append(request.store)
        return await super().execute(request, **kwargs)


def test_each_attempt_s_request_names_where_the_batch_s_records_are(tmp_path: Path) -> None:
    adapter = StoreSeeingAdapter()
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        assert adapter.stores == [eng.store_location]
    assert adapter.stores[0] == StoreLocation.sqlite(tmp_path)
