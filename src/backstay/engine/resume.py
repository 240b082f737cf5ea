"""The resume rules: what the engine does with a task it finds in the state file.

``plan_start(record, now)`` is pure: it reads the stored task and says how the engine
takes it up, whether this is the first run, a second ``run`` of the same batch, or a
``resume`` after the process died.

| stored state | step | why |
|---|---|---|
| ``succeeded``, ``failed``, ``cancelled`` | ``skip`` | terminal: never dispatched again |
| ``escalated`` | ``skip`` | waits for a human (``EscalationQueue.resolve``) |
| ``paused``, reset not yet passed or unknown | ``skip`` | waits for the reset, or a human |
| ``paused``, reset passed | ``requeue`` | back to ``pending``; its escalation is closed |
| ``paused``, ``budget_exceeded`` | ``requeue`` | if its budgets have room now (the driver checks) |
| ``running`` | ``recover`` | the runner died: the attempt ends ``interrupted``, task ``retrying`` |
| ``retrying`` | ``run`` | after what is left of the recorded delay |
| ``pending`` | ``run`` | now |

A recovered task keeps its ``operation_id`` and its attempt count: the next attempt is
``attempts_used + 1``, and it counts against the same retry budget (a crash is not a
reason to allow more attempts). The engine applies the plan only while it holds the
operation's lease, so a task another live runner is running is never recovered.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum

from backstay.engine.records import TaskRecord
from backstay.engine.states import TERMINAL, TaskState
from backstay.policy.spend import BUDGET_EXCEEDED

__all__ = ["StartPlan", "StartStep", "plan_start"]


class StartStep(enum.StrEnum):
    SKIP = "skip"
    REQUEUE = "requeue"
    RECOVER = "recover"
    RUN = "run"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StartPlan:
    """The step to take, why, and for ``run`` how long to wait first."""

    step: StartStep
    reason: str
    wait_s: float = 0.0


def plan_start(record: TaskRecord, now: _dt.datetime) -> StartPlan:
    """How the engine takes up ``record`` at ``now`` (see the module docstring)."""
    state = record.state
    if state in TERMINAL:
        return StartPlan(step=StartStep.SKIP, reason=f"already {state}")
    if state is TaskState.ESCALATED:
        return StartPlan(step=StartStep.SKIP, reason="waiting for a human's decision")
    if state is TaskState.PAUSED and record.reason.startswith(BUDGET_EXCEEDED):
        reason = "its budgets have room for its next attempt"
        return StartPlan(step=StartStep.REQUEUE, reason=reason)
    if state is TaskState.PAUSED:
        resets = record.next_run_at
        if resets is None:
            return StartPlan(step=StartStep.SKIP, reason="paused until a human resumes it")
        if resets > now:
            return StartPlan(step=StartStep.SKIP, reason=f"paused until {resets.isoformat()}")
        return StartPlan(step=StartStep.REQUEUE, reason=f"the reset at {resets.isoformat()} passed")
    if state is TaskState.RUNNING:
        return StartPlan(
            step=StartStep.RECOVER,
            reason=f"interrupted during attempt {record.attempts_used}",
        )
    wait = 0.0
    if state is TaskState.RETRYING and record.next_run_at is not None:
        wait = max(0.0, (record.next_run_at - now).total_seconds())
    return StartPlan(step=StartStep.RUN, reason=f"{state}", wait_s=wait)
