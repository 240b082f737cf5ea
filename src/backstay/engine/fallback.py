"""``TaskFallback``: a task's fallback chain inside the engine.

A task with ``fallbacks`` runs each attempt on one candidate of its chain (its own
adapter and model first). Before an attempt the driver asks ``choose``: the candidate
the pure selection (``backstay.fallback.select.choose``) names from the attempts of the
current retry budget and which candidates are available (breaker admits, not cooling
down); ``None`` means every candidate it could use is unavailable, and the task waits
(recorded like a wait for an open circuit). After a failure, ``move`` records the
cooldowns the rules call for and, when the failure moves on and the budget allows,
returns the task's next step: ``retrying`` at once on another candidate. Otherwise the
driver decides as for any task (``decision.next_step``).

The chain keeps the candidate of the current attempt (``current``): ``admit`` sets it,
``target`` gives its adapter and request, ``model_keys`` names it in ``metrics.json``
and a success's result, ``move`` moves from it. ``attempt_target`` gives the spec and
adapter an attempt on it is estimated and charged as by spending budgets (that
candidate's adapter, model and settings): a budget refusal happens after ``admit`` and
before the attempt begins, gives the permit back and is no failure of the candidate.

Each candidate's attempt runs with its own adapter's environment (``envs``: the engine
gives each the task's explicit variables over the standard variables of that adapter's
provider, read when the task is taken up and never recorded).

An agent CLI's partial work: an attempt on an agent CLI (an adapter with an ``agent``)
that changed its workspace (``backstay.fallback.workspace``) never moves to another
candidate — another agent would start from a half-done workspace, which backstay does
not reset; the failure is handled as without a chain (retried on the same candidate or
not, as the policy says). An API adapter's stream cut after output says so in
``details.stream_interrupted``, which never moves either.

Breakers are the engine's ``CircuitGate`` breakers named ``Candidate.name`` (the task's
own is ``"adapter/model"``, the breaker every task of that model shares); cooldowns are
kept in ``state.sqlite`` (``SQLiteFallbackStore``), so every runner sees them.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from backstay.adapters.contract import Adapter, AgentRequest
from backstay.adapters.limits import apply_task_limits
from backstay.adapters.registry import adapter_class
from backstay.clock import Clock
from backstay.engine import _notify as notify
from backstay.engine.circuits import CircuitGate
from backstay.engine.decision import NextStep, next_step
from backstay.engine.events import TaskFellBack
from backstay.engine.records import AttemptOutcome, AttemptRecord, TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.engine.taskstore import TaskStore
from backstay.errors import CircuitOpen
from backstay.events import BUS
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate, adapter_config
from backstay.fallback.health import CandidateHealth
from backstay.fallback.rules import FallbackRules, mark_workspace_changed
from backstay.fallback.select import Tried, choose, plan_failure
from backstay.fallback.store import FallbackStore
from backstay.fallback.workspace import WorkspaceMark
from backstay.policy.protocols import Permit
from backstay.policy.retry import RetryPolicy

__all__ = ["TaskFallback", "attempt_target", "candidate_config", "model_keys", "step_after"]


def candidate_config(spec: TaskSpec, candidate: Candidate) -> dict[str, Any]:
    """The adapter config of an attempt on ``candidate`` (``fallback.adapter_config``),
    with the task's ``limits`` mapped onto a candidate's other adapter (``ConfigError``
    for one it cannot enforce)."""
    config = adapter_config(candidate, adapter=spec.adapter, config=spec.config)
    if spec.limits and candidate.adapter != spec.adapter:
        config = apply_task_limits(adapter_class(str(candidate.adapter)), config, spec.limits)
    return config


def model_keys(spec: TaskSpec, chain: TaskFallback | None) -> dict[str, str]:
    """The requested and the answering adapter and model of ``chain``'s current attempt
    (the task's own without a chain)."""
    answering = spec.candidates[0 if chain is None else chain.current]
    return {
        "requested_adapter": spec.adapter,
        "requested_model": spec.model,
        "adapter": str(answering.adapter),
        "model": answering.model,
    }


def attempt_target(
    spec: TaskSpec, adapter: Adapter, chain: TaskFallback | None, index: int | None = None
) -> tuple[TaskSpec, Adapter]:
    """The spec and adapter of an attempt on candidate ``index`` of ``chain`` (default:
    the current one): what a spending budget estimates and charges it as. Without a chain,
    or on the task's own candidate, ``spec`` and ``adapter`` themselves."""
    if chain is None:
        return spec, adapter
    chosen = chain.current if index is None else index
    if chosen == 0:
        return spec, adapter
    return chain.candidate_spec(chosen), chain.adapters[str(chain.candidates[chosen].adapter)]


def _index(candidates: Sequence[Candidate], name: str | None) -> int:
    for i, candidate in enumerate(candidates):
        if candidate.name == name:
            return i
    return 0  # attempts recorded before the task had a chain ran on its own model


class TaskFallback:
    """One task's chain: selection, permits, cooldowns and moves."""

    def __init__(
        self,
        spec: TaskSpec,
        *,
        rules: FallbackRules,
        store: FallbackStore,
        gate: CircuitGate | None,
        clock: Clock,
        adapters: Mapping[str, Adapter] | None = None,
        envs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        """``adapters``: the fallback candidates' adapters by name; ``envs``: the whole
        environment of an attempt on each of them, by adapter name (default: ``spec.env``,
        which is the task's own adapter's)."""
        self.spec = spec
        self.adapters = dict(adapters or {})
        self.envs = {name: dict(env) for name, env in (envs or {}).items()}
        # The candidate of the current attempt (0: the task's own adapter and model).
        self.current = 0
        # The workspace before the current attempt, when its agent may edit it.
        self._before: tuple[WorkspaceMark, Path, Path] | None = None
        self._specs: dict[int, TaskSpec] = {}
        self.rules = rules
        self.clock = clock
        self.gate = gate
        self.candidates = spec.candidates
        breakers = (
            [None] * len(self.candidates)
            if gate is None
            else [gate.registry.breaker_for(c.name) for c in self.candidates]
        )
        self.health = CandidateHealth(
            self.candidates, store=store, breaker=None, clock=clock, breakers=breakers
        )

    @property
    def current_name(self) -> str:
        return self.candidates[self.current].name

    def candidate_spec(self, index: int) -> TaskSpec:
        """The task as an attempt on candidate ``index`` runs it: that candidate's adapter,
        model, window, adapter config and environment (the task's own spec for ``index``
        0)."""
        if index == 0:
            return self.spec
        found = self._specs.get(index)
        if found is None:
            candidate = self.candidates[index]
            adapter = str(candidate.adapter)
            found = self._specs[index] = dataclasses.replace(
                self.spec,
                adapter=adapter,
                env=self.envs.get(adapter, self.spec.env),
                model=candidate.model,
                config=candidate_config(self.spec, candidate),
                context_window=candidate.context_window,
                fallbacks=(),
            )
        return found

    def upcoming(self, record: TaskRecord, attempts: Sequence[AttemptRecord]) -> int:
        """The candidate the next attempt would run on if it started now (the current one
        while none is available)."""
        index = self.choose(record, attempts)
        return self.current if index is None else index

    def _tried(self, record: TaskRecord, attempts: Sequence[AttemptRecord]) -> list[Tried]:
        return [
            Tried(index=_index(self.candidates, a.candidate), failure=a.failure)
            for a in sorted(attempts, key=lambda a: a.number)
            if a.number > record.budget_base
            and a.outcome is AttemptOutcome.FAILED
            and a.failure is not None
        ]

    def choose(self, record: TaskRecord, attempts: Sequence[AttemptRecord]) -> int | None:
        """The candidate of the next attempt, ``None`` while it must wait."""
        return choose(
            self.rules,
            self.candidates,
            tried=self._tried(record, attempts),
            available=self.health.available(),
            now=self.clock.now(),
        )

    def wait_s(self, record: TaskRecord, attempts: Sequence[AttemptRecord]) -> float:
        tried = self._tried(record, attempts)
        return self.health.wait_s([tried[-1].index] if tried else None)

    def acquire(self, index: int) -> Permit | None:
        """A permit of candidate ``index``'s breaker (``CircuitOpen`` when refused)."""
        if self.gate is None:
            return None
        return self.gate.acquire_named(self.candidates[index].name, self.spec.operation_id)

    async def admit(self, record: TaskRecord, *, store: TaskStore, policy: str) -> Permit | None:
        """Choose the candidate of the next attempt (``current``) and take its permit,
        after waiting while none it may use is available; each wait is recorded first
        (the circuit log, ``task.deferred``), and is not an attempt."""
        while True:
            attempts = store.attempts(record.operation_id)
            index = self.choose(record, attempts)
            refused: str | None = None
            if index is not None:
                try:
                    permit = self.acquire(index)
                except CircuitOpen as err:
                    refused = err.name
                else:
                    self.current = index
                    return permit
            wait = self.wait_s(record, attempts)
            name = refused or self.candidates[0 if index is None else index].name
            if self.gate is not None:
                self.gate.waited(self.spec, breaker=name, wait_s=wait, at=self.clock.now())
            notify.deferred(record, breaker=name, wait_s=wait, policy=policy)
            await self.clock.asleep(wait)

    def target(self, adapter: Adapter, output_dir: Path) -> tuple[Adapter, AgentRequest]:
        """The adapter and request of the current attempt (``adapter``: the task's own);
        marks the workspace first when the attempt's agent may edit it."""
        index = self.current
        candidate = self.candidates[index]
        request = self.spec.request(output_dir)
        if index:
            adapter = self.adapters[str(candidate.adapter)]
            request = self.candidate_spec(index).request(output_dir)
        self._before = None
        if getattr(adapter, "agent", None) is not None:
            mark = WorkspaceMark.take(request.workspace, exclude=[output_dir])
            self._before = (mark, request.workspace, output_dir)
        return adapter, request

    def checked(self, failure: Failure) -> Failure:
        """``failure`` of the current attempt, marked ``details.workspace_changed`` when
        its agent changed the workspace (such a failure never moves; it is recorded so,
        and so read again on a resume)."""
        before, self._before = self._before, None
        if before is None:
            return failure
        mark, workspace, output_dir = before
        if WorkspaceMark.take(workspace, exclude=[output_dir]).changed_since(mark):
            return mark_workspace_changed(failure)
        return failure

    def move(
        self,
        policy: RetryPolicy,
        failure: Failure,
        *,
        record: TaskRecord,
        attempts: Sequence[AttemptRecord],
        ended_at: _dt.datetime,
        draw: float,
    ) -> tuple[NextStep, int] | None:
        """Cool candidates down as ``failure`` of the current attempt calls for; the next
        step and candidate when the task moves to another candidate, ``None`` when it
        does not move (``failure`` is ``checked`` already)."""
        current = self.current
        self.health.cool_down(
            self.rules, failure, index=current, partial=False, operation=record.operation_id
        )
        # The failed attempt is still recorded running: it is added here.
        tried = [
            *self._tried(record, attempts),
            Tried(index=current, failure=failure),
        ]
        target = choose(
            self.rules,
            self.candidates,
            tried=tried,
            available=self.health.available(),
            now=ended_at,
        )
        by_number = {a.number: a for a in attempts}
        first = by_number.get(record.budget_base + 1)
        elapsed = 0.0 if first is None else max(0.0, (ended_at - first.started_at).total_seconds())
        step = plan_failure(
            policy,
            failure,
            current=current,
            target=target,
            attempt=record.attempts_used - record.budget_base,
            elapsed_s=elapsed,
            previous_delay_s=None,
            draw=draw,
        )
        if not step.moved_from(current):
            return None
        source, to = self.candidates[current], self.candidates[step.candidate]
        reason = f"{failure.kind} on {source.name}: falling back to {to.name}"
        return (
            NextStep(
                state=TaskState.RETRYING,
                reason=reason,
                next_run_at=ended_at,
                delay_s=0.0,
                escalate=False,
            ),
            step.candidate,
        )

    def fell_back(self, record: TaskRecord, failure: Failure, *, target: int, policy: str) -> None:
        """Emit ``task.fell_back`` (after the move was recorded)."""
        if BUS.wants(TaskFellBack.level):
            BUS.emit(
                TaskFellBack(
                    operation=record.operation_id,
                    policy=policy,
                    task_id=record.task_id,
                    attempt=record.attempts_used,
                    from_candidate=self.current_name,
                    to_candidate=self.candidates[target].name,
                    kind=str(failure.kind),
                    failure=failure,
                )
            )


def step_after(
    chain: TaskFallback | None,
    policy: RetryPolicy,
    failure: Failure,
    *,
    record: TaskRecord,
    attempts: Sequence[AttemptRecord],
    ended_at: _dt.datetime,
    draw: float,
) -> tuple[NextStep, int | None]:
    """The task's next step after a failed attempt, and the candidate it moved to
    (``None``: no move, the step is ``decision.next_step``'s)."""
    if chain is not None:
        moved = chain.move(
            policy, failure, record=record, attempts=attempts, ended_at=ended_at, draw=draw
        )
        if moved is not None:
            return moved
    step = next_step(
        policy, failure, record=record, attempts=attempts, ended_at=ended_at, draw=draw
    )
    return step, None
