"""``Runtime``: runs a ``FrameworkAdapter`` under backstay's contract.

::

    runtime = Runtime(adapter, tools=[...], settings=RuntimeSettings(...), store=...)
    record = await runtime.run("the task", tenant="acme", session_id="s1")
    record.status            # succeeded, failed, limit_exceeded, escalated, paused
    record = await runtime.resume(record.run_id, tenant="acme")   # after an approval

A run asks the adapter for a ``Plan``, executes each step once its dependencies
succeeded (each model call through ``context.model``, each tool call through the
``ToolGate``), validates each output (and runs the step again with the validation
feedback when it does not hold), and checkpoints the step results after each step. A
hard limit ends the run with the results so far (``limit_exceeded``); a forbidden tool or
a sandbox escape ends it at once (``escalated``); a tool call that needs approval pauses
it (``paused``) with a durable approval request that ``resume`` picks up after the
decision. A framework error moves the step to the ``fallback`` adapter when one is given.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from backstay._checks import check_name
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.errors import ConfigError
from backstay.policy.protocols import CircuitBreakerLike, RateLimiterLike, RetryBudgetLike
from backstay.runtime._drive import RunDriver
from backstay.runtime.adapter_hooks import AdapterHooks, bridge
from backstay.runtime.context import ExecutionContext, ToolCache
from backstay.runtime.health import HealthReport, health_check
from backstay.runtime.hooks import Hooks, router
from backstay.runtime.limits import LimitTracker
from backstay.runtime.memory import InMemoryMemory, MemoryManager, SessionMemory
from backstay.runtime.modelgate import ModelGate
from backstay.runtime.protocol import FrameworkAdapter
from backstay.runtime.records import RunRecord, RunStatus
from backstay.runtime.sensitive import SensitiveRedactor
from backstay.runtime.settings import RuntimeSettings
from backstay.runtime.store import MemoryRunStore, RunStore
from backstay.runtime.tools import Tool

__all__ = ["Runtime"]


def _new_id() -> str:
    return uuid.uuid4().hex


class Runtime:
    """One framework adapter with its tools, settings, stores and reliability parts."""

    def __init__(
        self,
        adapter: FrameworkAdapter,
        *,
        tools: Iterable[Tool] = (),
        settings: RuntimeSettings | None = None,
        store: RunStore | None = None,
        memory: MemoryManager | None = None,
        fallback: FrameworkAdapter | None = None,
        breaker: CircuitBreakerLike | None = None,
        limiter: RateLimiterLike | None = None,
        budget: RetryBudgetLike | None = None,
        hooks: Hooks | AdapterHooks | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not isinstance(adapter, FrameworkAdapter):
            raise ConfigError(
                f"{type(adapter).__name__} does not implement FrameworkAdapter", where="adapter"
            )
        self.adapter = adapter
        self.fallback = fallback
        self.tools = {t.name: t for t in tools}
        self.settings = settings or RuntimeSettings()
        self.store: RunStore = store if store is not None else MemoryRunStore()
        self.memory: MemoryManager = memory if memory is not None else InMemoryMemory()
        self.breaker = breaker
        self.limiter = limiter
        self.budget = budget
        self.hooks = hooks
        self.clock = clock
        self.redactor = SensitiveRedactor(self.settings.redact_patterns)

    def _tenant(self, given: str | None) -> str:
        """The run's tenant: ``given``, which a ``SecurityConfig`` must name (tenant
        isolation), else the security's tenant, else ``"default"``."""
        security = self.settings.security
        if given is None:
            return "default" if security is None else security.tenant_id
        check_name(given, where="tenant")
        if security is not None and given != security.tenant_id:
            raise ConfigError(
                f"this runtime serves tenant {security.tenant_id!r}, not {given!r}",
                where="tenant",
            )
        return given

    def _context(self, record: RunRecord, user: str | None) -> ExecutionContext:
        tracker = LimitTracker(self.settings.limits, started=self.clock.monotonic())
        tracker.usage = record.usage
        tracker.steps = sum(1 for r in record.results if r.ok)
        ctx = ExecutionContext(
            run_id=record.run_id,
            session_id=record.session_id,
            tenant=record.tenant,
            user=user,
            trace_id=record.trace_id,
            adapter=record.adapter,
            state=dict(record.state),
            memory=SessionMemory(self.memory, record.tenant, record.session_id, self.redactor),
            cache=ToolCache(self.store, record.tenant),
            tracker=tracker,
            started_at=self.clock.now(),
        )
        ctx.model = ModelGate(
            ctx,
            policy=self.settings.policy,
            breaker=self.breaker,
            limiter=self.limiter,
            budget=self.budget,
            clock=self.clock,
        )
        return ctx

    async def _drive(
        self,
        record: RunRecord,
        user: str | None,
        hooks: Hooks | AdapterHooks | None,
        clear_input: Any = None,
    ) -> RunRecord:
        ctx = self._context(record, user)
        driver = RunDriver(self, record, ctx, clear_input=clear_input)
        given = hooks or self.hooks
        chosen = (
            bridge(given, ctx, driver.view, self.clock)
            if isinstance(given, AdapterHooks)
            else given
        )
        if chosen is not None:
            router().register(record.trace_id, chosen)
        try:
            return await driver.run()
        finally:
            if chosen is not None:
                router().unregister(record.trace_id)

    async def run(
        self,
        input: Any,
        *,
        tenant: str | None = None,
        session_id: str | None = None,
        user: str | None = None,
        run_id: str | None = None,
        trace_id: str | None = None,
        hooks: Hooks | AdapterHooks | None = None,
    ) -> RunRecord:
        """Run the adapter on ``input`` (JSON) for ``tenant`` (default: the settings'
        ``security.tenant_id``, else ``"default"``); the finished checkpoint."""
        tenant = self._tenant(tenant)
        run_id = run_id or _new_id()
        if self.store.load_run(tenant, run_id) is not None:
            raise ConfigError(f"run {run_id!r} exists already: resume it", where="run_id")
        record = RunRecord(
            tenant=tenant,
            run_id=run_id,
            adapter=self.adapter.name,
            session_id=session_id or run_id,
            trace_id=trace_id or _new_id(),
            status=RunStatus.RUNNING,
            input=self.redactor.mapping(input),
        )
        self.store.save_run(record)
        return await self._drive(dataclasses.replace(record, input=input), user, hooks)

    async def resume(
        self,
        run_id: str,
        *,
        tenant: str | None = None,
        user: str | None = None,
        hooks: Hooks | AdapterHooks | None = None,
        clear_input: Any = None,
    ) -> RunRecord:
        """Continue a paused or interrupted run from its checkpoint (its successful steps
        are not run again); a finished run is returned as it is. The checkpoint keeps the
        input and the plan redacted; ``clear_input``, the run's input as first given, lets
        the steps still to run have their parameters in the clear again (when the plan made
        from it redacts to the stored one)."""
        tenant = self._tenant(tenant)
        record = self.store.load_run(tenant, run_id)
        if record is None:
            raise ConfigError(f"no run {run_id!r} for tenant {tenant!r}", where="run_id")
        if not record.status.resumable:
            return record
        if clear_input is not None and self.redactor.mapping(clear_input) == clear_input:
            clear_input = None  # nothing was redacted: the checkpoint is the clear form
        return await self._drive(record, user, hooks, clear_input)

    def health_check(self, *, exporter_probe: Callable[[], bool] | None = None) -> HealthReport:
        """Adapters available, limits enforced, sandbox, trace exporter (``health``)."""
        return health_check(self, exporter_probe=exporter_probe)

    def run_sync(self, input: Any, **kwargs: Any) -> RunRecord:
        """``run`` for code without an event loop."""
        return asyncio.run(self.run(input, **kwargs))

    def resume_sync(self, run_id: str, **kwargs: Any) -> RunRecord:
        return asyncio.run(self.resume(run_id, **kwargs))
