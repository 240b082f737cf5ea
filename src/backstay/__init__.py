"""backstay keeps AI agents standing when their providers fail.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

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
    "Attempt",
    "Backoff",
    "BackstayError",
    "CircuitOpen",
    "CodeInfo",
    "ConfigError",
    "DeadlineExceeded",
    "ErrorCategory",
    "Failure",
    "FailureKind",
    "JitterMode",
    "KindInfo",
    "KindOverride",
    "Rejected",
    "RetryBudgetExhausted",
    "RetryPolicy",
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
    "redact",
    "redact_mapping",
    "register_secret",
    "retry",
]
