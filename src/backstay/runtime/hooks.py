"""``Hooks``: callbacks on a run's events, fed from the event bus.

One ``HookRouter`` sink is added to the bus on first use; each run registers its hooks
under its trace id while it runs, and the router hands each event to the hooks of the run
it belongs to: runtime events by ``trace_id``, the retry driver's ``RetryScheduled`` by the
run's model ``operation``. A hook that raises is reported by the bus and never breaks
the run.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import Any

from backstay.events import BUS, Event, RetryScheduled
from backstay.failure import Failure
from backstay.runtime.events import (
    MODEL_OPERATION_PREFIX,
    PlanCreated,
    RunAborted,
    RuntimeEvent,
    StepCompleted,
    StepStarted,
)

__all__ = ["HookRouter", "Hooks", "router"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """Optional callbacks. ``on_retry(attempt, backoff_s, failure)`` is called for each
    retried model call; ``on_trace(event)`` for every event of the run."""

    on_plan_created: Callable[[PlanCreated], Any] | None = None
    on_step_start: Callable[[StepStarted], Any] | None = None
    on_step_complete: Callable[[StepCompleted], Any] | None = None
    on_retry: Callable[[int, float, Failure], Any] | None = None
    on_abort: Callable[[RunAborted], Any] | None = None
    on_trace: Callable[[Event], Any] | None = None


class HookRouter:
    """The sink that routes events to the hooks of their run."""

    min_level = logging.DEBUG

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hooks: dict[str, Hooks] = {}

    def accepts(self, level: int) -> bool:
        return bool(self._hooks)

    def register(self, trace_id: str, hooks: Hooks) -> None:
        with self._lock:
            self._hooks[trace_id] = hooks

    def unregister(self, trace_id: str) -> None:
        with self._lock:
            self._hooks.pop(trace_id, None)

    def emit(self, event: Event) -> None:
        trace_id = _trace_of(event)
        hooks = self._hooks.get(trace_id) if trace_id else None
        if hooks is None:
            return
        if hooks.on_trace is not None:
            hooks.on_trace(event)
        if isinstance(event, RetryScheduled):
            if hooks.on_retry is not None:
                hooks.on_retry(event.attempt, event.delay_s, event.failure)
        elif isinstance(event, PlanCreated):
            if hooks.on_plan_created is not None:
                hooks.on_plan_created(event)
        elif isinstance(event, StepStarted):
            if hooks.on_step_start is not None:
                hooks.on_step_start(event)
        elif isinstance(event, StepCompleted):
            if hooks.on_step_complete is not None:
                hooks.on_step_complete(event)
        elif isinstance(event, RunAborted) and hooks.on_abort is not None:
            hooks.on_abort(event)


def _trace_of(event: Event) -> str | None:
    if isinstance(event, RuntimeEvent):
        return event.trace_id
    op = event.operation
    if op is not None and op.startswith(MODEL_OPERATION_PREFIX):
        return op[len(MODEL_OPERATION_PREFIX) :]
    return None


class _Installed:
    router: HookRouter | None = None
    lock = threading.Lock()


def router() -> HookRouter:
    """The process's router, added to the bus on first use."""
    with _Installed.lock:
        if _Installed.router is None:
            _Installed.router = HookRouter()
            BUS.add(_Installed.router)
        return _Installed.router
