"""What runs inside a Ray worker: one task of the batch, driven under its lease.

``drive_on_worker(job, operation_id)`` is the function the ``RayExecutor`` places on the
cluster, once per task. It opens the batch's stores from ``job.store`` (a location, as
text: ``backstay.executors._stores``), once per worker process and kept for the next task
placed on it, and calls ``Engine.drive_task``: the task is claimed under its operation
lease, taken up as the resume rules say, and every transition is recorded in the shared
store by this worker before and after it happens, exactly as the local engine does.
The agent CLIs it starts go through this worker process's own gateway (started with the
first of them) or the batch's shared one, as ``job.gateway`` says
(``backstay.executors.ray_gateway``).

What comes back to the driver is a ``WorkerReport``: where the task stands and the events
its driving emitted here (the driver emits them again, for its progress display and its
sinks; ``events.jsonl`` was written here; with them, when the driver exports
OpenTelemetry spans, the request spans of this worker's gateway as events, which the
driver makes spans of under the run's attempt: ``backstay.gateway.span_records``). A
task that could not be driven (a secret missing in this worker's environment, a bad
adapter setting) raises, and the driver stops the batch with that error. Ray retries
nothing (``max_retries=0``): a worker that dies takes only its lease with it, and the
driver decides whether to place the task again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import socket
from collections.abc import Mapping
from typing import Final

from backstay.adapters.gateway_wiring import use_gateway
from backstay.breaker.settings import BreakerSettings
from backstay.engine.runner import Engine
from backstay.engine.states import TaskState
from backstay.events import BUS, Event
from backstay.events.spans import SpanRecorded
from backstay.executors._stores import open_worker_engine
from backstay.executors.ray_gateway import WorkerGateway, worker_gateway
from backstay.fallback.rules import FallbackRules
from backstay.idempotency.settings import GuardSettings
from backstay.policy.budget import BudgetSettings
from backstay.policy.ratelimit import RateLimitSettings

__all__ = ["WorkerJob", "WorkerReport", "drive_on_worker"]

# The engines this worker process opened, by job (its repr: the settings hold mappings):
# a worker runs many tasks of one batch.
_ENGINES: Final[dict[str, Engine]] = {}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkerJob:
    """What every worker of a batch needs to open its engine: the store location (text)
    and what to do when it stops answering, the state directory (where the runs' artefacts
    go), the engine's settings, and the gateway its agent CLIs go through (``None``:
    straight to their providers; ``backstay.executors.ray_gateway``)."""

    store: str
    state_dir: str
    store_unavailable: str = "stop"
    guard_settings: GuardSettings
    breaker: BreakerSettings | None
    fallback_rules: FallbackRules
    event_log: bool = True
    rate_limits: Mapping[str, RateLimitSettings] = dataclasses.field(default_factory=dict)
    retry_budget: BudgetSettings | None = None
    gateway: WorkerGateway | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkerReport:
    """Where a task stands after a worker drove it, which process drove it, and the
    events emitted meanwhile."""

    operation_id: str
    state: TaskState
    worker: str
    events: tuple[Event, ...] = ()


class _Collected:
    """A sink keeping the events of one task while it is driven here (INFO and above;
    with ``spans``, also the gateway's ``SpanRecorded``, DEBUG, for the driver's
    trace)."""

    min_level: int = logging.INFO

    def __init__(self, *, spans: bool = False) -> None:
        self.events: list[Event] = []
        if spans:
            self.min_level = logging.DEBUG

    def accepts(self, level: int) -> bool:
        return level >= self.min_level

    def emit(self, event: Event) -> None:
        if event.level >= logging.INFO or isinstance(event, SpanRecorded):
            self.events.append(event)


def _engine(job: WorkerJob) -> Engine:
    key = repr(job)
    found = _ENGINES.get(key)
    if found is None:
        found = _ENGINES[key] = open_worker_engine(job)
    return found


def drive_on_worker(job: WorkerJob, operation_id: str) -> WorkerReport:
    """Drive ``operation_id`` of the batch ``job`` names, here; see the module docstring."""
    engine = _engine(job)
    collected = _Collected(spans=job.gateway is not None and job.gateway.spans)
    BUS.add(collected)
    try:
        with use_gateway(worker_gateway(job.gateway, engine)):
            record = asyncio.run(engine.drive_task(operation_id))
    finally:
        BUS.remove(collected)
    return WorkerReport(
        operation_id=operation_id,
        state=record.state,
        worker=f"{socket.gethostname()}:{os.getpid()}",
        events=tuple(collected.events),
    )
