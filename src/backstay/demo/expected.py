"""What the demo is designed to come to, and ``check_outcome``: what differs from it.

The storm in ``scenario.yaml`` is aimed at particular tasks, so the end of every task is
known in advance: three end other than in success, each for a reason a human or a limit
must deal with, and every other task succeeds however often it was retried or made to
wait. The batch as a whole must also show the storm: a circuit that opened, tasks that
waited for it, and failed attempts of the kinds the scenario injects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from backstay.engine import AttemptOutcome, AttemptRecord, Summary, TaskRecord, TaskState
from backstay.taxonomy import FailureKind

__all__ = [
    "EXPECTED_ENDS",
    "EXPECTED_FAILURE_KINDS",
    "EXPECTED_TASKS",
    "ExpectedEnd",
    "check_outcome",
]

EXPECTED_TASKS: Final = 30


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedEnd:
    """A task's designed end: its state, and the kind of its last failed attempt."""

    state: TaskState
    kind: FailureKind
    why: str


# Tasks that do not succeed, by task id; every other task must succeed.
EXPECTED_ENDS: Final[Mapping[str, ExpectedEnd]] = MappingProxyType(
    {
        "whole-repo-review": ExpectedEnd(
            state=TaskState.FAILED,
            kind=FailureKind.CONTEXT_LIMIT,
            why="its context overflows: retrying cannot help",
        ),
        "moderation-probe": ExpectedEnd(
            state=TaskState.FAILED,
            kind=FailureKind.CONTENT_POLICY,
            why="the content policy refused it: failed, a human reviews it",
        ),
        "budget-report": ExpectedEnd(
            state=TaskState.PAUSED,
            kind=FailureKind.QUOTA_EXHAUSTED,
            why="the account's quota is spent: it waits for a reset or a human",
        ),
    }
)
# Failed attempts the storm must have caused (and the retries that recovered from them).
EXPECTED_FAILURE_KINDS: Final = (
    FailureKind.RATE_LIMIT,
    FailureKind.SERVER_ERROR,
    FailureKind.NETWORK,
)


def _last_failure(attempts: Sequence[AttemptRecord], operation_id: str) -> FailureKind | None:
    failed = [
        a.failure.kind
        for a in attempts
        if a.operation_id == operation_id
        and a.outcome is AttemptOutcome.FAILED
        and a.failure is not None
    ]
    return failed[-1] if failed else None


def check_outcome(
    summary: Summary, tasks: Sequence[TaskRecord], attempts: Sequence[AttemptRecord]
) -> list[str]:
    """Every way the batch differs from the design, one sentence each; ``[]`` when it
    behaved as designed."""
    problems: list[str] = []
    if len(tasks) != EXPECTED_TASKS:
        problems.append(f"{len(tasks)} tasks ran, the demo has {EXPECTED_TASKS}")
    for record in tasks:
        expected = EXPECTED_ENDS.get(record.task_id)
        state = TaskState.SUCCEEDED if expected is None else expected.state
        label = f"{record.task_id}/{record.spec.task_run_id}"
        if record.state is not state:
            problems.append(f"{label} is {record.state} ({record.reason}), designed to be {state}")
            continue
        if expected is not None:
            kind = _last_failure(attempts, record.operation_id)
            if kind is not expected.kind:
                problems.append(f"{label} ended on {kind}, designed to end on {expected.kind}")
    if summary.circuit_trips < 1:
        problems.append("no circuit opened, but the outage was designed to trip one")
    if summary.circuit_waits < 1:
        problems.append("no task waited for an open circuit")
    problems.extend(
        f"no attempt failed with {kind}, which the scenario injects"
        for kind in EXPECTED_FAILURE_KINDS
        if not summary.failures_by_kind.get(str(kind))
    )
    return problems
