from __future__ import annotations

import pytest

from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.runtime import StepResult, StepStatus, ValidationIssue, ValidationResult


def test_a_failed_step_result_needs_an_error() -> None:
    with pytest.raises(ConfigError, match="needs an error"):
        StepResult(step_id="a", status=StepStatus.FAILED)


def test_a_step_result_survives_a_round_trip_through_a_dict() -> None:
    result = StepResult(
        step_id="a",
        status=StepStatus.RETRY,
        output={"x": 1},
        usage=Usage(input_tokens=3, output_tokens=4),
        trace_id="t",
        error=Failure(code="ERR_OUTPUT_INVALID", message="bad"),
        suggestions=("next",),
    )
    assert StepResult.from_dict(result.to_dict()) == result


def test_a_failed_validation_names_its_errors() -> None:
    with pytest.raises(ConfigError, match="names its errors"):
        ValidationResult(ok=False)


def test_feedback_lists_each_error_with_its_field() -> None:
    result = ValidationResult(
        ok=False,
        errors=(
            ValidationIssue(field="answer", message="is required"),
            ValidationIssue(field="", message="must be an object"),
        ),
    )
    assert result.feedback() == "answer: is required; (output): must be an object"
