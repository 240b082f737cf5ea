"""A recorded batch of any size, written through the task store's own API (no agent runs),
for ``status.py`` run alone: per 1,000 tasks, 10 failed (content policy), 5 paused at a
quota (with an escalation), 3 escalated (a bad key), 2 running whose runner is gone (shown
``interrupted``), 3 still pending, the rest succeeded with their usage. Each move is one
transaction of the store, as the engine makes them."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from backstay.adapters.usage import Usage
from backstay.engine import AttemptOutcome, TaskSpec, TaskState
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.engine.taskstore import TaskStore
from backstay.failure import Failure

AT: Final = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
LATER: Final = AT + _dt.timedelta(seconds=1)
RESETS: Final = AT + _dt.timedelta(days=365)
_CHUNK: Final = 5_000
_MIX: Final = {
    **dict.fromkeys(range(10), TaskState.FAILED),
    **dict.fromkeys(range(10, 15), TaskState.PAUSED),
    **dict.fromkeys(range(15, 18), TaskState.ESCALATED),
    **dict.fromkeys(range(18, 20), TaskState.RUNNING),
    **dict.fromkeys(range(20, 23), TaskState.PENDING),
}


def _specs(tasks: int, workspace: Path) -> Iterator[TaskSpec]:
    for i in range(tasks):
        yield TaskSpec(workflow_id="read", task_id=f"t{i:06d}", adapter="mock",
                       model="mock-model", workspace=workspace, timeout_s=60.0,
                       prompt=f"task {i}")  # fmt: skip


def _move(store: TaskStore, spec: TaskSpec, state: TaskState) -> None:
    op = spec.operation_id
    store.begin_attempt(op, number=1, attempt_id=f"{op}:attempt_1", output_dir="runs", at=AT)
    if state is TaskState.RUNNING:
        return  # its runner is gone: no lease holds it
    failure = escalation = None
    outcome, reason, next_run_at, result = AttemptOutcome.FAILED, str(state), None, None
    if state is TaskState.SUCCEEDED:
        outcome, reason, result = AttemptOutcome.SUCCEEDED, "succeeded", {"ok": True}
    elif state is TaskState.FAILED:
        failure = Failure(code="ERR_LLM_CONTENT_FILTER")
        reason = "content_policy: ERR_LLM_CONTENT_FILTER"
    elif state is TaskState.PAUSED:
        failure = Failure(code="ERR_LLM_QUOTA_EXHAUSTED", resets_at=RESETS)
        reason, next_run_at = f"quota exhausted until {RESETS.isoformat()}", RESETS
        escalation = NewEscalation(failure=failure, context={})
    else:
        failure = Failure(code="ERR_AUTH_INVALID_KEY")
        escalation = NewEscalation(failure=failure, context={})
    usage = Usage(input_tokens=10, output_tokens=5, cost_usd=0.0001)
    end = AttemptEnd(number=1, outcome=outcome, ended_at=LATER, failure=failure, usage=usage)
    change = StateChange(state=state, reason=reason, at=LATER, next_run_at=next_run_at,
                         result=result)  # fmt: skip
    store.end_attempt(op, end, change, escalation=escalation)


def fill(store: TaskStore, tasks: int, workspace: Path) -> None:
    """Record a batch of ``tasks`` tasks in ``store`` (see the module docstring)."""
    chunk: list[TaskSpec] = []
    for spec in _specs(tasks, workspace):
        chunk.append(spec)
        if len(chunk) == _CHUNK:
            store.register_all(chunk, at=AT)
            chunk = []
    if chunk:
        store.register_all(chunk, at=AT)
    for i, spec in enumerate(_specs(tasks, workspace)):
        state = _MIX.get(i % 1000, TaskState.SUCCEEDED)
        if state is not TaskState.PENDING:
            _move(store, spec, state)
