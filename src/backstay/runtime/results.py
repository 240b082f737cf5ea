"""``StepResult`` and ``ValidationResult``: what a step did and whether its output holds.

Both are frozen; outputs are JSON values (checked on construction, so a result can always
be checkpointed), and a failed step carries a ``Failure`` of the taxonomy, never an
exception or a traceback.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any

from backstay._checks import check_name
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.failure import Failure

__all__ = [
    "Severity",
    "StepResult",
    "StepStatus",
    "ValidationIssue",
    "ValidationResult",
    "usage_from_dict",
    "usage_to_dict",
]


class StepStatus(enum.StrEnum):
    """``success``; ``failed`` (see ``error``); ``retry`` (the adapter asks for the step
    again, with ``error`` saying why); ``blocked`` (waiting for a human decision)."""

    SUCCESS = "success"
    FAILED = "failed"
    RETRY = "retry"
    BLOCKED = "blocked"


def _json(value: Any, *, where: str) -> Any:
    try:
        return json.loads(json.dumps(value, sort_keys=True))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"must be JSON: {err}", where=where) from None


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cost_usd": usage.cost_usd,
        "api_calls": usage.api_calls,
    }


def usage_from_dict(data: Mapping[str, Any]) -> Usage:
    return Usage(**{f.name: data[f.name] for f in dataclasses.fields(Usage) if f.name in data})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StepResult:
    """The result of executing one step: its ``status``, JSON ``output``, the ``usage`` of
    its model calls, the run's ``trace_id``, an ``error`` when it did not succeed, and
    optional ``suggestions`` for next steps."""

    step_id: str
    status: StepStatus
    output: Any = None
    usage: Usage = dataclasses.field(default_factory=Usage)
    trace_id: str = ""
    error: Failure | None = None
    suggestions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.step_id, where="step_result.step_id")
        object.__setattr__(self, "status", StepStatus(self.status))
        object.__setattr__(self, "output", _json(self.output, where="step_result.output"))
        object.__setattr__(self, "suggestions", tuple(str(s) for s in self.suggestions))
        if self.status is not StepStatus.SUCCESS and self.error is None:
            raise ConfigError(f"a {self.status} step needs an error", where="step_result.error")

    @property
    def ok(self) -> bool:
        return self.status is StepStatus.SUCCESS

    def to_dict(self) -> dict[str, Any]:
        return {
            "step_id": self.step_id,
            "status": str(self.status),
            "output": self.output,
            "usage": usage_to_dict(self.usage),
            "trace_id": self.trace_id,
            "error": None if self.error is None else self.error.to_error_info(),
            "suggestions": list(self.suggestions),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepResult:
        error = data.get("error")
        return cls(
            step_id=data["step_id"],
            status=StepStatus(data["status"]),
            output=data.get("output"),
            usage=usage_from_dict(data.get("usage") or {}),
            trace_id=data.get("trace_id", ""),
            error=None if error is None else Failure.from_error_info(error),
            suggestions=tuple(data.get("suggestions") or ()),
        )


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ValidationIssue:
    """One problem found in an output: the ``field`` (a JSON path, ``""`` for the whole
    output), a ``message`` a model can act on, a stable ``code`` and its ``severity``."""

    field: str
    message: str
    code: str = "invalid"
    severity: Severity = Severity.ERROR

    def to_dict(self) -> dict[str, str]:
        return {
            "field": self.field,
            "message": self.message,
            "code": self.code,
            "severity": str(self.severity),
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ValidationResult:
    """``ok`` when there is no error; ``errors`` and ``warnings`` as issues; ``corrected``
    holds an output the validator repaired (``None``: nothing repaired)."""

    ok: bool
    errors: tuple[ValidationIssue, ...] = ()
    warnings: tuple[ValidationIssue, ...] = ()
    corrected: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", tuple(self.errors))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        if self.ok and self.errors:
            raise ConfigError("an ok result has no errors", where="validation_result")
        if not self.ok and not self.errors:
            raise ConfigError("a failed result names its errors", where="validation_result")
        object.__setattr__(
            self, "corrected", _json(self.corrected, where="validation_result.corrected")
        )

    def feedback(self) -> str:
        """The errors as text a model can correct its output from."""
        return "; ".join(f"{e.field or '(output)'}: {e.message}" for e in self.errors)
