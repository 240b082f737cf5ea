"""``Pacing``: the client-side rate limiters and the retry budget the engine's attempts
run under (``retry.rate_limits`` and ``retry.budget`` of ``backstay.yaml``).

Rate limits. A limit belongs to the provider account (``backstay.policy.limit_keys``): a
task's attempt is paced when a key of ``rate_limits`` names its provider, alone or with
the task's model, most specific first — ``<provider>/<model>``, then ``<provider>``
(``anthropic/claude-sonnet-4-5``, ``anthropic``). The provider is an API adapter's
``provider``, an agent CLI's (``claude-code`` → ``anthropic``), or the ``provider/``
prefix of the model of a CLI that talks to any; so API tasks, CLI sessions and the gateway
of one provider share one limiter. A key naming an adapter (``claude-code``) is read as its
provider's. As for every ``RateLimiterRegistry``, a key without a model is the limit
*each* model gets. Before each attempt the engine reserves one request (and the
attempt's estimated tokens) and sleeps the reservation's wait; a rate limit the attempt
meets (a 429 with a wait) is fed back (``observe``), which blocks every caller of that
limiter until then. The provider's rate-limit headers of the attempt's last answer (the
API adapters record them in the attempt's ``Capture``) are fed back first
(``update_from_headers``): the limiter learns the provider's limits, and what it has left
lowers its level (never raises it: see ``_learn``). A task whose
adapter matches no key is not paced.
An Aider task on a bare model name or an alias (``sonnet``) takes the
provider its adapter's gateway wiring picks for it (``gateway_wiring.wired_provider``).

A limit of one API key (``anthropic#<fingerprint>``, ``anthropic/<model>#<fingerprint>``)
paces an API task (an adapter with API ``settings``: ``anthropic-api``, ``openai-api``,
``gemini-api``) whose attempt sends that key — the one its adapter reads from the task's
environment (``api_key_env``, else the provider's variables) — at the limiter
``anthropic#<fingerprint>`` (``limit_keys.key_limit``, the rule the gateway follows for
its requests): on one store, an API task and a CLI session through the gateway with the
same key share one limiter. The key is hashed, never kept.

An attempt of an agent CLI sent through a gateway (``adapters.gateway_wiring``) is not
paced here: the gateway paces each of its requests, at the engine's own limiters when it
is the one ``backstay batch`` / ``resume`` start (``cli._gateway_runs``), so a session
takes one request from the bucket per request it sends, not one more for its start.

Retry budget. A task's first attempt records a call; a retry the policy decides on is
taken from the budget first, and a retry the budget refuses ends the task as a give-up
does (``failed``, reason ``… (retry_budget_exhausted)``, ``task.failed``).

Where the state lives is the store bundle's choice (``StoreBundle.rate_limiter_registry``
and ``StoreBundle.retry_budget``): in this process with SQLite, in Redis (one limiter per
key and one budget for the whole fleet) with a Redis store.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.gateway_wiring import through_gateway, wired_provider
from backstay.clock import Clock
from backstay.engine.api_credential import api_credential
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy.budget import BudgetSettings
from backstay.policy.limit_keys import (
    KEY_MARK,
    credential_limits,
    limit_key,
    provider_limits,
)
from backstay.policy.protocols import (
    LimiterRegistryLike,
    RateLimiterLike,
    ReservationLike,
    RetryBudgetLike,
    is_reserving,
)
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings, Reservation

if TYPE_CHECKING:
    from backstay.engine.stores import StoreBundle

__all__ = [
    "ENGINE_BUDGET",
    "RETRY_BUDGET_EXHAUSTED",
    "Pacing",
    "engine_pacing",
    "limit_key",
]

RETRY_BUDGET_EXHAUSTED: Final = "retry_budget_exhausted"
# The name of the engine's retry budget (in Redis: ``{ns:budget:engine}``).
ENGINE_BUDGET: Final = "engine"
# A held reservation is rechecked at most this many times before it is taken as placed:
# the limiter's probe ends within its probe_timeout_s, so this is never reached in practice.
_MAX_RECHECKS: Final = 1000


class Pacing:
    """The engine's limiters (``limiters``, consulted for ``keys`` only) and retry budget
    (``budget``); either may be absent. ``clock``: what waits are slept on."""

    def __init__(
        self,
        *,
        limiters: LimiterRegistryLike | None,
        keys: Collection[str],
        budget: RetryBudgetLike | None,
        clock: Clock,
    ) -> None:
        self.limiters = limiters
        self.keys = frozenset(keys)
        self._keyed = any(KEY_MARK in key for key in self.keys)
        self.budget = budget
        self.clock = clock

    def limiter(self, spec: TaskSpec, adapter: Adapter) -> RateLimiterLike | None:
        """The limiter of an attempt of ``spec`` on ``adapter``, or ``None`` (an agent CLI
        sent through a gateway among them: the gateway paces each of its requests)."""
        if self.limiters is None or not self.keys:
            return None
        wiring = getattr(type(adapter), "gateway_wiring", None)
        if wiring is not None and through_gateway(wiring, spec.request(Path())):
            return None
        provider = getattr(type(adapter), "provider", "")
        if not isinstance(provider, str) or not provider:  # Aider's alias: its wiring's
            provider = (wired_provider(wiring, spec.model) or ("", ""))[0]
        found = limit_key(
            self.keys,
            adapter=spec.adapter,
            provider=provider,
            model=spec.model,
            credential=self._credential(spec, adapter),
        )
        if found is None:
            return None
        return self.limiters.limiter_for(*found)

    def _credential(self, spec: TaskSpec, adapter: Adapter) -> str | None:
        """The API key an API task's attempt sends (``None``: not an API task, no key
        limit configured, or no key set), read as its adapter reads it."""
        if not self._keyed:
            return None
        return api_credential(spec, adapter)

    async def wait_turn(self, limiter: RateLimiterLike, tokens: float) -> ReservationLike:
        """Reserve one request and ``tokens`` at ``limiter`` and sleep until it is due
        (a held reservation is rechecked when told to, never polled)."""
        tokens = max(1.0, float(tokens))
        if not is_reserving(limiter):
            wait = limiter.reserve(tokens)
            if wait > 0.0:
                await self.clock.asleep(wait)
            return Reservation(wait, 0.0, 0.0, tokens=tokens)
        reservation: ReservationLike = limiter.reservation(tokens)
        for _ in range(_MAX_RECHECKS):
            recheck = reservation.recheck_s
            if recheck is None:
                break
            await self.clock.asleep(max(0.0, min(recheck, reservation.wait_s)))
            reservation = limiter.recheck(reservation)
        if reservation.wait_s > 0.0:
            await self.clock.asleep(reservation.wait_s)
        return reservation

    @staticmethod
    def attempt_ended(
        limiter: RateLimiterLike,
        reservation: ReservationLike,
        failure: Failure | None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Tell ``limiter`` how the attempt made under ``reservation`` ended: the
        provider's rate-limit ``headers`` of its last answer first (``_learn``), then its
        failure; then settle the reservation."""
        if headers:
            _learn(limiter, headers, refused=failure is not None)
        if failure is not None:
            limiter.observe(failure)
        if is_reserving(limiter):
            limiter.settle(reservation)

    def first_attempt(self) -> None:
        """A task made its first attempt: one call, for the retry budget."""
        if self.budget is not None:
            self.budget.record_call()

    def allows_retry(self) -> bool:
        """Take one retry from the budget; ``False`` when it is spent (no budget: ``True``)."""
        return self.budget is None or self.budget.try_spend_retry()


