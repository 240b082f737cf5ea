"""The guard's exceptions: where they sit in the tree and what they say."""

from __future__ import annotations

import datetime as _dt

from backstay.errors import BackstayError, Rejected
from backstay.idempotency.errors import LeaseLost, OperationInProgress

WHEN = _dt.datetime(2026, 1, 1, 12, 0, tzinfo=_dt.UTC).timestamp()


def test_operation_in_progress_is_a_refusal_with_a_retry_hint() -> None:
    error = OperationInProgress("a:b:c", held_by="w1", expires_at=WHEN, retry_after_s=4.0)
    assert isinstance(error, Rejected)
    assert error.retry_after_s == 4.0
    assert (error.operation_id, error.held_by, error.expires_at) == ("a:b:c", "w1", WHEN)


def test_operation_in_progress_names_the_holder_and_the_lease_end() -> None:
    error = OperationInProgress("a:b:c", held_by="w1", expires_at=WHEN, retry_after_s=4.0)
    assert str(error) == (
        "operation 'a:b:c' is in progress: held by 'w1', lease ends "
        "2026-01-01T12:00:00+00:00 unless renewed; it was not run again"
    )


def test_operation_in_progress_says_how_long_it_waited() -> None:
    error = OperationInProgress(
        "a:b:c", held_by="w1", expires_at=WHEN, retry_after_s=0.0, waited_s=2.5
    )
    assert "after waiting 2.500 s" in str(error)


def test_lease_lost_names_the_lease_and_says_nothing_was_recorded() -> None:
    error = LeaseLost("a:b:c", owner="w1", generation=3)
    assert isinstance(error, BackstayError)
    assert not isinstance(error, Rejected)
    assert "(generation 3)" in str(error)
    assert "not recorded" in str(error)
