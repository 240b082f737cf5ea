"""``StoreBundle``: the stores an engine runs on, opened together at one store location
(``backstay.store.open.open_stores``) and closed together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from backstay.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from backstay.breaker.store import BreakerStore
    from backstay.engine.attempt_spend import AttemptSpendStore
    from backstay.engine.circuit_log import CircuitLog
    from backstay.engine.spend_ledger import SpendLedger
    from backstay.engine.taskstore import TaskStore
    from backstay.fallback.store import FallbackStore
    from backstay.idempotency.store import OperationStore
    from backstay.policy.budget import BudgetSettings
    from backstay.policy.protocols import LimiterRegistryLike, RetryBudgetLike
    from backstay.policy.ratelimit import RateLimitSettings
    from backstay.store.location import StoreLocation

__all__ = ["StoreBundle"]


@dataclasses.dataclass(kw_only=True)
class StoreBundle:
    """The open stores of one location; ``close()`` closes every one of them.

    ``clock``: the clock records should be stamped with (a shared store's follows the
    store's time), ``None``: the caller's. ``warnings``: what opening found amiss in the
    store's settings, for the command to print. ``closer``: closes what the stores share.
    ``limiters``, ``budgets``: make the rate limiter registry and the retry budget kept
    where the stores are (``None``: in this process).
    """

    location: StoreLocation
    tasks: TaskStore
    operations: OperationStore
    breakers: BreakerStore
    fallback: FallbackStore
    spend: SpendLedger
    circuit_log: CircuitLog
    clock: Clock | None = None
    warnings: tuple[str, ...] = ()
    closer: Callable[[], None] | None = None
    limiters: Callable[[Mapping[str, RateLimitSettings], Clock], LimiterRegistryLike] | None = None
    budgets: Callable[[str, BudgetSettings, Clock], RetryBudgetLike] | None = None
    # Begins and ends an attempt with its spend in one transaction each, where the task
    # store and the spend ledger share one (``backstay.engine.attempt_spend``).
    attempt_spend: AttemptSpendStore | None = None

    def has_batch(self) -> bool:
        """True when a batch was recorded here (at least one task)."""
        from backstay.engine.task_index import TaskIndex  # noqa: PLC0415 - only here

        if isinstance(self.tasks, TaskIndex):  # its counts: no task read
            return any(self.tasks.state_counts().values())
        return bool(self.tasks.tasks())

    def rate_limiter_registry(
        self, limits: Mapping[str, RateLimitSettings], *, clock: Clock = SYSTEM_CLOCK
    ) -> LimiterRegistryLike:
        """The rate limiters of ``limits`` (``RateLimiterRegistry`` keys), kept where the
        stores are: in this process (timed by ``clock``), or shared (Redis)."""
        if self.limiters is not None:
            return self.limiters(limits, clock)
        from backstay.policy.limiters import RateLimiterRegistry  # noqa: PLC0415 - no cycle

        return RateLimiterRegistry(limits, clock=clock)

    def retry_budget(
        self, name: str, settings: BudgetSettings, *, clock: Clock = SYSTEM_CLOCK
    ) -> RetryBudgetLike:
        """The retry budget ``name`` under ``settings``, kept where the stores are."""
        if self.budgets is not None:
            return self.budgets(name, settings, clock)
        from backstay.policy.budget import RetryBudget  # noqa: PLC0415 - no cycle

        return RetryBudget(name, settings=settings, clock=clock)

    def close(self) -> None:
        for store in (
            self.fallback,
            self.breakers,
            self.circuit_log,
            self.spend,
            self.operations,
            self.tasks,
        ):
            close = getattr(store, "close", None)
            if close is not None:
                close()
        if self.closer is not None:
            self.closer()
