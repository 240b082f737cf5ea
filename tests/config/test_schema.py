"""The JSON Schema says what the loader accepts: the same keys, types and limits."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from backstay import ConfigError
from backstay.config import config_schema
from backstay.config._spec import (
    BUDGET_FIELDS,
    CIRCUIT_BREAKER_FIELDS,
    KIND_OVERRIDE_FIELDS,
    POLICY_FIELDS,
)
from backstay.policy.retry import KindOverride, RetryPolicy

SCHEMA = config_schema()
RETRY = SCHEMA["properties"]["retry"]["properties"]


def test_the_schema_is_draft_2020_12_and_closed() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["additionalProperties"] is False


def test_the_retry_section_lists_every_key() -> None:
    assert list(RETRY) == [
        "default_policy",
        "policies",
        "operation_policies",
        "circuit_breaker",
        "budget",
        "rate_limits",
    ]


def test_a_policy_has_every_retry_policy_field_but_its_name_plus_extends() -> None:
    policy = SCHEMA["$defs"]["policy"]["properties"]
    fields = {f.name for f in dataclasses.fields(RetryPolicy)} - {"name"}
    assert set(policy) == fields | {"extends"}


def test_a_kind_override_has_every_kind_override_field() -> None:
    fields = {f.name for f in dataclasses.fields(KindOverride)}
    assert set(SCHEMA["$defs"]["kind_override"]["properties"]) == fields
    assert set(KIND_OVERRIDE_FIELDS) == fields


def test_the_sections_list_the_documented_keys() -> None:
    assert list(RETRY["circuit_breaker"]["properties"]) == [
        "enabled",
        "failure_threshold",
        "failure_rate_threshold",
        "window_kind",
        "window_calls",
        "window_s",
        "minimum_calls",
        "open_duration_s",
        "half_open_max_probes",
        "success_threshold",
        "probe_timeout_s",
        "counted_kinds",
    ]
    assert list(RETRY["budget"]["properties"]) == [
        "ratio",
        "min_retries_per_s",
        "window_s",
        "buckets",
    ]
    limits = RETRY["rate_limits"]["additionalProperties"]["properties"]
    assert list(limits) == [
        "requests_per_minute",
        "tokens_per_minute",
        "burst_s",
        "max_block_s",
        "probe_timeout_s",
    ]
    assert list(CIRCUIT_BREAKER_FIELDS) == list(RETRY["circuit_breaker"]["properties"])
    assert list(BUDGET_FIELDS) == list(RETRY["budget"]["properties"])


def test_limits_are_rendered() -> None:
    policy = SCHEMA["$defs"]["policy"]["properties"]
    assert policy["max_attempts"] == {
        "description": POLICY_FIELDS["max_attempts"].help,
        "type": "integer",
        "minimum": 1,
    }
    assert policy["deadline_s"]["type"] == ["number", "null"]
    assert policy["backoff"]["enum"] == ["constant", "linear", "exponential"]
    assert RETRY["budget"]["properties"]["window_s"]["exclusiveMinimum"] == 0


@pytest.mark.parametrize(
    ("name", "minimum"),
    [(name, field.minimum) for name, field in POLICY_FIELDS.items() if field.minimum is not None],
)
def test_the_policy_minimums_are_those_retry_policy_enforces(name: str, minimum: float) -> None:
    # The schema's bound and the object's own check must agree: at the bound is fine …
    at_bound: dict[str, Any] = {"initial_delay_s": 0.0, "max_delay_s": 5.0, name: minimum}
    RetryPolicy(**at_bound)
    # … and just below it is refused.
    below = minimum - 1 if POLICY_FIELDS[name].type == "integer" else minimum - 0.01
    with pytest.raises(ConfigError):
        RetryPolicy(**dict[str, Any]({name: below}))


def test_the_jitter_maximum_is_the_one_retry_policy_enforces() -> None:
    RetryPolicy(jitter=1.0)
    with pytest.raises(ConfigError):
        RetryPolicy(jitter=1.01)
