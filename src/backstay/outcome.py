"""``StructuredOutcome``: the skill error contract's result envelope ``{ok, result, error}``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from backstay.failure import Failure

__all__ = ["StructuredOutcome"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StructuredOutcome(Generic[T]):
    """Either ``ok`` with a ``result``, or not ``ok`` with an ``error`` (an error-info mapping).

    Build with ``StructuredOutcome.success(result)`` or ``StructuredOutcome.failure(f)``.
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
    def failure(cls, error: Failure | Mapping[str, Any]) -> StructuredOutcome[T]:
        info = error.to_error_info() if isinstance(error, Failure) else dict(error)
        return cls(ok=False, error=info)

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
