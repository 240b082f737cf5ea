"""``CandidateHealth``: the candidates' breakers and cooldowns, read and changed through a
``FallbackStore`` — the I/O half of selection (``backstay.fallback.select`` is the pure one).

* ``available()``: per candidate, whether an attempt may go to it now: not cooling down,
  and its breaker closed or ready for a probe.
* ``wait_s()``: how long until the first unavailable candidate may be available again.
* ``acquire(i)``: a breaker permit for candidate ``i`` (``CircuitOpen`` when refused).
* ``cool_down(...)``: record the cooldowns a failure calls for (``FallbackRules``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Final

from backstay.breaker.breaker import CircuitBreaker
from backstay.breaker.record import CircuitState
from backstay.breaker.settings import BreakerSettings
from backstay.clock import Clock
from backstay.events import BUS
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate
from backstay.fallback.events import CandidateCooledDown
from backstay.fallback.rules import FallbackRules
from backstay.fallback.select import cooldown_targets
from backstay.fallback.store import FallbackStore
from backstay.policy.protocols import Permit

__all__ = ["MIN_WAIT_S", "PROBES_OUT_WAIT_S", "CandidateHealth"]

# A half-open circuit with every probe out gives no time to wait for: ask again after this.
PROBES_OUT_WAIT_S: Final = 1.0
# The shortest wait for an unavailable candidate: never a tight loop.
MIN_WAIT_S: Final = 0.05


class CandidateHealth:
    """Breakers (one per candidate, named ``candidate.name``) and cooldowns in ``store``."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        *,
        store: FallbackStore,
        breaker: BreakerSettings | None,
        clock: Clock,
        on_event: Callable[[object], None] | None = None,
        breakers: Sequence[CircuitBreaker | None] | None = None,
    ) -> None:
        """``breakers``, when given, are the candidates' breakers (in order) instead of
        ones made from ``breaker`` on ``store.breakers``."""
        self.candidates = tuple(candidates)
        self.store = store
        self.clock = clock
        if breakers is not None:
            self.breakers: tuple[CircuitBreaker | None, ...] = tuple(breakers)
            return
        self.breakers = tuple(
            None
            if breaker is None
            else CircuitBreaker(
                c.name, settings=breaker, store=store.breakers, clock=clock, on_event=on_event
            )
            for c in self.candidates
        )

    def _now_s(self) -> float:
        return self.clock.now().timestamp()

    def _breaker_wait(self, index: int) -> float:
        breaker = self.breakers[index]
        if breaker is None or breaker.state is CircuitState.CLOSED:
            return 0.0
        after = breaker.snapshot().retry_after_s
        return PROBES_OUT_WAIT_S if after is None else after

    def _wait(self, index: int, now_s: float) -> float:
        until = self.store.cooling_until(self.candidates[index].name, now_s=now_s)
        cooling = 0.0 if until is None else until - now_s
        return max(cooling, self._breaker_wait(index))

    def available(self) -> list[bool]:
        """Whether each candidate may take an attempt now."""
        now_s = self._now_s()
        return [self._wait(i, now_s) <= 0.0 for i in range(len(self.candidates))]

    def wait_s(self, indices: Sequence[int] | None = None) -> float:
        """Seconds until the first of ``indices`` (default: all) may be available."""
        now_s = self._now_s()
        chosen = range(len(self.candidates)) if indices is None else indices
        waits = [self._wait(i, now_s) for i in chosen]
        return max(min(waits, default=MIN_WAIT_S), MIN_WAIT_S)

    def acquire(self, index: int) -> Permit | None:
        """A permit of candidate ``index``'s breaker (``None`` without breakers)."""
        breaker = self.breakers[index]
        return None if breaker is None else breaker.acquire()

    def cool_down(
        self,
        rules: FallbackRules,
        failure: Failure,
        *,
        index: int,
        partial: bool,
        operation: str | None = None,
    ) -> list[tuple[Candidate, _dt.datetime]]:
        """Record the cooldowns ``failure`` on candidate ``index`` calls for; what was cooled."""
        now = self.clock.now()
        done: list[tuple[Candidate, _dt.datetime]] = []
        targets = cooldown_targets(
            rules, self.candidates, failure, current=index, partial=partial, now=now
        )
        for target, seconds in targets:
            candidate = self.candidates[target]
            until = now + _dt.timedelta(seconds=seconds)
            reason = f"{failure.kind}/{failure.code}"
            self.store.cool_down(candidate.name, until_s=until.timestamp(), reason=reason)
            done.append((candidate, until))
            if BUS.wants(CandidateCooledDown.level):
                BUS.emit(
                    CandidateCooledDown(
                        operation=operation,
                        candidate=candidate.name,
                        until=until,
                        kind=str(failure.kind),
                    )
                )
        return done
