"""The agent adapter interface's own names, beside backstay's (docs/conformance.md).

One implementation, two spellings: each name here is an alias of a runtime value or a
thin adapter onto one.

==========================  =====================================================
the interface               backstay
==========================  =====================================================
``TokenUsage``              ``Usage`` (``backstay.adapters.usage``)
``ValidationError``         ``ValidationIssue``
``ValidationSeverity``      ``Severity``
``PlanStep``                a ``Step`` (``backstay.runtime.plan``)
``SecurityConfig``          ``RuntimeSettings(security=…)``: the tool allowlist and
                            approvals (``ToolPolicy``), the tenant, the sandbox
                            requirement, the redaction patterns
``RetryConfig``             ``RuntimeSettings(retry=…)``: the model calls' retry
                            policy and the re-runs of a step that returns ``retry``
``ErrorCategory``,          what an adapter raises to say what went wrong; the runtime
``AdapterError``            records its ``Failure`` and follows the category's recovery
``BaseAgentAdapter``        a base of ``FrameworkAdapter`` implementations
==========================  =====================================================
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from backstay._checks import check_name, check_number
from backstay.adapters.usage import Usage
from backstay.errors import AdapterError as _AdapterError
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy.retry import DEFAULT_JITTER, RetryPolicy
from backstay.runtime.results import Severity, StepStatus, ValidationIssue, ValidationResult
from backstay.runtime.schema_check import check_output

__all__ = [
    "AdapterError",
    "BaseAgentAdapter",
    "ErrorCategory",
    "RetryConfig",
    "SecurityConfig",
    "TokenUsage",
    "ValidationError",
    "ValidationSeverity",
    "error_category",
]

TokenUsage = Usage
ValidationError = ValidationIssue
ValidationSeverity = Severity


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SecurityConfig:
    """The interface's security controls. ``tool_allowlist`` and
    ``human_approval_required`` become the run's ``ToolPolicy``; ``tenant_id`` the tenant
    every run of the runtime belongs to (a run for another tenant is refused);
    ``sandbox`` (default true) makes a sandbox that holds a requirement of
    ``health_check``; ``sensitive_data_patterns`` (regular expressions) are redacted from
    everything recorded, beside backstay's own patterns."""

    tool_allowlist: Sequence[str]
    tenant_id: str
    sandbox: bool = True
    human_approval_required: Sequence[str] = ()
    sensitive_data_patterns: Sequence[str] = ()

    def __post_init__(self) -> None:
        check_name(self.tenant_id, where="security.tenant_id")
        if not isinstance(self.sandbox, bool):
            raise ConfigError(
                f"must be true or false, got {self.sandbox!r}", where="security.sandbox"
            )
        for name in ("tool_allowlist", "human_approval_required", "sensitive_data_patterns"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ConfigError(
                    f"must be a list of strings, got {value!r}", where=f"security.{name}"
                )
            object.__setattr__(self, name, tuple(value))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RetryConfig:
    """The interface's retry settings. The model calls of a run are retried under
    ``policy()`` (exponential backoff from ``base_delay_ms``, at most ``max_delay_ms``,
    ``exponential_base`` the multiplier, jitter of ±10 % or none; ``retry_on_errors``
    failure kinds or ``ERR_*`` codes retried besides the retryable ones), and a step that
    returns a status in ``retry_on_statuses`` is run again up to ``max_attempts`` times in
    all. Only ``retry`` may be named there: a failed step's model calls were retried
    already, and a blocked step waits for a human."""

    max_attempts: int = 3
    base_delay_ms: int = 1000
    max_delay_ms: int = 30000
    exponential_base: float = 2.0
    jitter: bool = True
    retry_on_statuses: Sequence[StepStatus] = dataclasses.field(
        default_factory=lambda: [StepStatus.RETRY]
    )
    retry_on_errors: Sequence[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        check_number(self.max_attempts, where="retry.max_attempts", minimum=1, integer=True)
        check_number(self.base_delay_ms, where="retry.base_delay_ms", integer=True)
        check_number(self.max_delay_ms, where="retry.max_delay_ms", integer=True)
        check_number(self.exponential_base, where="retry.exponential_base", minimum=1.0)
        statuses = []
        for status in self.retry_on_statuses:
            try:
                statuses.append(StepStatus(status))
            except ValueError:
                raise ConfigError(
                    f"{status!r} is not a step status", where="retry.retry_on_statuses"
                ) from None
        other = [str(s) for s in statuses if s is not StepStatus.RETRY]
        if other:
            raise ConfigError(
                f"only retry can be re-run, not {', '.join(other)}: a failed step's model "
                "calls were retried already and a blocked step waits for a human",
                where="retry.retry_on_statuses",
            )
        object.__setattr__(self, "retry_on_statuses", tuple(statuses))
        object.__setattr__(self, "retry_on_errors", tuple(str(e) for e in self.retry_on_errors))
        self.policy()  # checks the delays and the error names

    def policy(self) -> RetryPolicy:
        """The retry policy of the run's model calls."""
        return RetryPolicy(
            name="retry_config",
            max_attempts=self.max_attempts,
            initial_delay_s=self.base_delay_ms / 1000,
            max_delay_s=self.max_delay_ms / 1000,
            multiplier=self.exponential_base,
            jitter=DEFAULT_JITTER if self.jitter else 0.0,
            retry_on=frozenset(self.retry_on_errors),
        )

    @property
    def step_reruns(self) -> int:
        """How many times a step returning ``retry`` is run again."""
        return self.max_attempts - 1 if self.retry_on_statuses else 0


class ErrorCategory(enum.Enum):
    """What kind of error an adapter met (the interface's "Error Classification")."""

    VALIDATION_ERROR = "validation"  # Invalid inputs/outputs
    TOOL_ERROR = "tool"  # Tool execution failures
    LIMIT_EXCEEDED = "limit"  # Resource/time limits hit
    FRAMEWORK_ERROR = "framework"  # Internal framework issues
    SECURITY_VIOLATION = "security"  # Safety/security breaches


_CATEGORY_CODES: Final[Mapping[ErrorCategory, str]] = {
    ErrorCategory.VALIDATION_ERROR: "ERR_OUTPUT_INVALID",
    ErrorCategory.TOOL_ERROR: "ERR_UNKNOWN",
    ErrorCategory.LIMIT_EXCEEDED: "ERR_LIMIT_EXCEEDED",
    ErrorCategory.FRAMEWORK_ERROR: "ERR_UNKNOWN",
    ErrorCategory.SECURITY_VIOLATION: "ERR_SECURITY_VIOLATION",
}
_SECURITY_CODES: Final = frozenset(
    {"ERR_SECURITY_VIOLATION", "ERR_TOOL_NOT_ALLOWED", "ERR_SANDBOX_ESCAPE"}
)


def error_category(failure: Failure) -> ErrorCategory:
    """The interface's category of a failure backstay recorded."""
    named = failure.details.get("category") if failure.details else None
    if isinstance(named, str) and named in {c.value for c in ErrorCategory}:
        return ErrorCategory(named)
    if failure.code in _SECURITY_CODES:
        return ErrorCategory.SECURITY_VIOLATION
    if failure.code.startswith("ERR_LIMIT_"):
        return ErrorCategory.LIMIT_EXCEEDED
    if failure.code == "ERR_OUTPUT_INVALID":
        return ErrorCategory.VALIDATION_ERROR
    return ErrorCategory.FRAMEWORK_ERROR


class AdapterError(_AdapterError):
    """The interface's ``AdapterError``: raised by an adapter's ``plan`` or ``execute``
    with its ``category``, whether it is ``retryable``, a ``user_message`` and
    ``technical_details``. It is backstay's ``AdapterError``: its ``failure`` carries the
    category's code, the user message and the retryability; the technical details stay
    on the exception and are never recorded (they may hold internals).

    What the runtime does with it (the interface's "Recovery Strategies"): a retryable
    validation error runs the step again with the message as feedback; a tool error fails
    the step; a limit ends the run ``limit_exceeded``; a framework error moves to the
    fallback adapter when there is one; a security violation ends the run at once,
    ``escalated``."""

    def __init__(
        self,
        category: ErrorCategory | str,
        retryable: bool = False,
        user_message: str = "",
        technical_details: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            self.category = ErrorCategory(category)
        except ValueError:
            known = ", ".join(c.value for c in ErrorCategory)
            raise ConfigError(
                f"unknown category {category!r} (known: {known})", where="AdapterError.category"
            ) from None
        self.retryable = bool(retryable)
        self.user_message = str(user_message)
        self.technical_details = dict(technical_details or {})
        failure = Failure(
            code=_CATEGORY_CODES[self.category],
            message=self.user_message or f"{self.category.value} error",
            details={"category": self.category.value, "retryable": self.retryable},
        )
        super().__init__(failure)


class BaseAgentAdapter:
    """A base for an adapter written as the interface prints it: ``plan`` and
    ``execute``, synchronous or ``async``; ``validate`` checks an output against a JSON
    schema (the runtime's subset); ``is_available()`` says whether its framework can run
    here (``health_check`` asks it). ``name`` defaults to the class name."""

    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.name:
            cls.name = cls.__name__

    def validate(self, output_json: Any, schema: Mapping[str, Any] | None) -> ValidationResult:
        return check_output(output_json, schema)

    def is_available(self) -> bool:
        return True
