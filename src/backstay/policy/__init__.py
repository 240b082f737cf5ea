"""Pure decision logic: backoff, retry policies, spending budgets, and the protocols of
breakers, budgets and rate limiters. Nothing here does I/O or reads a clock."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backstay._lazy_names import load_name

if TYPE_CHECKING:
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

# Each name loads its own module on first use: the retry drivers import ``policy.retry``
# and ``policy.protocols`` without paying for spending budgets or rate limiters.
_LAZY: dict[str, str] = {
    "Backoff": "backstay.policy.backoff",
    "JitterMode": "backstay.policy.backoff",
    "next_delay": "backstay.policy.backoff",
    "TokenBucket": "backstay.policy.bucket",
    "BudgetSettings": "backstay.policy.budget",
    "RetryBudget": "backstay.policy.budget",
    "AGENT_DISPATCH": "backstay.policy.builtin",
    "AGGRESSIVE": "backstay.policy.builtin",
    "BUILTIN_POLICIES": "backstay.policy.builtin",
    "ERROR_CONTRACT": "backstay.policy.builtin",
    "NO_RETRY": "backstay.policy.builtin",
    "STANDARD": "backstay.policy.builtin",
    "RateLimiterRegistry": "backstay.policy.limiters",
    "CircuitBreakerLike": "backstay.policy.protocols",
    "Permit": "backstay.policy.protocols",
    "RateLimiterLike": "backstay.policy.protocols",
    "ReservationLike": "backstay.policy.protocols",
    "ReservingLimiterLike": "backstay.policy.protocols",
    "RetryBudgetLike": "backstay.policy.protocols",
    "RateLimiter": "backstay.policy.ratelimit",
    "RateLimitSettings": "backstay.policy.ratelimit",
    "Reservation": "backstay.policy.ratelimit",
    "OperationType": "backstay.policy.registry",
    "PolicyRegistry": "backstay.policy.registry",
    "GiveUpReason": "backstay.policy.retry",
    "KindOverride": "backstay.policy.retry",
    "RetryDecision": "backstay.policy.retry",
    "RetryPolicy": "backstay.policy.retry",
    "decide": "backstay.policy.retry",
    "ScopeKind": "backstay.policy.spend",
    "ScopeTotals": "backstay.policy.spend",
    "Spend": "backstay.policy.spend",
    "SpendBudget": "backstay.policy.spend",
    "SpendLedger": "backstay.policy.spend",
    "SpendRefusal": "backstay.policy.spend",
    "SpendScope": "backstay.policy.spend",
    "check_spend": "backstay.policy.spend",
}


def __getattr__(name: str) -> Any:
    return load_name(globals(), name, _LAZY)


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
