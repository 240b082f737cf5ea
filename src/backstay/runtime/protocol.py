"""``FrameworkAdapter``: the protocol an agent framework implements to run under backstay.

::

    plan(input, context)            -> Plan              what the agent will do
    execute(step, tools, context)   -> StepResult        one step; model calls go through
                                                         ``context.model``, tool calls
                                                         through ``tools`` (the ToolGate)
    validate(output, schema)        -> ValidationResult  whether a step's output holds

``plan`` and ``execute`` are ``async`` or, as the agent adapter interface prints them,
plain methods (the runtime runs those in a worker thread, within the same timeouts).

An adapter never retries a model call itself and never calls a tool directly: its
framework's own retries are turned off, its model calls are wrapped in
``context.model.acall`` (classification, rate limiter, breaker, retry policy, hard limits)
and its tool calls in ``tools.invoke`` (allowlist, approvals, limits, cache, sandbox).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from backstay.runtime.plan import Plan, Step
from backstay.runtime.results import StepResult, ValidationResult

if TYPE_CHECKING:
    from backstay.runtime.context import ExecutionContext
    from backstay.runtime.toolgate import ToolGate

__all__ = ["AgentFactory", "FrameworkAdapter"]


@runtime_checkable
class FrameworkAdapter(Protocol):
    """An agent framework under backstay's contract. ``name`` names it in events and
    configuration (``"langgraph"``, ``"pydantic-ai"`` …)."""

    name: str

    def plan(self, input: Any, context: ExecutionContext) -> Plan | Awaitable[Plan]: ...

    def execute(
        self, step: Step, tools: ToolGate, context: ExecutionContext
    ) -> StepResult | Awaitable[StepResult]: ...

    def validate(self, output: Any, schema: Mapping[str, Any] | None) -> ValidationResult: ...


class AgentFactory(Protocol):
    """What a suite task's ``agent: module:function`` names: called with the task's
    ``config`` mapping, it returns the adapter to run."""

    def __call__(self, config: Mapping[str, Any]) -> FrameworkAdapter: ...
