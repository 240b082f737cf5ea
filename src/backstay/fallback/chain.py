"""``FallbackChain``: call a function on an ordered list of candidates, moving to the next
when the failure calls for it — one retry budget and one deadline over the whole chain.

::

    chain = FallbackChain([primary, secondary], policy=RetryPolicy(max_attempts=4))
    answer = chain.call(lambda c: client(c).complete(model=c.model, ...))
    answer.value, answer.candidate, answer.requested, answer.attempts

Before each attempt the chain picks a candidate (``select.choose``: the first available
one in order on a fresh call, so work returns to the primary once its circuit closes or
its cooldown ends); after a failure it records the cooldowns the rules call for, reports
the failure on the candidate's breaker, and either moves at once, retries the same
candidate after the policy's delay, or gives up. Giving up re-raises the ORIGINAL
exception with its ``Failure`` (``exc.failure``) and the candidate (``exc.candidate``)
attached. ``NoCandidateAvailable`` is raised only when no candidate may be tried within
the policy's ``max_retry_after_s`` (or its deadline).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, NoReturn, TypeVar

from backstay.breaker.settings import BreakerSettings
from backstay.call._after_failure import attach_failure, test_mode
from backstay.classify import classify
from backstay.clock import SYSTEM_CLOCK, Clock, seeded_unit, unseeded_unit
from backstay.errors import AdapterError, CircuitOpen, ConfigError, DeadlineExceeded, Rejected
from backstay.events import BUS, GaveUp, RetryScheduled
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate, Needs
from backstay.fallback.events import FellBack
from backstay.fallback.health import CandidateHealth
from backstay.fallback.rules import FallbackRules
from backstay.fallback.select import Tried, choose, plan_failure
from backstay.fallback.store import FallbackStore, MemoryFallbackStore
from backstay.policy.protocols import Permit
from backstay.policy.registry import PolicySpec, resolve_policy
from backstay.policy.retry import RetryPolicy

__all__ = ["DEFAULT_CHAIN_BREAKER", "Answer", "FallbackChain", "NoCandidateAvailable"]

T = TypeVar("T")

# One breaker per candidate, with the breaker's own defaults, unless told otherwise.
DEFAULT_CHAIN_BREAKER = BreakerSettings()


class NoCandidateAvailable(Rejected):
    """Every candidate is cooling down or has an open circuit for longer than the call
    may wait; ``retry_after_s`` is when the first may be tried again."""

    def __init__(self, *, retry_after_s: float) -> None:
        super().__init__(
            f"no fallback candidate is available for {retry_after_s:.3f} s",
            retry_after_s=retry_after_s,
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Answer(Generic[T]):
    """A chain's result: ``value``, the ``candidate`` that answered, the ``requested``
    (first) candidate, and the ``attempts`` made across the chain."""

    value: T
    candidate: Candidate
    requested: Candidate
    attempts: int

    @property
    def fell_back(self) -> bool:
        return self.candidate != self.requested


class FallbackChain:
    """An ordered list of candidates sharing one retry budget, deadline and store."""

    def __init__(
        self,
        candidates: Iterable[Candidate],
        *,
        rules: FallbackRules | None = None,
        policy: PolicySpec = None,
        breaker: BreakerSettings | None = DEFAULT_CHAIN_BREAKER,
        store: FallbackStore | None = None,
        clock: Clock | None = None,
        name: str | None = None,
    ) -> None:
        chosen = tuple(candidates)
        if not chosen:
            raise ConfigError("needs at least one candidate", where="candidates")
        for i, c in enumerate(chosen):
            if not isinstance(c, Candidate):
                raise ConfigError(
                    f"must be a Candidate, got {type(c).__name__}", where=f"candidates[{i}]"
                )
        names = [c.name for c in chosen]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"{', '.join(twice)} given twice", where="candidates")
        if rules is not None and not isinstance(rules, FallbackRules):
            raise ConfigError(f"must be FallbackRules, got {rules!r}", where="rules")
        self.candidates = chosen
        self.rules = FallbackRules() if rules is None else rules
        self.policy: RetryPolicy = resolve_policy(policy, None)
        self.store: FallbackStore = MemoryFallbackStore() if store is None else store
        self.clock = SYSTEM_CLOCK if clock is None else clock
        self.name = name
        self.health = CandidateHealth(chosen, store=self.store, breaker=breaker, clock=self.clock)

    @property
    def requested(self) -> Candidate:
        return self.candidates[0]

    def call(self, fn: Callable[[Candidate], T], *, needs: Needs | None = None) -> Answer[T]:
        """``fn(candidate)`` on the chosen candidate until it answers or the chain gives up."""
        run = _Run(self, needs)
        clock = self.clock
        while True:
            index = run.next_candidate()
            if index is None:
                clock.sleep(run.wait)
                continue
            try:
                value = fn(self.candidates[index])
            except Exception as exc:  # noqa: BLE001 - classified, then retried or re-raised
                delay = run.failed(exc)
            except BaseException:
                run.cancelled()
                raise
            else:
                return run.succeeded(value)
            if delay > 0.0:
                clock.sleep(delay)

    async def acall(
        self, fn: Callable[[Candidate], Awaitable[T]], *, needs: Needs | None = None
    ) -> Answer[T]:
        """``call`` for async functions; the deadline also bounds each attempt."""
        run = _Run(self, needs)
        clock, deadline = self.clock, self.policy.deadline_s
        while True:
            index = run.next_candidate()
            if index is None:
                await clock.asleep(run.wait)
                continue
            try:
                if deadline is None:
                    value = await fn(self.candidates[index])
                else:
                    async with asyncio.timeout(max(0.0, deadline - run.elapsed())):
                        value = await fn(self.candidates[index])
            except Exception as exc:  # noqa: BLE001 - classified, then retried or re-raised
                delay = run.failed(exc)
            except BaseException:
                run.cancelled()
                raise
            else:
                return run.succeeded(value)
            if delay > 0.0:
                await clock.asleep(delay)


class _Run:
    """One call through the chain: what was tried, the attempt count, the open permit."""

    __slots__ = (
        "attempt",
        "chain",
        "current",
        "needs",
        "permit",
        "previous",
        "started",
        "tried",
        "wait",
    )

    def __init__(self, chain: FallbackChain, needs: Needs | None) -> None:
        self.chain = chain
        self.needs = needs
        self.tried: list[Tried] = []
        self.attempt = 0
        self.current = 0
        self.permit: Permit | None = None
        self.previous: float | None = None
        self.started = chain.clock.monotonic()
        self.wait = 0.0

    def elapsed(self) -> float:
        return self.chain.clock.monotonic() - self.started

    def next_candidate(self) -> int | None:
        """The candidate of the next attempt with its permit taken, or ``None`` with
        ``wait`` set; raises when the wait is longer than the call may wait."""
        chain = self.chain
        health = chain.health
        index = choose(
            chain.rules,
            chain.candidates,
            tried=self.tried,
            available=health.available(),
            needs=self.needs,
            now=chain.clock.now(),
        )
        if index is not None:
            try:
                self.permit = health.acquire(index)
            except CircuitOpen:
                index = None
        if index is None:
            pinned = [self.tried[-1].index] if self.tried else None
            self.wait = 0.0 if test_mode.active else health.wait_s(pinned)
            self._check_wait(self.wait)
            return None
        self.attempt += 1
        self.current = index
        return index

    def _check_wait(self, wait: float) -> None:
        policy = self.chain.policy
        if policy.deadline_s is not None:
            if self.elapsed() + wait > policy.deadline_s:
                raise DeadlineExceeded(policy.deadline_s, needed_s=wait)
        elif wait > policy.max_retry_after_s:
            raise NoCandidateAvailable(retry_after_s=wait)

    def succeeded(self, value: T) -> Answer[T]:
        if self.permit is not None:
            self.permit.success()
            self.permit = None
        chain = self.chain
        return Answer(
            value=value,
            candidate=chain.candidates[self.current],
            requested=chain.requested,
            attempts=self.attempt,
        )

    def cancelled(self) -> None:
        if self.permit is not None:
            self.permit.release()
            self.permit = None

    def failed(self, exc: Exception) -> float:
        """The delay before the next attempt; re-raises ``exc`` when the chain gives up."""
        chain = self.chain
        failure = classify(exc)
        partial = isinstance(exc, AdapterError) and bool(exc.partial_output)
        current = self.current
        if self.permit is not None:
            self.permit.failure(failure)
            self.permit = None
        chain.health.cool_down(
            chain.rules, failure, index=current, partial=partial, operation=chain.name
        )
        self.tried.append(Tried(index=current, failure=failure, partial=partial))
        policy = chain.policy
        target = choose(
            chain.rules,
            chain.candidates,
            tried=self.tried,
            available=chain.health.available(),
            needs=self.needs,
            now=chain.clock.now(),
        )
        draw = (
            unseeded_unit()
            if policy.seed is None
            else seeded_unit(policy.seed, policy.name, self.attempt)
        )
        step = plan_failure(
            policy,
            failure,
            current=current,
            target=target,
            attempt=self.attempt,
            elapsed_s=self.elapsed(),
            previous_delay_s=self.previous,
            draw=draw,
        )
        cap = test_mode.max_attempts if test_mode.active else None
        if step.retry and cap is not None and self.attempt >= cap:
            step = dataclasses.replace(step, retry=False, reason="testing_mode_attempts")
        if not step.retry:
            self._give_up(exc, failure, step.reason or "")
        source, target_c = chain.candidates[current], chain.candidates[step.candidate]
        if step.moved_from(current):
            if BUS.wants(FellBack.level):
                BUS.emit(
                    FellBack(
                        operation=chain.name,
                        policy=policy.name,
                        attempt=self.attempt,
                        from_candidate=source.name,
                        to_candidate=target_c.name,
                        kind=str(failure.kind),
                        failure=failure,
                    )
                )
            return 0.0
        delay = 0.0 if test_mode.active else step.delay_s
        self.previous = step.delay_s
        if BUS.wants(RetryScheduled.level):
            BUS.emit(
                RetryScheduled(
                    operation=chain.name,
                    policy=policy.name,
                    attempt=self.attempt,
                    delay_s=delay,
                    failure=failure,
                )
            )
        return delay

    def _give_up(self, exc: Exception, failure: Failure, reason: str) -> NoReturn:
        attach_failure(exc, failure)
        with contextlib.suppress(AttributeError, TypeError):
            exc.candidate = self.chain.candidates[self.current]  # type: ignore[attr-defined]
        if BUS.wants(GaveUp.level):
            BUS.emit(
                GaveUp(
                    operation=self.chain.name,
                    policy=self.chain.policy.name,
                    attempts=self.attempt,
                    reason=reason,
                    failure=failure,
                    elapsed_s=self.elapsed(),
                )
            )
        raise exc
