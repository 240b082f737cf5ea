"""The adapter reliability contract's ``AdapterError``, as it prints it.

::

    @dataclass
    class AdapterError:
        error_type: Literal["network", "rate_limit", "timeout", "context_limit",
                            "content_policy", "quota_exhausted", "unknown"]
        message: str
        retry_after_seconds: Optional[int] = None  # for rate_limit
        raw_error: Optional[str] = None

It is a value an adapter written to the contract builds; ``to_failure()`` is backstay's
``Failure`` of it (``Failure.from_adapter_error``), ``from_failure`` the other way. This
is not ``backstay.errors.AdapterError``, the exception backstay's adapters raise (whose
``failure`` is the same ``Failure``). backstay classifies two more types than the
contract's seven, ``auth`` and ``invalid_request``, so that neither is ever ``unknown``.
"""

from __future__ import annotations

import dataclasses
from typing import Final, Literal

from backstay.errors import ConfigError
from backstay.failure import Failure

__all__ = ["CONTRACT_ERROR_TYPES", "ERROR_TYPES", "AdapterError"]

ErrorType = Literal[
    "network",
    "rate_limit",
    "timeout",
    "context_limit",
    "content_policy",
    "quota_exhausted",
    "unknown",
    "auth",
    "invalid_request",
]
CONTRACT_ERROR_TYPES: Final = (
    "network",
    "rate_limit",
    "timeout",
    "context_limit",
    "content_policy",
    "quota_exhausted",
    "unknown",
)
ERROR_TYPES: Final = (*CONTRACT_ERROR_TYPES, "auth", "invalid_request")


@dataclasses.dataclass(frozen=True, slots=True)
class AdapterError:
    """One failed dispatch, in the contract's four fields (positional as printed)."""

    error_type: ErrorType
    message: str
    retry_after_seconds: int | None = None
    raw_error: str | None = None

    def __post_init__(self) -> None:
        if self.error_type not in ERROR_TYPES:
            raise ConfigError(
                f"must be one of {', '.join(ERROR_TYPES)}, got {self.error_type!r}",
                where="AdapterError.error_type",
            )
        if not isinstance(self.message, str):
            raise ConfigError(f"must be text, got {self.message!r}", where="AdapterError.message")
        wait = self.retry_after_seconds
        if wait is not None and (isinstance(wait, bool) or not isinstance(wait, int) or wait < 0):
            raise ConfigError(
                f"must be whole seconds >= 0 or None, got {wait!r}",
                where="AdapterError.retry_after_seconds",
            )
        if self.raw_error is not None and not isinstance(self.raw_error, str):
            raise ConfigError(
                f"must be text or None, got {self.raw_error!r}", where="AdapterError.raw_error"
            )

    def to_failure(self) -> Failure:
        return Failure.from_adapter_error(self)

    @classmethod
    def from_failure(cls, failure: Failure) -> AdapterError:
        return cls(**failure.to_adapter_error())
