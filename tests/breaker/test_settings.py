"""BreakerSettings: defaults, validation naming the field, counted kinds."""

from __future__ import annotations

from typing import Any

import pytest

from backstay.breaker.settings import DEFAULT_COUNTED_KINDS, BreakerSettings, WindowKind
from backstay.errors import ConfigError
from backstay.taxonomy import FailureKind


def test_defaults_trip_on_five_consecutive_or_half_of_twenty_calls() -> None:
    s = BreakerSettings()
    assert (s.failure_threshold, s.failure_rate_threshold) == (5, 0.5)
    assert (s.window_kind, s.window_calls, s.minimum_calls) == (WindowKind.COUNT, 20, 10)
    assert (s.half_open_max_probes, s.success_threshold) == (1, 1)


def test_default_counted_kinds_are_the_far_side_being_unwell() -> None:
    assert {
        FailureKind.NETWORK,
        FailureKind.TIMEOUT,
        FailureKind.SERVER_ERROR,
        FailureKind.UNKNOWN,
    } == DEFAULT_COUNTED_KINDS


@pytest.mark.parametrize(
    "kind",
    [
        FailureKind.INVALID_REQUEST,
        FailureKind.CONTEXT_LIMIT,
        FailureKind.CONTENT_POLICY,
        FailureKind.AUTH,
        FailureKind.QUOTA_EXHAUSTED,
        FailureKind.RATE_LIMIT,
        FailureKind.CANCELLED,
    ],
)
def test_client_mistakes_account_states_and_cancellation_do_not_count(kind: FailureKind) -> None:
    assert not BreakerSettings().counts(kind)


def test_counted_kinds_accept_strings() -> None:
    s = BreakerSettings(counted_kinds=frozenset({"rate_limit", "server_error"}))  # type: ignore[arg-type]
    assert s.counted_kinds == {FailureKind.RATE_LIMIT, FailureKind.SERVER_ERROR}


def test_window_kind_accepts_a_string() -> None:
    assert BreakerSettings(window_kind="time").window_kind is WindowKind.TIME  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"failure_threshold": 0}, "failure_threshold"),
        ({"failure_threshold": 2.5}, "failure_threshold"),
        ({"failure_threshold": True}, "failure_threshold"),
        ({"failure_rate_threshold": 0.0}, "failure_rate_threshold"),
        ({"failure_rate_threshold": 1.5}, "failure_rate_threshold"),
        ({"failure_rate_threshold": float("nan")}, "failure_rate_threshold"),
        ({"failure_threshold": None, "failure_rate_threshold": None}, "failure_threshold"),
        ({"window_kind": "sliding"}, "window_kind"),
        ({"window_calls": 0}, "window_calls"),
        ({"window_calls": 5000}, "window_calls"),
        ({"window_s": 0.0}, "window_s"),
        ({"window_s": float("inf")}, "window_s"),
        ({"minimum_calls": 0}, "minimum_calls"),
        ({"minimum_calls": 30}, "minimum_calls"),
        ({"open_duration_s": -1.0}, "open_duration_s"),
        ({"open_duration_s": "30"}, "open_duration_s"),
        ({"half_open_max_probes": 0}, "half_open_max_probes"),
        ({"success_threshold": 0}, "success_threshold"),
        ({"success_threshold": 2}, "success_threshold"),
        ({"probe_timeout_s": 0.0}, "probe_timeout_s"),
        ({"counted_kinds": frozenset({"cancelled"})}, "counted_kinds"),
        ({"counted_kinds": frozenset({"outage"})}, "counted_kinds"),
        ({"counted_kinds": "server_error"}, "counted_kinds"),
    ],
)
def test_invalid_settings_raise_config_error_naming_the_field(
    changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as info:
        BreakerSettings(**changes)
    assert info.value.where == f"breaker.{field}"


def test_minimum_calls_may_exceed_nothing_in_a_time_window() -> None:
    s = BreakerSettings(window_kind=WindowKind.TIME, window_calls=5, minimum_calls=50)
    assert s.minimum_calls == 50


def test_success_threshold_up_to_the_probe_count_is_valid() -> None:
    s = BreakerSettings(half_open_max_probes=3, success_threshold=3)
    assert s.success_threshold == 3


def test_derive_validates_again() -> None:
    with pytest.raises(ConfigError, match="half_open_max_probes"):
        BreakerSettings().derive(half_open_max_probes=0)


def test_settings_are_frozen() -> None:
    with pytest.raises(AttributeError):
        BreakerSettings().open_duration_s = 1.0  # type: ignore[misc]


def test_the_time_window_has_ten_buckets() -> None:
    assert BreakerSettings(window_s=30.0).bucket_s == 3.0
