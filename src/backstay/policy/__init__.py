"""Pure decision logic: backoff, retry policies, spending budgets, and the protocols of
breakers, budgets and rate limiters. Nothing here does I/O or reads a clock."""

from __future__ import annotations

from backstay.policy.backoff import Backoff, JitterMode, next_delay
from backstay.policy.bucket import TokenBucket
from backstay.policy.budget import BudgetSettings, RetryBudget
from backstay.policy.builtin import (
    AGENT_DISPATCH,
    AGGRESSIVE,
    BUILTIN_POLICIES,
    ERROR_CONTRACT,
    NO_RETRY,
    STANDARD,
)
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.protocols import (
    CircuitBreakerLike,
    Permit,
    RateLimiterLike,
    ReservationLike,
    ReservingLimiterLike,
    RetryBudgetLike,
)
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings, Reservation
from backstay.policy.registry import OperationType, PolicyRegistry
from backstay.policy.retry import GiveUpReason, KindOverride, RetryDecision, RetryPolicy, decide
from backstay.policy.spend import (
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendLedger,
    SpendRefusal,
    SpendScope,
    check_spend,
)

__all__ = [
    "AGENT_DISPATCH",
    "AGGRESSIVE",
    "BUILTIN_POLICIES",
    "ERROR_CONTRACT",
    "NO_RETRY",
    "STANDARD",
    "Backoff",
    "BudgetSettings",
    "CircuitBreakerLike",
    "GiveUpReason",
    "JitterMode",
    "KindOverride",
    "OperationType",
    "Permit",
    "PolicyRegistry",
    "RateLimitSettings",
    "RateLimiter",
    "RateLimiterLike",
    "RateLimiterRegistry",
    "Reservation",
    "ReservationLike",
    "ReservingLimiterLike",
    "RetryBudget",
    "RetryBudgetLike",
    "RetryDecision",
    "RetryPolicy",
    "ScopeKind",
    "ScopeTotals",
    "Spend",
    "SpendBudget",
    "SpendLedger",
    "SpendRefusal",
    "SpendScope",
    "TokenBucket",
    "check_spend",
    "decide",
    "next_delay",
]
