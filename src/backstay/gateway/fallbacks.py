"""A request's fallback chain at the gateway: which model it is sent to, and where a
failure moves it.

A request's candidates are its own model, then its run's fallback model, then the
gateway's chain for its model (``GatewaySettings.fallbacks``, in order), each once, all
of its provider and sent with its key. A candidate is **available** while its circuit
admits a call (closed, or its probe is free) and it is not cooling down:

* on arrival a request goes to the first available candidate (``first``): its own model
  unless that one is unavailable, never a model whose own circuit is open;
* a request whose own failures open its model's circuit goes on to the next available
  candidate after the one it is on (``next_open``), its attempts and deadline afresh;
* with ``fallback_rules`` (``backstay.fallback.FallbackRules``), each failure the retry
  policy gave up on is also handled as a batch's task handles it: the failing candidate
  cools down for what the table says (keyed by the request's key, so one client's spent
  quota or refused key cools no other client's models), and ``choose`` and
  ``plan_failure`` (``backstay.fallback.select``) name the next step: another candidate
  at once, under what is left of the request's one policy, or the same one after the
  policy's delay. While a candidate the request may move to is available, its attempts
  run under ``attempt_policy``: the policy with the kinds that move left unretried and
  its longest wait cut to the table's ``long_wait_s``, so such a failure comes back to
  the chain instead of being retried where it is.

The pure decisions are those of ``backstay.fallback``; this module holds the gateway's
breakers and an in-process cooldown table beside them.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import Final

from backstay.breaker import BreakerRegistry
from backstay.breaker.store import BreakerStore
from backstay.clock import SYSTEM_CLOCK, Clock, unseeded_unit
from backstay.failure import Failure
from backstay.fallback.candidate import Candidate
from backstay.fallback.health import CandidateHealth
from backstay.fallback.rules import FallbackRules, Move
from backstay.fallback.select import ChainStep, Tried, choose, plan_failure
from backstay.fallback.store import MemoryFallbackStore
from backstay.policy.limit_keys import key_fingerprint
from backstay.policy.retry import RetryPolicy
from backstay.taxonomy import FailureKind

__all__ = ["Chain", "GatewayFallbacks", "candidates_of"]

# The rules ``choose`` is asked with on arrival, where no failure is known yet.
_ARRIVAL_RULES: Final = FallbackRules()


def candidates_of(
    model: str, run_fallback: str | None, chains: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """The models a request for ``model`` may be sent to, in order: its own, its run's
    fallback model, the gateway's chain for it; each once."""
    out = [model]
    for name in (run_fallback, *chains.get(model, ())):
        if name and name not in out:
            out.append(name)
    return tuple(out)


class _KeyedCooldowns:
    """A ``FallbackStore`` view whose cooldowns are kept under one key's fingerprint."""

    __slots__ = ("_prefix", "_store")

    def __init__(self, store: MemoryFallbackStore, prefix: str) -> None:
        self._store = store
        self._prefix = prefix

    @property
    def breakers(self) -> BreakerStore:
        return self._store.breakers

    def cool_down(self, name: str, *, until_s: float, reason: str) -> None:
        self._store.cool_down(self._prefix + name, until_s=until_s, reason=reason)

    def cooling_until(self, name: str, *, now_s: float) -> float | None:
        return self._store.cooling_until(self._prefix + name, now_s=now_s)


@dataclasses.dataclass(frozen=True, slots=True)
class Chain:
    """One request's candidates (``models``, its own first) and their health."""

    provider: str
    models: tuple[str, ...]
    health: CandidateHealth

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        return self.health.candidates


