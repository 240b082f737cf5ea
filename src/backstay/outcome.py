"""``StructuredOutcome`` and ``ErrorInfo``: the skill error contract's result envelope
``{ok, result, error}`` and the error it carries.

``StructuredOutcome.failure`` takes either a ``Failure`` (or an error mapping) or the
contract's keyword form ``failure(code=…, message=…, category=…, retryable=…, details=…,
retry_after_ms=…)``. The keyword form is validated: the code must be registered (or one of
the contract's aliases, kept as written) and the category one of ``ErrorCategory``.
``category`` and ``retryable`` default to what the code decides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.taxonomy import CODE_ALIASES, CODES, ErrorCategory, code_info

__all__ = ["ErrorInfo", "StructuredOutcome"]

T = TypeVar("T")


def _category(value: object) -> ErrorCategory:
    try:
        return ErrorCategory(str(value))
    except ValueError:
        choices = ", ".join(c.value for c in ErrorCategory)
        raise ConfigError(f"must be one of {choices}, got {value!r}", where="category") from None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ErrorInfo:
    """The error contract's structured error. ``code`` must be registered or an alias."""

    code: str
    message: str
    category: ErrorCategory
    retryable: bool
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    retry_after_ms: int | None = None
    upstream_status: int | None = None
    provider: str | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES and self.code not in CODE_ALIASES:
            raise ConfigError(
                f"unknown code {self.code!r} (see backstay.CODES and CODE_ALIASES)", where="code"
            )
        object.__setattr__(self, "category", _category(self.category))
        if not isinstance(self.retryable, bool):
            raise ConfigError(f"must be true or false, got {self.retryable!r}", where="retryable")
        ms = self.retry_after_ms
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, int) or ms < 0):
            raise ConfigError(f"must be an integer >= 0, got {ms!r}", where="retry_after_ms")
        object.__setattr__(self, "details", dict(self.details))

    @classmethod
    def build(
        cls,
        *,
        code: str,
        message: str = "",
        category: str | None = None,
        retryable: bool | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after_ms: int | None = None,
        upstream_status: int | None = None,
        provider: str | None = None,
    ) -> ErrorInfo:
        """An ``ErrorInfo`` whose omitted ``category`` and ``retryable`` follow ``code``."""
        try:
            info = code_info(code)
        except KeyError:
            raise ConfigError(
                f"unknown code {code!r} (see backstay.CODES and CODE_ALIASES)", where="code"
            ) from None
        return cls(
            code=code,
            message=message,
            category=_category(info.category if category is None else category),
            retryable=info.retryable if retryable is None else retryable,
            details=details or {},
            retry_after_ms=retry_after_ms,
            upstream_status=upstream_status,
            provider=provider,
        )

    @classmethod
    def from_failure(cls, failure: Failure) -> ErrorInfo:
        return cls.from_dict(failure.to_error_info())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ErrorInfo:
        return cls(
            code=str(data["code"]),
            message=str(data.get("message") or ""),
            category=_category(data["category"]),
            retryable=bool(data["retryable"]),
            details=dict(data.get("details") or {}),
            retry_after_ms=data.get("retry_after_ms"),
            upstream_status=data.get("upstream_status"),
            provider=data.get("provider"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The contract's mapping (``Failure.to_error_info`` has the same keys)."""
        return {
            "code": self.code,
            "message": self.message,
            "category": str(self.category),
            "retryable": self.retryable,
            "details": dict(self.details),
            "retry_after_ms": self.retry_after_ms,
            "upstream_status": self.upstream_status,
            "provider": self.provider,
        }

    def to_failure(self) -> Failure:
        """backstay's ``Failure`` (an alias code becomes the canonical code)."""
        return Failure.from_error_info(self.to_dict())


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StructuredOutcome(Generic[T]):
    """Either ``ok`` with a ``result``, or not ``ok`` with an ``error`` (an error-info mapping).

    Build with ``StructuredOutcome.success(result)``, ``StructuredOutcome.failure(f)`` or
    ``StructuredOutcome.failure(code=…, message=…, category=…, retryable=…)``.
    """

    ok: bool
    result: T | None = None
    error: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.ok and self.error is not None:
            raise ValueError("StructuredOutcome: a successful outcome has no error")
        if not self.ok and self.error is None:
            raise ValueError("StructuredOutcome: a failed outcome needs an error")

    @classmethod
    def success(cls, result: T) -> StructuredOutcome[T]:
        return cls(ok=True, result=result)

    @classmethod
    def failure(
        cls,
        error: Failure | ErrorInfo | Mapping[str, Any] | None = None,
        /,
        *,
        code: str | None = None,
        message: str = "",
        category: str | None = None,
        retryable: bool | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after_ms: int | None = None,
        upstream_status: int | None = None,
        provider: str | None = None,
    ) -> StructuredOutcome[T]:
        """A failed outcome from a ``Failure``, an ``ErrorInfo``, a mapping, or keywords."""
        if error is not None:
            if code is not None:
                raise ConfigError("give an error or keywords, not both", where="failure")
            if isinstance(error, Failure):
                return cls(ok=False, error=error.to_error_info())
            if isinstance(error, ErrorInfo):
                return cls(ok=False, error=error.to_dict())
            return cls(ok=False, error=dict(error))
        if code is None:
            raise ConfigError("needs an error or code=…", where="failure")
        info = ErrorInfo.build(
            code=code,
            message=message,
            category=category,
            retryable=retryable,
            details=details,
            retry_after_ms=retry_after_ms,
            upstream_status=upstream_status,
            provider=provider,
        )
        return cls(ok=False, error=info.to_dict())

    @property
    def failure_value(self) -> Failure | None:
        """The error as a ``Failure`` (``None`` when ``ok``)."""
        return None if self.error is None else Failure.from_error_info(self.error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "result": self.result,
            "error": None if self.error is None else dict(self.error),
        }
