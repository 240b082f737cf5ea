"""The runtime's events: frozen, past-tense, each carrying the run's ``trace_id`` and
``tenant``. Hooks are fed from them (``backstay.runtime.hooks``); they never hold prompts,
tool arguments or outputs, only names, ids, counts and failure codes."""

from __future__ import annotations

import dataclasses
import logging
from typing import ClassVar

from backstay.events import Event

__all__ = [
    "ApprovalRequested",
    "PlanCreated",
    "RunAborted",
    "RunFinished",
    "RuntimeEvent",
    "StepCompleted",
    "StepStarted",
    "ToolCalled",
    "model_operation",
]

MODEL_OPERATION_PREFIX = "agent.model:"


def model_operation(trace_id: str) -> str:
    """The ``operation`` of a run's model calls, so retry events find their run."""
    return MODEL_OPERATION_PREFIX + trace_id


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeEvent(Event):
    name: ClassVar[str] = "agent.event"
    trace_id: str
    tenant: str
    run_id: str
    adapter: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanCreated(RuntimeEvent):
    name: ClassVar[str] = "agent.plan_created"
    plan_id: str
    steps: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StepStarted(RuntimeEvent):
    name: ClassVar[str] = "agent.step_started"
    level: ClassVar[int] = logging.DEBUG
    step_id: str
    action: str
    attempt: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StepCompleted(RuntimeEvent):
    name: ClassVar[str] = "agent.step_completed"
    level: ClassVar[int] = logging.DEBUG
    step_id: str
    status: str
    tokens: int
    code: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolCalled(RuntimeEvent):
    """``outcome``: ran, cached, failed, fallback, refused, rejected, approval_required."""

    name: ClassVar[str] = "agent.tool_called"
    level: ClassVar[int] = logging.DEBUG
    tool: str
    outcome: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(RuntimeEvent):
    name: ClassVar[str] = "agent.approval_requested"
    level: ClassVar[int] = logging.WARNING
    tool: str
    escalation_id: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunAborted(RuntimeEvent):
    name: ClassVar[str] = "agent.run_aborted"
    level: ClassVar[int] = logging.WARNING
    code: str
    message: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(RuntimeEvent):
    name: ClassVar[str] = "agent.run_finished"
    status: str
    steps: int
    tokens: int
