"""backstay keeps AI agents standing when their providers fail.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from backstay.call import Attempt, aattempts, acall, attempts, call, retry
from backstay.classify import (
    AGENT_NAMES,
    check_output,
    check_response,
    classify,
    classify_output,
    classify_response,
)
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
from backstay.outcome import ErrorInfo, StructuredOutcome
from backstay.policy.backoff import Backoff, JitterMode
from backstay.policy.registry import OperationType, PolicyRegistry, use_registry
from backstay.policy.retry import KindOverride, RetryPolicy
from backstay.redact import redact, redact_mapping, register_secret
from backstay.taxonomy import (
    CODE_ALIASES,
    CODES,
    KINDS,
    Action,
    CodeInfo,
    ErrorCategory,
    FailureKind,
    KindInfo,
    canonical_code,
    code_info,
)

if TYPE_CHECKING:
    __version__: str
    from backstay.adapters import (
        Adapter,
        AgentRequest,
        AgentResult,
        BaseAdapter,
        TierConfig,
        Usage,
        adapter_names,
        get_adapter,
    )
    from backstay.breaker import (
        BreakerRegistry,
        BreakerSettings,
        CircuitBreaker,
        CircuitState,
        MemoryBreakerStore,
    )
    from backstay.config import BackstayConfig, configure, load_config, load_suite
    from backstay.engine import Engine, EscalationQueue, Summary, TaskSpec, TaskState
    from backstay.idempotency import (
        IdempotencyGuard,
        LeaseLost,
        OperationInProgress,
        SkillDescriptor,
        attempt_id,
        operation_id,
    )
    from backstay.observe.health import HealthReport, health_check
    from backstay.policy.budget import BudgetSettings, RetryBudget
    from backstay.policy.limiters import RateLimiterRegistry
    from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
    from backstay.policy.spend import SpendBudget
    from backstay.store import SQLiteBreakerStore

# The engine, adapters, breakers, idempotency, configuration, retry budgets, rate limiters
# and spending budgets load on first use: a program that only classifies or retries does
# not pay for them at import.
_LAZY: dict[str, str] = {
    "Adapter": "backstay.adapters",
    "AgentRequest": "backstay.adapters",
    "AgentResult": "backstay.adapters",
    "BaseAdapter": "backstay.adapters",
    "TierConfig": "backstay.adapters",
    "Usage": "backstay.adapters",
    "adapter_names": "backstay.adapters",
    "get_adapter": "backstay.adapters",
    "BreakerRegistry": "backstay.breaker",
    "BreakerSettings": "backstay.breaker",
    "CircuitBreaker": "backstay.breaker",
    "CircuitState": "backstay.breaker",
    "MemoryBreakerStore": "backstay.breaker",
    "SQLiteBreakerStore": "backstay.store",
    "BackstayConfig": "backstay.config",
    "configure": "backstay.config",
    "load_config": "backstay.config",
    "load_suite": "backstay.config",
    "Engine": "backstay.engine",
    "EscalationQueue": "backstay.engine",
    "Summary": "backstay.engine",
    "TaskSpec": "backstay.engine",
    "TaskState": "backstay.engine",
    "IdempotencyGuard": "backstay.idempotency",
    "LeaseLost": "backstay.idempotency",
    "OperationInProgress": "backstay.idempotency",
    "SkillDescriptor": "backstay.idempotency",
    "attempt_id": "backstay.idempotency",
    "operation_id": "backstay.idempotency",
    "HealthReport": "backstay.observe.health",
    "health_check": "backstay.observe.health",
    "BudgetSettings": "backstay.policy.budget",
    "RetryBudget": "backstay.policy.budget",
    "RateLimiterRegistry": "backstay.policy.limiters",
    "RateLimiter": "backstay.policy.ratelimit",
    "RateLimitSettings": "backstay.policy.ratelimit",
    "SpendBudget": "backstay.policy.spend",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from backstay._version import __version__  # noqa: PLC0415 - read on first use

        globals()[name] = __version__
        return __version__
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'backstay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AGENT_NAMES",
    "CODES",
    "CODE_ALIASES",
    "KINDS",
    "Action",
    "Adapter",
    "AdapterError",
    "AgentRequest",
    "AgentResult",
    "Attempt",
    "Backoff",
    "BackstayConfig",
    "BackstayError",
    "BaseAdapter",
    "BreakerRegistry",
    "BreakerSettings",
    "BudgetSettings",
    "CircuitBreaker",
    "CircuitOpen",
    "CircuitState",
    "CodeInfo",
    "ConfigError",
    "DeadlineExceeded",
    "Engine",
    "ErrorCategory",
    "ErrorInfo",
    "EscalationQueue",
    "Failure",
    "FailureKind",
    "HealthReport",
    "IdempotencyGuard",
    "JitterMode",
    "KindInfo",
    "KindOverride",
    "LeaseLost",
    "MemoryBreakerStore",
    "OperationInProgress",
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
    "SkillDescriptor",
    "SpendBudget",
    "StructuredOutcome",
    "Summary",
    "TaskSpec",
    "TaskState",
    "TierConfig",
    "Usage",
    "__version__",
    "aattempts",
    "acall",
    "adapter_names",
    "attempt_id",
    "attempts",
    "call",
    "canonical_code",
    "check_output",
    "check_response",
    "classify",
    "classify_output",
    "classify_response",
    "code_info",
    "configure",
    "get_adapter",
    "health_check",
    "load_config",
    "load_suite",
    "operation_id",
    "redact",
    "redact_mapping",
    "register_secret",
    "retry",
    "use_registry",
]