class GatewayFallbacks:
    """The gateway's chains (``chains``: model → its fallback models), its ``rules``
    (``None``: moves by the circuit only), its ``breakers`` and its cooldowns."""

    def __init__(
        self,
        chains: Mapping[str, tuple[str, ...]],
        rules: FallbackRules | None,
        breakers: BreakerRegistry,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.chains = dict(chains)
        self.rules = rules
        self._breakers = breakers
        self._clock = clock
        self._cooldowns = MemoryFallbackStore()

    def chain(
        self, provider: str, model: str, run_fallback: str | None, credential: str | None
    ) -> Chain | None:
        """The chain of a request for ``model`` sent with ``credential`` (``None``: it has
        no fallback model)."""
        if run_fallback is None and model not in self.chains:
            return None
        models = candidates_of(model, run_fallback, self.chains)
        if len(models) < 2:
            return None
        candidates = [Candidate(provider=provider, model=m) for m in models]
        prefix = "" if credential is None else key_fingerprint(credential) + ":"
        health = CandidateHealth(
            candidates,
            store=_KeyedCooldowns(self._cooldowns, prefix),
            breaker=None,
            clock=self._clock,
            breakers=[self._breakers.breaker_for((provider, m)) for m in models],
        )
        return Chain(provider=provider, models=models, health=health)

    def available(self, chain: Chain) -> list[bool]:
        """Whether each candidate may take a request now: its circuit is closed or its
        probe is free, and it is not cooling down (as a batch reads them)."""
        return chain.health.available()

    def first(self, chain: Chain) -> int:
        """The candidate a request goes to on arrival: the first available (its own model
        when none is)."""
        found = choose(_ARRIVAL_RULES, chain.candidates, tried=(), available=self.available(chain))
        return 0 if found is None else found

    def next_open(self, chain: Chain, current: int) -> int | None:
        """The first available candidate after ``current`` (``None``: none)."""
        available = self.available(chain)
        return next((i for i in range(current + 1, len(available)) if available[i]), None)

    def attempt_policy(self, policy: RetryPolicy, chain: Chain, current: int) -> RetryPolicy:
        """``policy`` for attempts on candidate ``current``: while another candidate is
        available and the rules move some kinds, those kinds are not retried here and a
        wait longer than ``long_wait_s`` is not waited here (the chain decides)."""
        rules = self.rules
        if rules is None:
            return policy
        available = self.available(chain)
        if not any(ok for i, ok in enumerate(available) if i != current):
            return policy
        moving = frozenset(
            str(kind)
            for kind, move in rules.moves.items()
            if move is Move.NEXT and kind is not FailureKind.CANCELLED
        )
        changes: dict[str, object] = {}
        if moving - policy.never_retry_on:
            changes["never_retry_on"] = policy.never_retry_on | moving
        if (
            rules.moves[FailureKind.RATE_LIMIT] is Move.NEXT_IF_LONG_WAIT
            and rules.long_wait_s < policy.max_retry_after_s
        ):
            changes["max_retry_after_s"] = rules.long_wait_s
        return policy.derive(**changes) if changes else policy

    def after_failure(
        self,
        policy: RetryPolicy,
        failure: Failure,
        chain: Chain,
        *,
        current: int,
        tried: list[Tried],
        attempts: int,
        elapsed_s: float,
        operation: str | None,
    ) -> ChainStep | None:
        """What follows ``failure`` on candidate ``current``, which ``policy`` (the
        request's, before ``attempt_policy``) gave up on after ``attempts`` attempts over
        ``elapsed_s`` (``tried``: the request's earlier such failures, this one added):
        the cooldowns the rules call for are recorded, then another candidate, the same
        one after a delay, or giving up. ``None`` without rules."""
        rules = self.rules
        if rules is None:
            return None
        now = _dt.datetime.now(_dt.UTC)
        chain.health.cool_down(rules, failure, index=current, partial=False, operation=operation)
        tried.append(Tried(index=current, failure=failure))
        target = choose(
            rules,
            chain.candidates,
            tried=tried,
            available=self.available(chain),
            now=now,
        )
        return plan_failure(
            policy,
            failure,
            current=current,
            target=target,
            attempt=attempts,
            elapsed_s=elapsed_s,
            previous_delay_s=None,
            draw=unseeded_unit(),
        )