def _learn(limiter: RateLimiterLike, headers: Mapping[str, str], *, refused: bool) -> None:
    """Feed ``headers`` to ``limiter`` if it learns from headers, as answers to no
    particular reservation: the engine's attempts do not reach the provider in the order
    of their reservations (recording the attempt and building its client come between the
    wait and the request), so the provider's ``remaining`` may not have counted one
    reserved before this one yet. It sizes the buckets and lowers their level, never
    raises it: measured, reading it against the reservation let the two batches of the
    600-RPM run of ``tests/cli/test_batch_rate_limits.py`` go beyond the provider's rate
    now and then (11 and 33 429s in 1,200 calls, two runs); read this way, none."""
    update = getattr(limiter, "update_from_headers", None)
    if update is None:
        return
    if isinstance(limiter, RateLimiter) or getattr(limiter, "learns_answering", False):
        update(headers, refused=refused)
    else:
        update(headers)


def engine_pacing(
    stores: StoreBundle,
    *,
    rate_limits: Mapping[str, RateLimitSettings] | None,
    retry_budget: BudgetSettings | None,
    clock: Clock,
) -> Pacing | None:
    """The pacing of an engine over ``stores`` (``None`` with neither limits nor budget);
    ``ConfigError`` naming a wrong argument."""
    if rate_limits is not None and not isinstance(rate_limits, Mapping):
        raise ConfigError("must map rate-limit keys to RateLimitSettings", where="rate_limits")
    if retry_budget is not None and not isinstance(retry_budget, BudgetSettings):
        raise ConfigError(
            f"must be a BudgetSettings or None, got {type(retry_budget).__name__}",
            where="retry_budget",
        )
    limits = credential_limits(provider_limits(dict(rate_limits or {})))
    if not limits and retry_budget is None:
        return None
    return Pacing(
        limiters=stores.rate_limiter_registry(limits, clock=clock) if limits else None,
        keys=limits,
        budget=None
        if retry_budget is None
        else stores.retry_budget(ENGINE_BUDGET, retry_budget, clock=clock),
        clock=clock,
    )
