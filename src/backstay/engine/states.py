"""The task state machine: the states a task can be in, the transitions allowed between
them, and what a failure moves a task to.

::

    pending ──▶ running ──▶ succeeded
                 │  ▲
                 │  └── retrying ◀──┐
                 ├──────────────────┘   (a retryable failure with attempts left)
                 ├──▶ failed            (retries exhausted, or a failure that fails)
                 ├──▶ paused ──▶ pending (quota: resumes at resets_at, or by a human)
    pending, retrying ──▶ paused      (a spending budget has no room for the next attempt)
                 ├──▶ escalated ──▶ pending | failed | cancelled (a human decided)
                 └──▶ cancelled

``succeeded``, ``failed`` and ``cancelled`` are terminal. Every change goes through
``transition()``, which refuses anything else with ``InvalidTransition``.

Terminal is the engine's word: only an operator re-opens a ``failed`` or ``cancelled``
task (``backstay retry``), back to ``pending`` with a new retry budget;
``check_reopen()`` is that rule (``REOPENABLE``). ``succeeded`` stays final.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Final

from backstay.errors import BackstayError
from backstay.failure import Failure
from backstay.taxonomy import Action, FailureKind

__all__ = [
    "REOPENABLE",
    "TERMINAL",
    "TRANSITIONS",
    "InvalidTransition",
    "Outcome",
    "TaskState",
    "check_reopen",
    "outcome_for",
    "resolution",
    "transition",
]


class TaskState(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PAUSED = "paused"
    ESCALATED = "escalated"
    CANCELLED = "cancelled"


_S = TaskState

TRANSITIONS: Final[Mapping[TaskState, frozenset[TaskState]]] = {
    _S.PENDING: frozenset({_S.RUNNING, _S.PAUSED, _S.CANCELLED}),
    _S.RUNNING: frozenset(
        {_S.SUCCEEDED, _S.RETRYING, _S.FAILED, _S.PAUSED, _S.ESCALATED, _S.CANCELLED}
    ),
    _S.RETRYING: frozenset({_S.RUNNING, _S.PAUSED, _S.FAILED, _S.CANCELLED}),
    _S.PAUSED: frozenset({_S.PENDING, _S.FAILED, _S.CANCELLED}),
    _S.ESCALATED: frozenset({_S.PENDING, _S.FAILED, _S.CANCELLED, _S.SUCCEEDED}),
    _S.SUCCEEDED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELLED: frozenset(),
}

TERMINAL: Final = frozenset(s for s, nexts in TRANSITIONS.items() if not nexts)
# The states an operator's retry re-opens (to pending); the engine never leaves them.
REOPENABLE: Final = frozenset({_S.FAILED, _S.CANCELLED})


class InvalidTransition(BackstayError):
    """A state change the state machine does not allow."""

    def __init__(self, current: TaskState, wanted: TaskState) -> None:
        self.current = current
        self.wanted = wanted
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (terminal)"
        super().__init__(f"cannot go from {current} to {wanted}; allowed: {allowed}")


def resolution(current: TaskState, wanted: TaskState) -> TaskState | None:
    """Where an escalation's decision moves a task in ``current`` that it wants in
    ``wanted``: as the machine allows; a task that failed with an escalation open for
    review (a content policy failure) is re-opened by a retry (``REOPENABLE``), cancelled
    by a skip and left where it is by a fail (``None``: no move). ``InvalidTransition``
    otherwise."""
    if current is _S.FAILED and wanted is _S.FAILED:
        return None
    if current in REOPENABLE and wanted is _S.PENDING:
        return wanted
    if current is _S.FAILED and wanted is _S.CANCELLED:
        return wanted
    return transition(current, wanted)


def transition(current: TaskState, wanted: TaskState) -> TaskState:
    """``wanted`` if the machine allows it from ``current``; ``InvalidTransition`` otherwise."""
    if wanted not in TRANSITIONS[current]:
        raise InvalidTransition(current, wanted)
    return wanted


def check_reopen(current: TaskState) -> None:
    """Nothing when an operator may re-open a task in ``current`` (``REOPENABLE``);
    ``InvalidTransition`` (to ``pending``) otherwise."""
    if current not in REOPENABLE:
        raise InvalidTransition(current, _S.PENDING)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """Where a failed attempt leaves the task, and whether a human must look at it."""

    state: TaskState
    reason: str
    escalate: bool = False


_CONTEXT_REASON: Final = "context_limit exceeded"


def outcome_for(failure: Failure, *, will_retry: bool) -> Outcome:
    """The task's next state after an attempt failed with ``failure``.

    ``will_retry`` is the retry policy's decision for this failure (attempts, budget and
    deadline permitting): the failure's kind decides everything else, from the
    taxonomy's default actions.
    """
    kind = failure.kind
    if kind is FailureKind.CANCELLED:
        return Outcome(state=_S.CANCELLED, reason="cancelled")
    if will_retry:
        return Outcome(state=_S.RETRYING, reason=f"retrying after {failure.code}")
    if kind is FailureKind.CONTEXT_LIMIT:
        return Outcome(state=_S.FAILED, reason=_CONTEXT_REASON)
    if kind is FailureKind.QUOTA_EXHAUSTED:
        when = f" until {failure.resets_at.isoformat()}" if failure.resets_at else ""
        return Outcome(state=_S.PAUSED, reason=f"quota exhausted{when}", escalate=True)
    action = failure.action
    escalate = action in (Action.FAIL_AND_ESCALATE, Action.ABORT_AND_ESCALATE)
    if kind is FailureKind.LIMIT_EXCEEDED:
        return Outcome(state=_S.FAILED, reason=f"limit exceeded: {failure.code}")
    return Outcome(state=_S.FAILED, reason=f"{kind}: {failure.code}", escalate=escalate)
