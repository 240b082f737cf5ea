"""The closed taxonomy: kinds, codes, Failure and its two contract shapes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from backstay import (
    CODES,
    KINDS,
    Action,
    ErrorCategory,
    Failure,
    FailureKind,
    StructuredOutcome,
    code_info,
)

# The table: kind → (retryable by default, default action).
EXPECTED_KINDS = {
    "network": (True, Action.RETRY_BACKOFF),
    "timeout": (True, Action.RETRY_BACKOFF),
    "rate_limit": (True, Action.WAIT_AND_RETRY),
    "server_error": (True, Action.RETRY_BACKOFF),
    "context_limit": (False, Action.FAIL),
    "content_policy": (False, Action.FAIL_AND_ESCALATE),
    "quota_exhausted": (False, Action.PAUSE_AND_ESCALATE),
    "auth": (False, Action.FAIL_AND_ESCALATE),
    "invalid_request": (False, Action.FAIL),
    "output_invalid": (True, Action.RETRY_WITH_FEEDBACK),
    "limit_exceeded": (False, Action.FAIL_WITH_PARTIAL),
    "security_violation": (False, Action.ABORT_AND_ESCALATE),
    "cancelled": (False, Action.CANCEL),
    "unknown": (True, Action.RETRY_ONCE),
}
ADAPTER_TYPES = {
    "network",
    "rate_limit",
    "timeout",
    "context_limit",
    "content_policy",
    "quota_exhausted",
    "auth",
    "invalid_request",
    "unknown",
}
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def test_failure_kind_has_exactly_the_documented_members() -> None:
    assert {k.value for k in FailureKind} == set(EXPECTED_KINDS)


@pytest.mark.parametrize(("kind", "expected"), sorted(EXPECTED_KINDS.items()))
def test_each_kind_has_its_documented_default(kind: str, expected: tuple[bool, Action]) -> None:
    info = KINDS[FailureKind(kind)]
    assert (info.retryable, info.action) == expected


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_is_named_err_and_follows_its_kind(code: str) -> None:
    info = code_info(code)
    assert code.startswith("ERR_")
    assert code == code.upper()
    # The error contract's own SSL row: NETWORK, not retryable.
    if code.endswith("_NO_RETRY") or code == "ERR_SSL_ERROR":
        assert info.retryable is False
    else:
        assert info.retryable is KINDS[info.kind].retryable


def test_every_kind_has_at_least_one_code() -> None:
    assert {info.kind for info in CODES.values()} == set(FailureKind)


def test_failure_takes_kind_and_retryable_from_its_code() -> None:
    failure = Failure(code="ERR_LLM_QUOTA_EXHAUSTED", message="quota")
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED
    assert failure.retryable is False
    assert failure.action is Action.PAUSE_AND_ESCALATE


def test_a_no_retry_code_keeps_its_kind_but_fails() -> None:
    failure = Failure(code="ERR_SERVER_ERROR_NO_RETRY")
    assert failure.kind is FailureKind.SERVER_ERROR
    assert failure.retryable is False
    assert failure.action is Action.FAIL


def test_failure_rejects_an_unregistered_code() -> None:
    with pytest.raises(ValueError, match="unknown code 'ERR_NOPE'"):
        Failure(code="ERR_NOPE")


def test_failure_rejects_a_naive_reset_time() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        Failure(code="ERR_LLM_DAILY_QUOTA", resets_at=dt.datetime(2026, 1, 1))


def test_failure_rejects_a_negative_wait() -> None:
    with pytest.raises(ValueError, match="retry_after_s"):
        Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=-1.0)


def test_failure_is_frozen() -> None:
    failure = Failure(code="ERR_TIMEOUT")
    with pytest.raises(dataclasses.FrozenInstanceError):
        failure.code = "ERR_UNKNOWN"  # type: ignore[misc]


def test_failure_trims_a_huge_message() -> None:
    failure = Failure(code="ERR_UNKNOWN", message="x" * 100_000)
    assert len(failure.message) < 5000


def _rich_failure() -> Failure:
    return Failure(
        code="ERR_LLM_DAILY_QUOTA",
        message="You have exhausted your daily quota on this model.",
        retry_after_s=3600.5,
        resets_at=NOW + dt.timedelta(hours=1),
        provider="gemini",
        status=429,
        details={"quota_ids": ["GenerateRequestsPerDayPerProjectPerModel-FreeTier"]},
    )


def test_error_info_has_the_contract_fields() -> None:
    info = _rich_failure().to_error_info()
    assert set(info) == {
        "code",
        "message",
        "category",
        "retryable",
        "details",
        "retry_after_ms",
        "upstream_status",
        "provider",
    }
    assert info["category"] == "RESOURCE"
    assert info["retry_after_ms"] == 3600500
    assert info["upstream_status"] == 429


@pytest.mark.parametrize("kind", list(FailureKind))
def test_every_kind_maps_to_a_contract_category(kind: FailureKind) -> None:
    assert KINDS[kind].category in set(ErrorCategory)
    assert KINDS[kind].adapter_error_type in ADAPTER_TYPES


def test_error_info_round_trips_losslessly() -> None:
    failure = _rich_failure()
    assert Failure.from_error_info(failure.to_error_info()) == failure


def test_adapter_error_has_the_contract_fields_and_round_trips() -> None:
    failure = _rich_failure()
    error = failure.to_adapter_error()
    assert error["error_type"] == "quota_exhausted"
    # The contract's types: whole seconds (rounded up), raw_error text.
    assert error["retry_after_seconds"] == 3601
    assert set(error) == {"error_type", "message", "retry_after_seconds", "raw_error"}
    assert Failure.from_adapter_error(error) == failure


def test_server_errors_travel_as_network_in_the_adapter_contract() -> None:
    error = Failure(code="ERR_HTTP_529_OVERLOADED").to_adapter_error()
    assert error["error_type"] == "network"
    assert json.loads(error["raw_error"])["code"] == "ERR_HTTP_529_OVERLOADED"


def test_to_json_is_stable_and_complete() -> None:
    text = _rich_failure().to_json()
    assert '"kind": "quota_exhausted"' in text
    assert '"resets_at": "2026-03-01T13:00:00+00:00"' in text


def test_structured_outcome_success() -> None:
    outcome = StructuredOutcome.success({"answer": 42})
    assert outcome.ok is True
    assert outcome.result == {"answer": 42}
    assert outcome.error is None
    assert outcome.failure_value is None


def test_structured_outcome_failure_carries_error_info() -> None:
    failure = _rich_failure()
    outcome: StructuredOutcome[object] = StructuredOutcome.failure(failure)
    assert outcome.ok is False
    assert outcome.error == failure.to_error_info()
    assert outcome.failure_value == failure


def test_structured_outcome_refuses_ok_with_an_error() -> None:
    with pytest.raises(ValueError, match="successful outcome has no error"):
        StructuredOutcome(ok=True, error={"code": "ERR_UNKNOWN"})


def test_structured_outcome_refuses_failure_without_error() -> None:
    with pytest.raises(ValueError, match="needs an error"):
        StructuredOutcome(ok=False)
