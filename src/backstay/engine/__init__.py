"""The durable task engine: task states and transitions (more to come: runner, resume,
escalations)."""

from __future__ import annotations

from backstay.engine.states import (
    TERMINAL,
    TRANSITIONS,
    InvalidTransition,
    Outcome,
    TaskState,
    outcome_for,
    transition,
)

__all__ = [
    "TERMINAL",
    "TRANSITIONS",
    "InvalidTransition",
    "Outcome",
    "TaskState",
    "outcome_for",
    "transition",
]
