"""RetryPolicy validation and serialisation, and the pure retry decision."""

from __future__ import annotations

import pytest

from backstay import ConfigError, Failure, FailureKind
from backstay.clock import seeded_unit
from backstay.policy import (
    AGENT_DISPATCH,
    AGGRESSIVE,
    BUILTIN_POLICIES,
    NO_RETRY,
    STANDARD,
    GiveUpReason,
    JitterMode,
    KindOverride,
    RetryPolicy,
    decide,
)

SERVER = Failure(code="ERR_HTTP_503_UNAVAILABLE")


def _decide(policy: RetryPolicy, failure: Failure, attempt: int = 1, **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {"elapsed_s": 0.0, "previous_delay_s": None, "draw": 0.5}
    args.update(kw)
    return decide(policy, failure, attempt=attempt, **args)  # type: ignore[arg-type]


def test_agent_dispatch_waits_2_4_8_then_gives_up() -> None:
    delays = [_decide(AGENT_DISPATCH, SERVER, a) for a in (1, 2, 3, 4)]
    assert [d.delay_s for d in delays[:3]] == [2.0, 4.0, 8.0]
    assert delays[3].retry is False
    assert delays[3].reason == GiveUpReason.ATTEMPTS_EXHAUSTED


def test_built_in_policies_have_their_documented_attempts() -> None:
    assert {n: p.max_attempts for n, p in BUILTIN_POLICIES.items()} == {
        "standard": 3,
        "aggressive": 5,
        "no_retry": 1,
        "agent_dispatch": 4,
        "error_contract": 4,
    }
    assert (STANDARD.initial_delay_s, STANDARD.max_delay_s, STANDARD.jitter) == (0.1, 5.0, 0.1)
    assert (AGGRESSIVE.initial_delay_s, AGGRESSIVE.max_delay_s, AGGRESSIVE.jitter) == (
        0.05,
        30.0,
        0.2,
    )


def test_no_retry_never_retries() -> None:
    assert _decide(NO_RETRY, SERVER).retry is False


@pytest.mark.parametrize(
    "code",
    [
        "ERR_LLM_CONTEXT_LENGTH",
        "ERR_LLM_QUOTA_EXHAUSTED",
        "ERR_HTTP_401_UNAUTHORIZED",
        "ERR_CANCELLED",
    ],
)
def test_non_retryable_failures_give_up_at_once(code: str) -> None:
    assert _decide(AGGRESSIVE, Failure(code=code)).retry is False


def test_unknown_failures_are_retried_once() -> None:
    unknown = Failure(code="ERR_UNKNOWN")
    assert _decide(AGGRESSIVE, unknown, 1).retry is True
    assert _decide(AGGRESSIVE, unknown, 2).retry is False


def test_retry_after_is_a_floor_for_the_delay() -> None:
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=7.0)
    decision = _decide(AGGRESSIVE, limited)
    assert decision.retry is True
    assert 7.0 < decision.delay_s <= 7.1


def test_a_retry_after_beyond_the_cap_gives_up_instead_of_sleeping() -> None:
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=600.0)
    decision = _decide(STANDARD.derive(max_retry_after_s=120.0), limited)
    assert (decision.retry, decision.reason) == (False, GiveUpReason.RETRY_AFTER_TOO_LONG)


def test_a_wait_that_cannot_fit_the_deadline_gives_up() -> None:
    policy = STANDARD.derive(deadline_s=1.0)
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0)
    decision = _decide(policy, limited, elapsed_s=0.2)
    assert (decision.retry, decision.reason) == (False, GiveUpReason.DEADLINE)


def test_never_retry_on_beats_the_kind_default() -> None:
    policy = STANDARD.derive(never_retry_on=frozenset({"ERR_HTTP_503_UNAVAILABLE"}))
    assert _decide(policy, SERVER).retry is False


def test_retry_on_can_retry_a_kind_that_is_not_retryable_by_default() -> None:
    policy = STANDARD.derive(retry_on=frozenset({"invalid_request"}))
    assert _decide(policy, Failure(code="ERR_HTTP_409_CONFLICT")).retry is True
    assert _decide(policy, SERVER).retry is False


def test_per_kind_overrides_replace_delays_and_cap_attempts() -> None:
    policy = RetryPolicy(
        name="p",
        max_attempts=5,
        jitter_mode=JitterMode.NONE,
        per_kind={FailureKind.SERVER_ERROR: KindOverride(max_attempts=2, initial_delay_s=3.0)},
    )
    assert _decide(policy, SERVER, 1).delay_s == 3.0
    assert _decide(policy, SERVER, 2).retry is False


def test_the_same_seed_gives_the_same_delays() -> None:
    policy = STANDARD.derive(seed=42)
    runs = [
        [_decide(policy, SERVER, a, draw=seeded_unit(42, policy.name, a)).delay_s for a in (1, 2)]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


def test_a_policy_round_trips_through_a_dict() -> None:
    assert RetryPolicy.from_dict(STANDARD.to_dict()) == STANDARD


def test_derive_validates_again() -> None:
    with pytest.raises(ConfigError, match="max_attempts: must be >= 1"):
        STANDARD.derive(max_attempts=0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_attempts": 0}, "policy 'x': max_attempts: must be >= 1, got 0"),
        ({"max_attempts": 2.5}, "max_attempts: must be a whole number"),
        ({"initial_delay_s": -1}, "initial_delay_s: must be >= 0"),
        ({"initial_delay_s": 10.0, "max_delay_s": 1.0}, "max_delay_s: must be >= initial_delay_s"),
        ({"multiplier": 0.5}, "multiplier: must be >= 1"),
        ({"jitter": 1.5}, "jitter: is a fraction in \\[0, 1\\]"),
        ({"backoff": "fibonacci"}, "backoff: must be one of constant, linear, exponential"),
        ({"jitter_mode": "equal"}, "jitter_mode: must be one of"),
        ({"retry_on": frozenset({"flaky"})}, "'flaky' is neither a failure kind nor an ERR_"),
        ({"per_kind": {"nope": {}}}, "per_kind.nope: 'nope' is not a failure kind"),
        ({"per_kind": {"timeout": {"retries": 2}}}, "per_kind.timeout: unknown key"),
        ({"deadline_s": float("inf")}, "deadline_s: must be finite"),
        ({"seed": "abc"}, "seed: must be an integer"),
    ],
)
def test_invalid_settings_name_the_field_and_reason(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        RetryPolicy(name="x", **changes)  # type: ignore[arg-type]


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(name="x", max_attempts=-3)


def test_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="unknown key\\(s\\) retries"):
        RetryPolicy.from_dict({"retries": 3}, name="p")
