"""``AdapterHooks``, ``TraceEvent``, ``LogEntry``: the agent adapter interface's hook
class, with its printed signatures, fed by the same events as ``Hooks``.

Subclass ``AdapterHooks``, override the methods wanted (each does nothing by default)
and pass an instance as ``hooks=`` to ``Runtime`` or ``Runtime.run``. The runtime turns
it into a ``Hooks`` for the run (``bridge``): each callback gets the run's objects (the
``Plan``, the ``Step``, the ``StepResult``, the ``ExecutionContext``) instead of the event,
``on_retry`` the retried step, the attempt and the backoff in whole milliseconds, and
``on_trace`` every event of the run as a ``TraceEvent``: one span per run (its ``span_id``
the run id) and one per step (``run_id/step_id``, its parent the run's), timed from the
runtime's clock.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from backstay.events import Event, RetryScheduled
from backstay.runtime.events import (
    PlanCreated,
    RunAborted,
    RunFinished,
    RuntimeEvent,
    StepCompleted,
    StepStarted,
)
from backstay.runtime.hooks import Hooks

if TYPE_CHECKING:
    from backstay.clock import Clock
    from backstay.runtime.context import ExecutionContext
    from backstay.runtime.plan import Plan, Step
    from backstay.runtime.results import StepResult

__all__ = ["AdapterHooks", "LogEntry", "TraceEvent", "bridge"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """A message logged on a span, with its time."""

    timestamp: _dt.datetime
    message: str
    fields: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TraceEvent:
    """One event of a run as a span event: ``operation`` is the event's name
    (``agent.step_completed`` …); ``duration_ms`` is set on the end of a span (a step
    completed, the run finished); ``tags`` hold the event's names and ids, ``metrics``
    its counts (tokens), ``logs`` its message (an abort's reason)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    operation: str
    timestamp: _dt.datetime
    duration_ms: int | None
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)
    logs: tuple[LogEntry, ...] = ()
    metrics: Mapping[str, float] = dataclasses.field(default_factory=dict)


class AdapterHooks:
    """The interface's hooks; every method is optional (a no-op here)."""

    def on_plan_created(self, plan: Plan, context: ExecutionContext) -> None:
        """Called when plan is generated."""

    def on_step_start(self, step: Step, context: ExecutionContext) -> None:
        """Called before step execution."""

    def on_step_complete(self, step: Step, result: StepResult, context: ExecutionContext) -> None:
        """Called after step completion."""

    def on_retry(self, step: Step, attempt: int, backoff_ms: int) -> None:
        """Called on step retry with exponential backoff."""

    def on_abort(self, reason: str, context: ExecutionContext) -> None:
        """Called when execution is terminated."""

    def on_trace(self, trace_event: TraceEvent, context: ExecutionContext) -> None:
        """Called for distributed tracing events."""


class RunView:
    """What the bridge reads of a run while it runs (the driver keeps it current)."""

    plan: Plan | None = None
    step: Step | None = None
    result: StepResult | None = None


_TAGS = ("adapter", "tenant", "run_id", "step_id", "action", "status", "code", "tool", "outcome")
_METRICS = ("tokens", "steps", "attempt")


class _Spans:
    def __init__(self, ctx: ExecutionContext, clock: Clock) -> None:
        self.ctx = ctx
        self.clock = clock
        self.run_started = clock.monotonic()
        self.step_started: dict[str, float] = {}

    def trace_event(self, event: Event) -> TraceEvent:
        ctx, now = self.ctx, self.clock.monotonic()
        step_id = getattr(event, "step_id", None)
        duration: float | None = None
        if isinstance(event, StepStarted):
            self.step_started.setdefault(event.step_id, now)
        elif isinstance(event, StepCompleted):
            duration = now - self.step_started.pop(event.step_id, now)
        elif isinstance(event, RunFinished):
            duration = now - self.run_started
        tags = {
            key: str(getattr(event, key)) for key in _TAGS if getattr(event, key, None) is not None
        }
        metrics = {key: float(getattr(event, key)) for key in _METRICS if hasattr(event, key)}
        stamp = self.clock.now()
        logs: tuple[LogEntry, ...] = ()
        if isinstance(event, RunAborted):
            logs = (LogEntry(timestamp=stamp, message=event.message, fields={"code": event.code}),)
        elif isinstance(event, RetryScheduled):
            metrics["backoff_ms"] = round(event.delay_s * 1000)
            tags["code"] = event.failure.code
        return TraceEvent(
            trace_id=event.trace_id if isinstance(event, RuntimeEvent) else ctx.trace_id,
            span_id=ctx.run_id if step_id is None else f"{ctx.run_id}/{step_id}",
            parent_span_id=None if step_id is None else ctx.run_id,
            operation=event.name,
            timestamp=stamp,
            duration_ms=None if duration is None else round(duration * 1000),
            tags=tags,
            logs=logs,
            metrics=metrics,
        )


def bridge(hooks: AdapterHooks, ctx: ExecutionContext, view: RunView, clock: Clock) -> Hooks:
    """``hooks`` as the ``Hooks`` of one run, reading its objects from ``view``."""
    spans = _Spans(ctx, clock)

    def plan_created(_: PlanCreated) -> None:
        if view.plan is not None:
            hooks.on_plan_created(view.plan, ctx)

    def step_start(event: StepStarted) -> None:
        if view.step is None:
            return
        if event.attempt > 1:  # the step run again (a retry status, validation feedback)
            hooks.on_retry(view.step, event.attempt, 0)
        hooks.on_step_start(view.step, ctx)

    def step_complete(_: StepCompleted) -> None:
        if view.step is not None and view.result is not None:
            hooks.on_step_complete(view.step, view.result, ctx)

    def retry(attempt: int, backoff_s: float, _: Any) -> None:
        if view.step is not None:
            hooks.on_retry(view.step, attempt, round(backoff_s * 1000))

    def abort(event: RunAborted) -> None:
        hooks.on_abort(event.message, ctx)

    def trace(event: Event) -> None:
        hooks.on_trace(spans.trace_event(event), ctx)

    return Hooks(
        on_plan_created=plan_created,
        on_step_start=step_start,
        on_step_complete=step_complete,
        on_retry=retry,
        on_abort=abort,
        on_trace=trace,
    )
