"""``StepResult`` and ``ValidationResult``: what a step did and whether its output holds.

Both are frozen; outputs are JSON values (checked on construction, so a result can always
be checkpointed), and a failed step carries a ``Failure`` of the taxonomy, never an
exception or a traceback.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping
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


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class StepResult:
    """The result of executing one step: its ``status``, JSON ``output``, the ``usage`` of
    its model calls, the run's ``trace_id``, an ``error`` when it did not succeed, and
    optional ``suggestions`` for next steps. ``step_id`` may be left out: the runtime sets
    it (and ``trace_id``) to the step's.

    The agent adapter interface's names are accepted as keywords and read as properties:
    ``output_json`` (``output``), ``tokens`` (``usage``, a ``TokenUsage``),
    ``error_message`` (the error's message; given alone, the error is an ``ERR_UNKNOWN``
    failure with that message) and ``next_step_suggestions`` (``suggestions``)."""

    step_id: str
    status: StepStatus
    output: Any
    usage: Usage
    trace_id: str
    error: Failure | None
    suggestions: tuple[str, ...]

    def __init__(
        self,
        *,
        status: StepStatus | str,
        step_id: str = "",
        output: Any = None,
        usage: Usage | None = None,
        trace_id: str = "",
        error: Failure | None = None,
        suggestions: Iterable[str] = (),
        output_json: Any = None,
        tokens: Usage | None = None,
        error_message: str | None = None,
        next_step_suggestions: Iterable[str] | None = None,
    ) -> None:
        for printed, own, given in (
            ("output_json", "output", output is not None and output_json is not None),
            ("tokens", "usage", usage is not None and tokens is not None),
            ("error_message", "error", error is not None and error_message is not None),
            (
                "next_step_suggestions",
                "suggestions",
                bool(suggestions) and bool(next_step_suggestions),
            ),
        ):
            if given:
                raise ConfigError(f"give {own} or {printed}, not both", where="step_result")
        if error is None and error_message is not None:
            if not isinstance(error_message, str):
                raise ConfigError(
                    f"must be a string, got {error_message!r}", where="step_result.error_message"
                )
            error = Failure(code="ERR_UNKNOWN", message=error_message)
        if step_id:
            check_name(step_id, where="step_result.step_id")
        status = StepStatus(status)
        chosen = usage if usage is not None else tokens
        if chosen is not None and not isinstance(chosen, Usage):
            raise ConfigError(f"must be a TokenUsage, got {chosen!r}", where="step_result.tokens")
        setter = object.__setattr__
        setter(self, "step_id", step_id)
        setter(self, "status", status)
        setter(
            self,
            "output",
            _json(output if output is not None else output_json, where="step_result.output"),
        )
        setter(self, "usage", chosen if chosen is not None else Usage())
        setter(self, "trace_id", trace_id)
        setter(self, "error", error)
        more = suggestions if suggestions else (next_step_suggestions or ())
        setter(self, "suggestions", tuple(str(s) for s in more))
        if status is not StepStatus.SUCCESS and error is None:
            raise ConfigError(
                f"a {status} step needs an error (or error_message)", where="step_result.error"
            )

    @property
    def output_json(self) -> Any:
        return self.output

    @property
    def tokens(self) -> Usage:
        return self.usage

    @property
    def error_message(self) -> str | None:
        return None if self.error is None else self.error.message

    @property
    def next_step_suggestions(self) -> tuple[str, ...]:
        return self.suggestions

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


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class ValidationResult:
    """``ok`` when there is no error; ``errors`` and ``warnings`` as issues; ``corrected``
    holds an output the validator repaired (``None``: nothing repaired).

    The agent adapter interface's spelling is accepted: ``corrected_output`` for
    ``corrected`` (also read as a property), and warnings given as plain strings (each
    becomes a warning issue on the whole output)."""

    ok: bool
    errors: tuple[ValidationIssue, ...]
    warnings: tuple[ValidationIssue, ...]
    corrected: Any

    def __init__(
        self,
        *,
        ok: bool,
        errors: Iterable[ValidationIssue] = (),
        warnings: Iterable[ValidationIssue | str] = (),
        corrected: Any = None,
        corrected_output: Any = None,
    ) -> None:
        if corrected is not None and corrected_output is not None:
            raise ConfigError(
                "give corrected or corrected_output, not both", where="validation_result"
            )
        errors = tuple(errors)
        kept = tuple(
            ValidationIssue(field="", message=w, code="warning", severity=Severity.WARNING)
            if isinstance(w, str)
            else w
            for w in warnings
        )
        if ok and errors:
            raise ConfigError("an ok result has no errors", where="validation_result")
        if not ok and not errors:
            raise ConfigError("a failed result names its errors", where="validation_result")
        fixed = corrected if corrected is not None else corrected_output
        object.__setattr__(self, "ok", ok)
        object.__setattr__(self, "errors", errors)
        object.__setattr__(self, "warnings", kept)
        object.__setattr__(self, "corrected", _json(fixed, where="validation_result.corrected"))

    @property
    def corrected_output(self) -> Any:
        return self.corrected

    def feedback(self) -> str:
        """The errors as text a model can correct its output from."""
        return "; ".join(f"{e.field or '(output)'}: {e.message}" for e in self.errors)
