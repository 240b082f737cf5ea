"""A state directory of many tasks, written quickly through the task store's own API
(no agent runs): most succeed at once, some retry after a rate limit or a server error,
some fail, a few escalate; a circuit opens and closes on the way."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from backstay.adapters.usage import Usage
from backstay.engine.circuit_log import CircuitChange, CircuitEntry
from backstay.engine.records import AttemptEnd, AttemptOutcome, NewEscalation, StateChange
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.failure import Failure
from backstay.idempotency.ids import attempt_id
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog
from backstay.store.sqlite.tasks import SQLiteTaskStore

START = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.UTC)
USAGE = Usage(input_tokens=120, output_tokens=40, cost_usd=0.0005, api_calls=1)
RATE = Failure(code="ERR_HTTP_429_RATE_LIMITED", message="slow down", retry_after_s=2.0)
SERVER = Failure(code="ERR_HTTP_500_INTERNAL", message="internal error", status=500)
OVERFLOW = Failure(code="ERR_LLM_CONTEXT_LENGTH", message="prompt is too long")
BLOCKED = Failure(code="ERR_LLM_CONTENT_FILTER", message="blocked by the content filter")


def _spec(state: Path, i: int) -> TaskSpec:
    return TaskSpec(
        workflow_id="big",
        task_id=f"task-{i:05d}",
        adapter="anthropic-api" if i % 2 else "openai-api",
        model="claude-haiku-4-5" if i % 2 else "gpt-5-mini",
        workspace=state / "ws",
        timeout_s=60.0,
        prompt="do it",
    )


def _attempt(
    store: SQLiteTaskStore, spec: TaskSpec, state: Path, number: int, at: dt.datetime
) -> None:
    op = spec.operation_id
    store.begin_attempt(
        op,
        number=number,
        attempt_id=attempt_id(op, number),
        output_dir=str(spec.attempt_dir(state, number)),
        at=at,
    )


def write_big_batch(state: Path, tasks: int) -> None:
    """``tasks`` tasks in ``state``: 1 in 10 retried, 1 in 50 failed, 1 in 200 escalated."""
    with SQLiteTaskStore(state, secrets={}) as store:
        store._conn.execute("PRAGMA synchronous=OFF")  # a test fixture: speed over durability
        specs = [_spec(state, i) for i in range(tasks)]
        store.register_all(specs, at=START)
        for i, spec in enumerate(specs):
            op = spec.operation_id
            at = START + dt.timedelta(seconds=i * 0.05)
            number = 1
            if i % 10 == 3:
                _attempt(store, spec, state, 1, at)
                failure = RATE if i % 20 == 3 else SERVER
                end = at + dt.timedelta(seconds=1.5)
                store.end_attempt(
                    op,
                    AttemptEnd(
                        number=1,
                        outcome=AttemptOutcome.FAILED,
                        ended_at=end,
                        failure=failure,
                        delay_s=2.0,
                    ),
                    StateChange(state=TaskState.RETRYING, reason="retrying", at=end),
                )
                at, number = end + dt.timedelta(seconds=2), 2
            _attempt(store, spec, state, number, at)
            end = at + dt.timedelta(seconds=3 + (i % 7))
            if i % 200 == 7:
                store.end_attempt(
                    op,
                    AttemptEnd(
                        number=number, outcome=AttemptOutcome.FAILED, ended_at=end, failure=BLOCKED
                    ),
                    StateChange(state=TaskState.ESCALATED, reason="content_policy", at=end),
                    escalation=NewEscalation(failure=BLOCKED, context={"task_id": spec.task_id}),
                )
            elif i % 50 == 9:
                store.end_attempt(
                    op,
                    AttemptEnd(
                        number=number, outcome=AttemptOutcome.FAILED, ended_at=end, failure=OVERFLOW
                    ),
                    StateChange(state=TaskState.FAILED, reason="context_limit exceeded", at=end),
                )
            else:
                store.end_attempt(
                    op,
                    AttemptEnd(
                        number=number, outcome=AttemptOutcome.SUCCEEDED, ended_at=end, usage=USAGE
                    ),
                    StateChange(state=TaskState.SUCCEEDED, reason="ok", at=end, result={}),
                )
    with SQLiteCircuitLog(state) as log:
        mid = START + dt.timedelta(seconds=tasks * 0.025)
        for change, offset in (
            (CircuitChange.OPENED, 0),
            (CircuitChange.WAITED, 1),
            (CircuitChange.HALF_OPENED, 30),
            (CircuitChange.CLOSED, 31),
        ):
            log.add(
                CircuitEntry(
                    breaker="anthropic-api/claude-haiku-4-5",
                    change=change,
                    at=mid + dt.timedelta(seconds=offset),
                    wait_s=29.0 if change is CircuitChange.WAITED else None,
                )
            )
