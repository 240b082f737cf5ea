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

Breakers are the engine's ``CircuitGate`` breakers named ``Candidate.name`` (the task's
own is ``"adapter/model"``, the breaker every task of that model shares); cooldowns are
kept in ``state.sqlite`` (``SQLiteFallbackStore``), so every runner sees them.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from backstay.adapters.contract import AgentRequest
from backstay.clock import Clock
from backstay.engine.circuits import CircuitGate
from backstay.engine.decision import NextStep
from backstay.engine.events import _TaskEvent
from backstay.engine.records import AttemptOutcome, AttemptRecord, TaskRecord
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate
from backstay.fallback.health import CandidateHealth
from backstay.fallback.rules import FallbackRules
from backstay.fallback.select import Tried, choose, plan_failure
from backstay.fallback.store import FallbackStore
from backstay.observe.sinks import BUS
from backstay.policy.protocols import Permit
from backstay.policy.retry import RetryPolicy

__all__ = ["TaskFallback", "TaskFellBack", "candidate_config"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TaskFellBack(_TaskEvent):
    """Attempt ``attempt`` failed on ``from_candidate`` with ``kind``; the next attempt
    runs on ``to_candidate`` at once."""

    name: ClassVar[str] = "task.fell_back"
    level: ClassVar[int] = logging.WARNING
    attempt: int
    from_candidate: str
    to_candidate: str
    kind: str
    failure: Failure


def candidate_config(spec: TaskSpec, candidate: Candidate) -> dict[str, Any]:
    """The adapter config of an attempt on ``candidate``: the task's own config when the
    adapter is the task's, else the adapter's defaults; with the candidate's credential
    variable (``api_key_env``) and ``base_url`` when it names them."""
    config: dict[str, Any] = dict(spec.config) if candidate.adapter == spec.adapter else {}
    if candidate.api_key_env is not None:
        config["api_key_env"] = candidate.api_key_env
    if candidate.base_url is not None:
        config["base_url"] = candidate.base_url
    return config


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
    ) -> None:
        self.spec = spec
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

    def configs(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Each fallback candidate's adapter and config, to be validated up front."""
        return [(str(c.adapter), candidate_config(self.spec, c)) for c in self.spec.fallbacks]

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

    def request(self, index: int, output_dir: Path) -> AgentRequest:
        """The request of an attempt on candidate ``index``."""
        candidate = self.candidates[index]
        request = self.spec.request(output_dir)
        if index == 0:
            return request
        return dataclasses.replace(
            request, model=candidate.model, config=candidate_config(self.spec, candidate)
        )

    def move(
        self,
        policy: RetryPolicy,
        failure: Failure,
        *,
        record: TaskRecord,
        attempts: Sequence[AttemptRecord],
        current: int,
        partial: bool,
        ended_at: _dt.datetime,
        draw: float,
    ) -> tuple[NextStep, int] | None:
        """Cool candidates down as ``failure`` calls for; the next step and candidate when
        the task moves to another candidate, ``None`` when it does not move."""
        self.health.cool_down(
            self.rules, failure, index=current, partial=partial, operation=record.operation_id
        )
        # The failed attempt is still recorded running: it is added here.
        tried = [
            *self._tried(record, attempts),
            Tried(index=current, failure=failure, partial=partial),
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

    def fell_back(
        self, record: TaskRecord, failure: Failure, *, current: int, target: int, policy: str
    ) -> None:
        """Emit ``task.fell_back`` (after the move was recorded)."""
        if BUS.wants(TaskFellBack.level):
            BUS.emit(
                TaskFellBack(
                    operation=record.operation_id,
                    policy=policy,
                    task_id=record.task_id,
                    attempt=record.attempts_used,
                    from_candidate=self.candidates[current].name,
                    to_candidate=self.candidates[target].name,
                    kind=str(failure.kind),
                    failure=failure,
                )
            )
