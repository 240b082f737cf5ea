"""backstay keeps AI agents standing when their providers fail.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from backstay.breaker import (
    BreakerRegistry,
    BreakerSettings,
    CircuitBreaker,
    CircuitState,
    MemoryBreakerStore,
    SQLiteBreakerStore,
)
from backstay.call import Attempt, aattempts, acall, attempts, call, retry, use_registry
from backstay.classify import (
    AGENT_NAMES,
    check_output,
    check_response,
    classify,
    classify_output,
    classify_response,
)
from backstay.config import BackstayConfig, configure, load_config
from backstay.errors import (
    AdapterError,
    BackstayError,
    CircuitOpen,
    ConfigError,
    DeadlineExceeded,
    Rejected,
    RetryBudgetExhausted,
)
from backstay.failure import Failure
from backstay.outcome import StructuredOutcome
from backstay.policy import Backoff, JitterMode, KindOverride, RetryPolicy
from backstay.policy.budget import BudgetSettings, RetryBudget
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.policy.registry import OperationType, PolicyRegistry
from backstay.redact import redact, redact_mapping, register_secret
from backstay.taxonomy import (
    CODES,
    KINDS,
    Action,
    CodeInfo,
    ErrorCategory,
    FailureKind,
    KindInfo,
    code_info,
)

try:
    __version__ = version("backstay")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = [
    "AGENT_NAMES",
    "CODES",
    "KINDS",
    "Action",
    "AdapterError",
    "Attempt",
    "Backoff",
    "BackstayConfig",
    "BackstayError",
    "BreakerRegistry",
    "BreakerSettings",
    "BudgetSettings",
    "CircuitBreaker",
    "CircuitOpen",
    "CircuitState",
    "CodeInfo",
    "ConfigError",
    "DeadlineExceeded",
    "ErrorCategory",
    "Failure",
    "FailureKind",
    "JitterMode",
    "KindInfo",
    "KindOverride",
    "MemoryBreakerStore",
    "OperationType",
    "PolicyRegistry",
    "RateLimitSettings",
    "RateLimiter",
    "RateLimiterRegistry",
    "Rejected",
    "RetryBudget",
    "RetryBudgetExhausted",
    "RetryPolicy",
    "SQLiteBreakerStore",
    "StructuredOutcome",
    "__version__",
    "aattempts",
    "acall",
    "attempts",
    "call",
    "check_output",
    "check_response",
    "classify",
    "classify_output",
    "classify_response",
    "code_info",
    "configure",
    "load_config",
    "redact",
    "redact_mapping",
    "register_secret",
    "retry",
    "use_registry",
]
