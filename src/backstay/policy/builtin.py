"""The built-in named policies, and the per-kind defaults they share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from backstay.policy.backoff import Backoff, JitterMode
from backstay.policy.retry import KindOverride, RetryPolicy
from backstay.taxonomy import ErrorCategory, FailureKind

__all__ = [
    "AGENT_DISPATCH",
    "AGGRESSIVE",
    "BUILTIN_POLICIES",
    "ERROR_CONTRACT",
    "NO_RETRY",
    "STANDARD",
]

# Per-kind limits every built-in policy applies (``max_attempts`` caps the policy's own):
# server errors 3 retries from 0.5 s, rate limits 3 retries from 1 s capped at 30 s,
# timeouts 2 retries growing ×1.5, network 3 retries, unknown retried once.
DEFAULT_PER_KIND: Final[Mapping[FailureKind, KindOverride]] = {
    FailureKind.SERVER_ERROR: KindOverride(max_attempts=4, initial_delay_s=0.5),
    FailureKind.RATE_LIMIT: KindOverride(max_attempts=4, initial_delay_s=1.0, max_delay_s=30.0),
    FailureKind.TIMEOUT: KindOverride(max_attempts=3, multiplier=1.5),
    FailureKind.NETWORK: KindOverride(max_attempts=4),
    FailureKind.UNKNOWN: KindOverride(max_attempts=2),
}

STANDARD: Final = RetryPolicy(
    name="standard",
    max_attempts=3,
    backoff=Backoff.EXPONENTIAL,
    initial_delay_s=0.1,
    max_delay_s=5.0,
    multiplier=2.0,
    jitter=0.1,
    per_kind=DEFAULT_PER_KIND,
)

AGGRESSIVE: Final = RetryPolicy(
    name="aggressive",
    max_attempts=5,
    backoff=Backoff.EXPONENTIAL,
    initial_delay_s=0.05,
    max_delay_s=30.0,
    multiplier=2.0,
    jitter=0.2,
    per_kind=DEFAULT_PER_KIND,
)

NO_RETRY: Final = RetryPolicy(name="no_retry", max_attempts=1)

# The adapter reliability contract: 3 retries after the first attempt, 2 s, 4 s, 8 s, cap 60 s;
# a timeout is retried "with longer timeout": each retry after one gets twice the time.
AGENT_DISPATCH: Final = RetryPolicy(
    name="agent_dispatch",
    max_attempts=4,
    backoff=Backoff.EXPONENTIAL,
    initial_delay_s=2.0,
    max_delay_s=60.0,
    multiplier=2.0,
    jitter=0.0,
    jitter_mode=JitterMode.NONE,
    max_retry_after_s=300.0,
    per_kind={FailureKind.UNKNOWN: KindOverride(max_attempts=2)},
    timeout_factor=2.0,
)

# The error contract's "category-specific retry limits" (retries after the first attempt):
# TRANSIENT 3 from 100 ms to 5 s ×2, RATE_LIMIT 3 from 1 s to 30 s ×2, SERVER_ERROR 2 from
# 500 ms to 10 s ×2, TIMEOUT 2 from 200 ms to 5 s ×1.5, NETWORK 3 from 100 ms to 5 s ×2,
# ±10 % jitter. Limits apply by the code's category (``per_category``), as the contract's
# table gives it: an HTTP 503 (TRANSIENT, kind ``server_error``) gets TRANSIENT's. A failure
# whose category has no limits of its own falls back to its kind's (``per_kind``).
# ``derive(jitter_mode="sha256", seed=N)`` gives the contract's seeded, replayable delays.
ERROR_CONTRACT: Final = RetryPolicy(
    name="error_contract",
    max_attempts=4,
    backoff=Backoff.EXPONENTIAL,
    initial_delay_s=0.1,
    max_delay_s=5.0,
    multiplier=2.0,
    jitter=0.1,
    per_kind={
        FailureKind.UNKNOWN: KindOverride(max_attempts=4),
        FailureKind.RATE_LIMIT: KindOverride(max_attempts=4, initial_delay_s=1.0, max_delay_s=30.0),
        FailureKind.SERVER_ERROR: KindOverride(
            max_attempts=3, initial_delay_s=0.5, max_delay_s=10.0
        ),
        FailureKind.TIMEOUT: KindOverride(
            max_attempts=3, initial_delay_s=0.2, max_delay_s=5.0, multiplier=1.5
        ),
        FailureKind.NETWORK: KindOverride(max_attempts=4),
    },
    per_category={
        ErrorCategory.TRANSIENT: KindOverride(max_attempts=4),
        ErrorCategory.RATE_LIMIT: KindOverride(
            max_attempts=4, initial_delay_s=1.0, max_delay_s=30.0
        ),
        ErrorCategory.SERVER_ERROR: KindOverride(
            max_attempts=3, initial_delay_s=0.5, max_delay_s=10.0
        ),
        ErrorCategory.TIMEOUT: KindOverride(
            max_attempts=3, initial_delay_s=0.2, max_delay_s=5.0, multiplier=1.5
        ),
        ErrorCategory.NETWORK: KindOverride(max_attempts=4),
    },
)

BUILTIN_POLICIES: Final[Mapping[str, RetryPolicy]] = {
    p.name: p for p in (STANDARD, AGGRESSIVE, NO_RETRY, AGENT_DISPATCH, ERROR_CONTRACT)
}
