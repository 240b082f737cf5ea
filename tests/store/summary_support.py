"""A small batch recorded through a task store's own API, its tasks left in every state
the index tells apart, for the tests of the counts and the index."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from pathlib import Path
from typing import Final

from backstay.engine import AttemptOutcome, TaskSpec, TaskState
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.engine.taskstore import TaskStore
from backstay.failure import Failure
from backstay.store.location import StoreLocation

AT: Final = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
LATER: Final = AT + _dt.timedelta(seconds=1)
RESETS: Final = AT + _dt.timedelta(days=3650)
WORKFLOW: Final = "mix"
# Task id → the state it is left in; the others (``ok-*``) succeed, ``wait-*`` stay pending.
ENDS: Final = {
    "bad-1": TaskState.FAILED,
    "bad-2": TaskState.FAILED,
    "quota-1": TaskState.PAUSED,
    "human-1": TaskState.ESCALATED,
    "gone-1": TaskState.RUNNING,
    "gone-2": TaskState.RUNNING,
    "stop-1": TaskState.CANCELLED,
    "again-1": TaskState.RETRYING,
}


def task_ids(succeeded: int = 6, pending: int = 2) -> list[str]:
    ids = [f"ok-{i}" for i in range(succeeded)] + [f"wait-{i}" for i in range(pending)]
    return sorted([*ids, *ENDS])


def specs(workspace: Path, ids: list[str]) -> list[TaskSpec]:
    return [
        TaskSpec(workflow_id=WORKFLOW, task_id=task_id, adapter="mock", model="m",
                 workspace=workspace, timeout_s=60.0, prompt=task_id)
        for task_id in ids
    ]  # fmt: skip


def end_state(task_id: str) -> TaskState:
    if task_id.startswith("wait-"):
        return TaskState.PENDING
    return ENDS.get(task_id, TaskState.SUCCEEDED)


def move(store: TaskStore, spec: TaskSpec, state: TaskState) -> None:
    """Take ``spec``'s task from ``pending`` to ``state`` as the engine would."""
    op = spec.operation_id
    if state is TaskState.PENDING:
        return
    if state is TaskState.CANCELLED:
        store.change_state(op, StateChange(state=state, reason="cancelled", at=LATER))
        return
    store.begin_attempt(op, number=1, attempt_id=f"{op}:attempt_1", output_dir="d", at=AT)
    if state is TaskState.RUNNING:
        return
    ok = state is TaskState.SUCCEEDED
    failure = None if ok else Failure(code="ERR_LLM_CONTENT_FILTER")
    escalation = None
    next_run_at = None
    if state is TaskState.PAUSED:
        failure = Failure(code="ERR_LLM_QUOTA_EXHAUSTED", resets_at=RESETS)
        next_run_at = RESETS
    if state in (TaskState.PAUSED, TaskState.ESCALATED):
        assert failure is not None
        escalation = NewEscalation(failure=failure, context={})
    outcome = AttemptOutcome.SUCCEEDED if ok else AttemptOutcome.FAILED
    end = AttemptEnd(number=1, outcome=outcome, ended_at=LATER, failure=failure)
    change = StateChange(state=state, reason=str(state), at=LATER, next_run_at=next_run_at)
    store.end_attempt(op, end, change, escalation=escalation)


def fill(store: TaskStore, workspace: Path, ids: list[str] | None = None) -> list[TaskSpec]:
    """Register the tasks of ``ids`` (default ``task_ids()``) and move each to its end."""
    made = specs(workspace, task_ids() if ids is None else ids)
    store.register_all(made, at=AT)
    for spec in made:
        move(store, spec, end_state(spec.task_id))
    return made


def fill_redis(location: StoreLocation, workspace: Path) -> list[TaskSpec]:
    """``fill`` the Redis task store at ``location`` (its connection closed after)."""
    from backstay.store.redis._client import RedisConnection  # noqa: PLC0415 - Redis only
    from backstay.store.redis.tasks import RedisTaskStore  # noqa: PLC0415

    conn = RedisConnection(location)
    try:
        return fill(RedisTaskStore(conn), workspace)
    finally:
        conn.close()


def full_count(store: TaskStore) -> dict[TaskState, int]:
    """Tasks per state counted from every record (zeros included)."""
    found = Counter(record.state for record in store.tasks())
    return {state: found.get(state, 0) for state in TaskState}
