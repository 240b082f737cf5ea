"""One run of a ``Runtime``: plan, each step in dependency order, validation, the end.

Kept apart from ``runtime`` so the entry point stays readable; nothing here is public.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from backstay.classify import classify
from backstay.events import BUS
from backstay.failure import Failure
from backstay.runtime.adapter_hooks import RunView
from backstay.runtime.context import ExecutionContext
from backstay.runtime.errors import (
    ApprovalRequired,
    LimitExceeded,
    RunHalted,
    SecurityViolation,
)
from backstay.runtime.events import (
    PlanCreated,
    RunAborted,
    RunFinished,
    RuntimeEvent,
    StepCompleted,
    StepStarted,
)
from backstay.runtime.gated import reset_tool_gate, set_tool_gate
from backstay.runtime.interface import AdapterError as InterfaceAdapterError
from backstay.runtime.interface import ErrorCategory
from backstay.runtime.limits import LimitBreach, LimitName
from backstay.runtime.plan import Plan, Step, redacted_plan
from backstay.runtime.protocol import FrameworkAdapter
from backstay.runtime.records import RunRecord, RunStatus
from backstay.runtime.results import StepResult, StepStatus
from backstay.runtime.toolgate import ToolGate, call_key
from backstay.runtime.trace import reset_trace_id, set_trace_id

if TYPE_CHECKING:
    from backstay.runtime.runtime import Runtime

__all__ = ["RunDriver"]

T = TypeVar("T")


def _framework_failure(exc: Exception, adapter: str) -> Failure:
    """What a framework's exception is recorded as: its classification (code, provider,
    status, wait) without its message or details, which may carry prompts or internals."""
    found = classify(exc)
    return Failure(
        code=found.code,
        message=f"the {adapter} adapter raised {type(exc).__name__} ({found.kind})",
        retry_after_s=found.retry_after_s,
        provider=found.provider,
        status=found.status,
    )


async def _called(fn: Callable[..., Any], expected: type[T], *args: Any) -> T:
    """``fn(*args)`` awaited: a coroutine function in the loop, a plain function (the
    agent adapter interface's synchronous ``plan`` / ``execute``) in a worker thread, so
    the step's timeout and the run's wall time still bound it. A ``TypeError`` when it
    returns something else than an ``expected``."""
    if inspect.iscoroutinefunction(fn):
        result = await fn(*args)
    else:
        result = await asyncio.to_thread(fn, *args)
        if inspect.isawaitable(result):
            result = await result
    if not isinstance(result, expected):
        name = getattr(fn, "__name__", "the adapter")
        raise TypeError(f"{name}() returned {type(result).__name__}, not a {expected.__name__}")
    return result


def _failed(step_id: str, failure: Failure, trace_id: str) -> StepResult:
    return StepResult(step_id=step_id, status=StepStatus.FAILED, error=failure, trace_id=trace_id)


class RunDriver:
    """Drives one run of ``runtime`` from ``record`` (new or resumed)."""

    def __init__(
        self,
        runtime: Runtime,
        record: RunRecord,
        ctx: ExecutionContext,
        *,
        clear_input: Any = None,
    ) -> None:
        self.rt = runtime
        self.record = record
        self.ctx = ctx
        # A resumed run's input in the clear (its checkpoint keeps it redacted), if given.
        self.clear_input = clear_input
        self.tools = ToolGate(
            ctx,
            tools=runtime.tools,
            policy=runtime.settings.tools,
            store=runtime.store,
            emit=self.emit,
            redact=runtime.redactor.mapping,
            clock=runtime.clock,
        )
        # Each result redacted once, when it is added: the recorded form.
        self.results: dict[str, StepResult] = {r.step_id: r for r in record.results}
        self._last_step: str | None = None
        self._step_repeats = 0
        # The plan, step and result of the moment, for ``AdapterHooks``.
        self.view = RunView()

    def emit(self, cls: type[RuntimeEvent], fields: dict[str, Any]) -> None:
        if BUS.wants(cls.level):
            ctx = self.ctx
            BUS.emit(
                cls(
                    trace_id=ctx.trace_id,
                    tenant=ctx.tenant,
                    run_id=ctx.run_id,
                    adapter=ctx.adapter,
                    operation=f"agent.run:{ctx.run_id}",
                    **fields,
                )
            )

    def _keep(self, result: StepResult) -> None:
        redacted = self.rt.redactor.mapping(result.output)
        if redacted != result.output:
            result = dataclasses.replace(result, output=redacted)
        self.results[result.step_id] = result

    def _save(
        self, status: RunStatus, failure: Failure | None = None, newest: StepResult | None = None
    ) -> RunRecord:
        redact = self.rt.redactor
        self.record = dataclasses.replace(
            self.record,
            status=status,
            input=redact.mapping(self.record.input),
            results=tuple(self.results.values()),
            state=redact.mapping(self.ctx.state),
            usage=self.ctx.usage,
            failure=failure,
        )
        # The plan's parameters hold the input (the prompt): kept redacted, as the input
        # is; the run goes on with the plan as made.
        saved = dataclasses.replace(
            self.record, plan=redacted_plan(self.record.plan, redact.mapping)
        )
        if newest is None:
            self.rt.store.save_run(saved)
        else:
            self.rt.store.save_progress(saved, self.results[newest.step_id])
        return self.record

    async def run(self) -> RunRecord:
        token = set_trace_id(self.ctx.trace_id)
        gate_token = set_tool_gate(self.tools)
        try:
            return await self._run()
        except RunHalted as exc:
            return self._halted(self.ctx.halt(exc))
        finally:
            reset_tool_gate(gate_token)
            reset_trace_id(token)

    async def _run(self) -> RunRecord:
        plan = self.record.plan
        if plan is not None and self.clear_input is not None:
            plan = await self._clear_plan(plan)
        if plan is None:
            made = await self._plan()
            if isinstance(made, Failure):
                return self._finish(RunStatus.FAILED, made)
            plan = made
            self.record = dataclasses.replace(self.record, plan=plan)
            self.view.plan = plan
            self.emit(PlanCreated, {"plan_id": plan.id, "steps": len(plan.steps)})
            self._save(RunStatus.RUNNING)
        self.view.plan = plan
        for step in plan.order():
            done = self.results.get(step.id)
            if done is not None and done.ok:
                continue
            result = await self._step(step)
            self._keep(result)
            if result.status is StepStatus.BLOCKED:
                return self._finish(RunStatus.PAUSED, result.error)
            if not result.ok:
                return self._finish(RunStatus.FAILED, result.error)
            self._save(RunStatus.RUNNING, newest=result)
        return self._finish(RunStatus.SUCCEEDED, None)

    async def _clear_plan(self, stored: Plan) -> Plan:
        """The checkpoint's (redacted) plan with its parameters in the clear again: the plan
        made anew from the clear input when it redacts to the stored one, else ``stored``."""
        self.record = dataclasses.replace(self.record, input=self.clear_input)
        made = await self._plan()
        if isinstance(made, Plan):
            again = redacted_plan(made, self.rt.redactor.mapping)
            if again is not None and again.to_dict() == stored.to_dict():
                return made
        return stored

    async def _plan(self) -> Plan | Failure:
        adapters = [self.rt.adapter] + ([self.rt.fallback] if self.rt.fallback else [])
        failure = Failure(code="ERR_UNKNOWN", message="no adapter planned")
        for adapter in adapters:
            try:
                return await _called(adapter.plan, Plan, self.record.input, self.ctx)
            except RunHalted:
                raise
            except Exception as exc:  # noqa: BLE001 - a framework error: classified, fallback
                self.ctx.check_halted()
                failure = _framework_failure(exc, adapter.name)
        return failure

    def _loop_check(self, step: Step) -> None:
        key = call_key(step.action, step.parameters)
        self._step_repeats = self._step_repeats + 1 if key == self._last_step else 1
        self._last_step = key
        breach = self.ctx.tracker.loop(self._step_repeats)
        if breach is not None:
            raise LimitExceeded(breach)

    def _check(self, *, call: str, retry: bool = False) -> None:
        breach = self.ctx.tracker.check_before(self.rt.clock.monotonic(), call=call, retry=retry)
        if breach is not None:
            raise LimitExceeded(breach)

    async def _step(self, step: Step) -> StepResult:
        ctx, settings = self.ctx, self.rt.settings
        self._check(call="step")
        self._loop_check(step)
        ctx.tracker.record_step()
        ctx.feedback = None
        self.view.step, self.view.result = step, None
        attempt = 0
        while True:
            attempt += 1
            self.emit(StepStarted, {"step_id": step.id, "action": step.action, "attempt": attempt})
            result = await self._execute(step)
            feedback = self._feedback(result)
            if feedback is None or isinstance(feedback, StepResult):
                result = feedback or result
                break
            if attempt > settings.max_corrections:
                result = _failed(
                    step.id, Failure(code="ERR_OUTPUT_INVALID", message=feedback), ctx.trace_id
                )
                break
            self._check(call="model", retry=True)
            ctx.tracker.record_retry()
            ctx.feedback = feedback
        ctx.feedback = None
        self.view.result = result
        error = result.error.code if result.error else None
        self.emit(
            StepCompleted,
            {
                "step_id": step.id,
                "status": str(result.status),
                "tokens": result.usage.tokens_total,
                "code": error,
            },
        )
        return result

    def _feedback(self, result: StepResult) -> str | StepResult | None:
        """``None``: keep the result; a string: run the step again with this feedback;
        a result: keep this one instead (a corrected output)."""
        if result.status is StepStatus.RETRY:
            return result.error.message if result.error else "try again"
        schema = self.rt.settings.schema
        if not result.ok or schema is None:
            return None
        check = self.rt.adapter.validate(result.output, schema)
        if check.corrected is not None:
            return dataclasses.replace(result, output=check.corrected)
        return None if check.ok else check.feedback()

    async def _execute(self, step: Step) -> StepResult:
        ctx = self.ctx
        adapters = [self.rt.adapter] + ([self.rt.fallback] if self.rt.fallback else [])
        failure = Failure(code="ERR_UNKNOWN", message="no adapter ran")
        for adapter in adapters:
            try:
                result = await self._bounded(adapter, step)
            except RunHalted:
                raise
            except TimeoutError:
                ctx.check_halted()
                return _failed(
                    step.id,
                    Failure(code="ERR_TIMEOUT", message=f"step {step.id!r} timed out"),
                    ctx.trace_id,
                )
            except InterfaceAdapterError as exc:
                ctx.check_halted()
                recovered = self._recover(step, exc)
                if recovered is not None:
                    return recovered
                failure = exc.failure
                continue
            except Exception as exc:  # noqa: BLE001 - a framework error: classified, fallback
                ctx.check_halted()
                failure = _framework_failure(exc, adapter.name)
                continue
            ctx.check_halted()
            return dataclasses.replace(result, step_id=step.id, trace_id=ctx.trace_id)
        return _failed(step.id, failure, ctx.trace_id)

    def _recover(self, step: Step, exc: InterfaceAdapterError) -> StepResult | None:
        """The recovery the agent adapter interface gives ``exc``'s category: a result,
        a halt raised, or ``None`` to try the fallback adapter (a framework error)."""
        category, trace_id = exc.category, self.ctx.trace_id
        if category is ErrorCategory.SECURITY_VIOLATION:
            raise self.ctx.halt(SecurityViolation(exc.failure.message))
        if category is ErrorCategory.LIMIT_EXCEEDED:
            raise self.ctx.halt(RunHalted(exc.failure))
        if category is ErrorCategory.VALIDATION_ERROR and exc.retryable:
            return StepResult(
                step_id=step.id, status=StepStatus.RETRY, error=exc.failure, trace_id=trace_id
            )
        if category is ErrorCategory.FRAMEWORK_ERROR:
            return None
        return _failed(step.id, exc.failure, trace_id)

    async def _bounded(self, adapter: FrameworkAdapter, step: Step) -> StepResult:
        """``execute`` within the step's timeout and the run's remaining wall time."""
        limits = self.ctx.tracker.limits
        elapsed = self.rt.clock.monotonic() - self.ctx.tracker.started
        wall_left = max(0.0, limits.wall_time_s - elapsed)
        timeout = wall_left if step.timeout_s is None else min(step.timeout_s, wall_left)
        try:
            async with asyncio.timeout(timeout):
                return await _called(adapter.execute, StepResult, step, self.tools, self.ctx)
        except TimeoutError:
            if step.timeout_s is None or wall_left <= step.timeout_s:
                breach = LimitBreach(
                    limit=LimitName.WALL_TIME, allowed=limits.wall_time_s, reached=elapsed + timeout
                )
                raise self.ctx.halt(LimitExceeded(breach)) from None
            raise

    def _halted(self, exc: RunHalted) -> RunRecord:
        if isinstance(exc, ApprovalRequired):
            status = RunStatus.PAUSED
        elif isinstance(exc, SecurityViolation):
            status = RunStatus.ESCALATED
        elif isinstance(exc, LimitExceeded) or exc.failure.code.startswith("ERR_LIMIT_"):
            status = RunStatus.LIMIT_EXCEEDED
        else:
            status = RunStatus.FAILED
        self.emit(RunAborted, {"code": exc.failure.code, "message": exc.failure.message})
        return self._finish(status, exc.failure)

    def _finish(self, status: RunStatus, failure: Failure | None) -> RunRecord:
        record = self._save(status, failure)
        self.emit(
            RunFinished,
            {
                "status": str(status),
                "steps": len(record.results),
                "tokens": record.usage.tokens_total,
            },
        )
        return record
