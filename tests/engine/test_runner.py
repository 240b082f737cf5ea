"""Engine: batches driven through an in-process adapter, on a fake clock."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Sequence
from pathlib import Path
from typing import overload

import pytest
from tests.engine.support import OK, QUICK, WALL, ScriptedAdapter, clock, engine, spec

from backstay.engine import AttemptOutcome, Engine, TaskSpec, TaskState
from backstay.engine.driver import TaskDriver
from backstay.engine.records import AttemptEnd, StateChange, TaskRecord
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.idempotency.records import Acquired
from backstay.policy.registry import PolicyRegistry
from backstay.store import STATE_FILE

S = TaskState
RATE_LIMITED = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=7.0)


def test_a_task_that_succeeds_is_recorded_with_its_result(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        summary = eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.attempts_used) == (S.SUCCEEDED, 1)
    assert record.result is not None
    assert record.result["output"] == "done wf:t1:run_01"
    assert summary.count(S.SUCCEEDED) == 1


def test_a_rate_limit_is_retried_after_its_retry_after(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [RATE_LIMITED, OK]})
    fake = clock()
    with engine(tmp_path, adapter, fake=fake) as eng:
        summary = eng.run_sync([spec(tmp_path)])
    assert summary.count(S.SUCCEEDED) == 1
    assert (summary.attempts, len(adapter.calls)) == (2, 2)
    assert fake.sleeps == [pytest.approx(7.05)]
    assert summary.waited_s == pytest.approx(7.05)


def test_a_context_overflow_fails_without_a_retry(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_CONTEXT_LENGTH")]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.reason) == (S.FAILED, "context_limit exceeded")
    assert len(adapter.calls) == 1


def test_a_content_policy_failure_fails_with_an_escalation_for_review(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_LLM_CONTENT_FILTER")]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
        (escalation,) = eng.escalations.list()
    assert record is not None
    assert record.state is S.FAILED
    assert escalation.failure.code == "ERR_LLM_CONTENT_FILTER"
    assert len(adapter.calls) == 1


def test_an_unknown_exception_is_retried_once_then_fails(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [RuntimeError("boom")]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.attempts_used) == (S.FAILED, 2)
    assert record.reason.startswith("unknown: ERR_UNKNOWN")


def test_retries_stop_at_the_policys_attempts(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL")]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.attempts_used) == (S.FAILED, QUICK.max_attempts)
    assert "attempts_exhausted" in record.reason


def test_a_cancelled_attempt_cancels_the_task(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_CANCELLED")]})
    with engine(tmp_path, adapter) as eng:
        summary = eng.run_sync([spec(tmp_path)])
    assert summary.count(S.CANCELLED) == 1


def test_no_more_tasks_run_at_once_than_the_concurrency(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(hold_s=0.05)
    with engine(tmp_path, adapter, concurrency=2) as eng:
        summary = eng.run_sync([spec(tmp_path, f"t{i}") for i in range(6)])
    assert summary.count(S.SUCCEEDED) == 6
    assert adapter.max_active == 2


def test_a_succeeded_task_is_not_dispatched_by_a_later_run(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
    with engine(tmp_path, adapter) as again:
        summary = again.run_sync([spec(tmp_path)])
    assert len(adapter.calls) == 1
    assert summary.count(S.SUCCEEDED) == 1


def test_an_operation_completed_elsewhere_is_adopted_without_a_dispatch(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        claim = eng.operations.claim("wf:t1:run_01", "elsewhere", 60.0)
        assert isinstance(claim, Acquired)
        eng.operations.complete(claim.lease, {"output": "from elsewhere"})
        eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.result) == (S.SUCCEEDED, {"output": "from elsewhere"})
    assert adapter.calls == []


def test_each_attempt_writes_its_metrics_in_its_own_directory(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [RATE_LIMITED, OK]})
    with engine(tmp_path, adapter) as eng:
        eng.run_sync([spec(tmp_path)])
    run_dir = tmp_path / "runs" / "t1" / "default" / "run_01"
    first = json.loads((run_dir / "attempt_1" / "metrics.json").read_text())
    second = json.loads((run_dir / "attempt_2" / "metrics.json").read_text())
    assert first["error"].startswith("ERR_HTTP_429_RATE_LIMITED")
    assert (second["error"], second["tokens_input"]) == (None, OK.input_tokens)


def test_an_adapter_factory_is_called_once_per_engine(tmp_path: Path) -> None:
    made: list[ScriptedAdapter] = []

    def factory() -> ScriptedAdapter:
        made.append(ScriptedAdapter())
        return made[-1]

    with Engine(tmp_path, adapters={"fake": factory}, clock=clock(), env={}) as eng:
        eng.run_sync([spec(tmp_path, "a"), spec(tmp_path, "b")])
    assert len(made) == 1
    assert len(made[0].calls) == 2


def test_a_policy_name_is_looked_up_in_the_engines_registry(tmp_path: Path) -> None:
    registry = PolicyRegistry([QUICK.derive(name="mine", max_attempts=2)])
    adapter = ScriptedAdapter({"t1": [Failure(code="ERR_HTTP_500_INTERNAL")]})
    with engine(tmp_path, adapter, policies=registry) as eng:
        summary = eng.run_sync([spec(tmp_path, policy="mine")])
    assert summary.attempts == 2


def test_an_unknown_adapter_is_refused_before_anything_is_recorded(tmp_path: Path) -> None:
    with engine(tmp_path, ScriptedAdapter()) as eng:
        with pytest.raises(ConfigError, match="unknown adapter 'nope'"):
            eng.run_sync([spec(tmp_path, "a"), spec(tmp_path, "b", adapter="nope")])
        assert eng.store.tasks() == ()


def test_a_task_given_twice_is_refused(tmp_path: Path) -> None:
    with engine(tmp_path, ScriptedAdapter()) as eng, pytest.raises(ConfigError, match="twice"):
        eng.run_sync([spec(tmp_path), spec(tmp_path)])


def test_a_corrupt_state_file_stops_the_engine_and_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    path.write_bytes(b"\x00garbage" * 512)
    with pytest.raises(ConfigError, match="not a readable backstay store") as info:
        Engine(tmp_path, adapters={}, env={})
    assert str(path) in str(info.value)
    assert path.read_bytes() == b"\x00garbage" * 512
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FILE]


def test_a_success_that_missed_the_operation_cache_is_cached_without_a_dispatch(
    tmp_path: Path,
) -> None:
    adapter = ScriptedAdapter()
    with engine(tmp_path, adapter) as eng:
        now = WALL
        eng.store.register(spec(tmp_path), at=now)  # as a runner killed after recording it
        eng.store.begin_attempt("wf:t1:run_01", number=1, attempt_id="a", output_dir="d", at=now)
        end = AttemptEnd(number=1, outcome=AttemptOutcome.SUCCEEDED, ended_at=now)
        change = StateChange(state=S.SUCCEEDED, reason="ok", at=now, result={"output": "x"})
        eng.store.end_attempt("wf:t1:run_01", end, change)
        eng.resume_sync()
        cached = eng.operations.get("wf:t1:run_01")
    assert cached is not None
    assert cached.result == {"output": "x"}
    assert adapter.calls == []


def test_a_cancelled_run_leaves_its_task_to_be_resumed(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(hold_s=30.0)

    async def cancel_mid_dispatch(eng: Engine) -> None:
        run = asyncio.ensure_future(eng.run([spec(tmp_path)]))
        for _ in range(500):  # bounded: 5 s
            if adapter.active:
                break
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    with engine(tmp_path, adapter) as eng:
        asyncio.run(cancel_mid_dispatch(eng))
        left = eng.store.task("wf:t1:run_01")
        adapter.hold_s = 0.0
        summary = eng.resume_sync()
    assert left is not None
    assert left.state is S.RUNNING
    assert (summary.count(S.SUCCEEDED), summary.attempts) == (1, 2)


def test_a_batch_holds_a_driver_only_for_the_tasks_it_is_running(tmp_path: Path) -> None:
    # Each task's driver is built when the task starts and dropped when it ends: a batch
    # of 100,000 tasks never holds 100,000 drivers.
    alive: list[int] = []

    def count(call: object) -> None:
        del call
        alive.append(sum(isinstance(o, TaskDriver) for o in gc.get_objects()))

    adapter = ScriptedAdapter(on_dispatch=count)
    specs = [spec(tmp_path, f"t{i:02d}") for i in range(12)]
    with engine(tmp_path, adapter, concurrency=2) as eng:
        gc.collect()  # the drivers earlier tests left to the collector
        summary = eng.run_sync(specs)
    assert summary.count(S.SUCCEEDED) == 12
    assert len(alive) == 12
    # A finished task's driver may wait for the collector (cycles), never a waiting one's.
    assert 1 <= alive[0] <= 2


class _MadeOnDemand(Sequence[TaskSpec]):
    """A batch whose specs are made when asked for, as a caller keeps a large one."""

    def __init__(self, workspace: Path, n: int) -> None:
        self.workspace, self.n = workspace, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, index: int) -> TaskSpec: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TaskSpec]: ...

    def __getitem__(self, index: int | slice) -> TaskSpec | Sequence[TaskSpec]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.n))]
        if not 0 <= index < self.n:
            raise IndexError(index)
        return spec(self.workspace, f"t{index:04d}")


def test_a_batch_holds_no_spec_or_record_of_a_task_it_is_not_driving(tmp_path: Path) -> None:
    # The engine keeps the batch's operation ids, reading each task's record (and taking
    # its spec from the caller's sequence) when the task is driven: a batch of 100,000
    # tasks is never 100,000 specs and records in memory. (The store keeps a bounded cache
    # of the specs it decoded, for the tasks that were driven.)
    tasks, every = 120, 30
    waiting: list[int] = []  # tasks not dispatched yet whose spec is alive
    records: list[int] = []

    def count(call: object) -> None:
        del call
        if len(adapter.calls) % every == 0:
            gc.collect()
            objects = gc.get_objects()
            dispatched = {c.operation_id for c in adapter.calls}
            ids = {o.operation_id for o in objects if isinstance(o, TaskSpec)}
            waiting.append(len(ids - dispatched))
            records.append(sum(isinstance(o, TaskRecord) for o in objects))

    adapter = ScriptedAdapter(on_dispatch=count)
    with engine(tmp_path, adapter, concurrency=2) as eng:
        summary = eng.run_sync(_MadeOnDemand(tmp_path, tasks))
    assert summary.count(S.SUCCEEDED) == tasks
    assert len(waiting) == tasks // every
    # At most the other task a worker has taken up, never the tasks still to come.
    assert max(waiting) <= 1, waiting
    # Those of the tasks being driven (a few each), never one per task of the batch.
    assert max(records) <= 6, records
