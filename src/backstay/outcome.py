"""``StructuredOutcome`` and ``ErrorInfo``: the skill error contract's result envelope
``{ok, result, error}`` and the error it carries.

``StructuredOutcome.failure`` takes either a ``Failure`` (or an error mapping) or the
contract's keyword form ``failure(code=…, message=…, category=…, retryable=…, details=…,
retry_after_ms=…)``. The keyword form is validated: the code must be registered (or one of
the contract's aliases, kept as written, or its fallback ``ERR_HTTP_<status>``) and the
category one of ``ErrorCategory`` (by name or one-letter code). ``category`` and
``retryable`` default to what the code decides. An outcome built from a ``Failure`` shows
the contract's spelling of its code (``contract_error_info``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, Generic, TypeVar

from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.taxonomy import (
    CODE_ALIASES,
    CODES,
    CONTRACT_SPELLING,
    HTTP_STATUS_CODE,
    ErrorCategory,
    code_info,
)

__all__ = ["ErrorInfo", "StructuredOutcome", "contract_error_info", "failure_of"]

T = TypeVar("T")
_FIRST_SERVER_STATUS: Final = 500


def _category(value: object) -> ErrorCategory:
    """A category by name, or by the error contract's one-letter code (``T`` …)."""
    try:
        text = str(value)
        return ErrorCategory.from_letter(text) if len(text) == 1 else ErrorCategory(text)
    except ValueError:
        choices = ", ".join(f"{c.value} ({c.letter})" for c in ErrorCategory)
        raise ConfigError(f"must be one of {choices}, got {value!r}", where="category") from None


def _status_code(code: str) -> int | None:
    """The status of the contract's fallback code ``ERR_HTTP_<status>``, when ``code`` is one
    backstay does not register (``ERR_HTTP_418``, ``ERR_HTTP_507``)."""
    found = HTTP_STATUS_CODE.match(code)
    return int(found.group(1)) if found and code not in CODES else None


def _known(code: str) -> bool:
    return code in CODES or code in CODE_ALIASES or _status_code(code) is not None


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
        if not _known(self.code):
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
        """An ``ErrorInfo`` whose omitted ``category`` and ``retryable`` follow ``code`` (for
        the contract's fallback ``ERR_HTTP_<status>``: ``SERVER_ERROR`` and retryable from
        500, else ``CLIENT_ERROR``, as its ``_map_http_error`` does)."""
        status = _status_code(code)
        if status is not None:
            server = status >= _FIRST_SERVER_STATUS
            default_category = ErrorCategory.SERVER_ERROR if server else ErrorCategory.CLIENT_ERROR
            default_retryable = server
        else:
            try:
                info = code_info(code)
            except KeyError:
                raise ConfigError(
                    f"unknown code {code!r} (see backstay.CODES and CODE_ALIASES)", where="code"
                ) from None
            default_category, default_retryable = info.category, info.retryable
        return cls(
            code=code,
            message=message,
            category=_category(default_category if category is None else category),
            retryable=default_retryable if retryable is None else retryable,
            details=details or {},
            retry_after_ms=retry_after_ms,
            upstream_status=upstream_status,
            provider=provider,
        )

    @classmethod
    def from_failure(cls, failure: Failure) -> ErrorInfo:
        """The failure in the contract's spelling (``contract_error_info``)."""
        return cls.from_dict(contract_error_info(failure))

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
        """backstay's ``Failure`` (an alias code becomes the canonical code; the
        contract's ``ERR_HTTP_<status>`` is backstay's ``ERR_HTTP_4XX`` / ``ERR_HTTP_5XX``
        with that status, the contract's code kept in ``details["contract_code"]``)."""
        return failure_of(self.to_dict())


def contract_error_info(failure: Failure) -> dict[str, Any]:
    """``failure.to_error_info()`` in the error contract's spelling: a code backstay names
    more finely or otherwise (``CONTRACT_SPELLING``: ``ERR_READ_TIMEOUT`` → ``ERR_TIMEOUT``,
    ``ERR_LLM_MODEL_NOT_FOUND`` → ``ERR_LLM_INVALID_MODEL`` …) shows the contract's code,
    backstay's kept in ``details["backstay_code"]``; ``failure_of`` reads it back."""
    info = failure.to_error_info()
    details = dict(info.get("details") or {})
    shown = details.pop("contract_code", None) or CONTRACT_SPELLING.get(failure.code)
    if isinstance(shown, str) and shown != failure.code:
        details["backstay_code"] = failure.code
        info["code"] = shown
    info["details"] = details
    return info


def failure_of(info: Mapping[str, Any]) -> Failure:
    """The ``Failure`` of an error-info mapping in either spelling."""
    data = dict(info)
    details = dict(data.get("details") or {})
    kept = details.pop("backstay_code", None)
    code = str(data["code"])
    if isinstance(kept, str) and kept in CODES:
        data["code"] = kept
        if code != CONTRACT_SPELLING.get(kept):
            details["contract_code"] = code
    elif (status := _status_code(code)) is not None:
        data["code"] = "ERR_HTTP_5XX" if status >= _FIRST_SERVER_STATUS else "ERR_HTTP_4XX"
        data["upstream_status"] = data.get("upstream_status") or status
        details["contract_code"] = code
    data["details"] = details
    return Failure.from_error_info(data)


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
                return cls(ok=False, error=contract_error_info(error))
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
        return None if self.error is None else failure_of(self.error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "result": self.result,
            "error": None if self.error is None else dict(self.error),
        }
