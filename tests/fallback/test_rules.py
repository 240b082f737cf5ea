"""FallbackRules: the one table of moves, its thresholds and the cooldowns it implies."""

from __future__ import annotations

import datetime as _dt

import pytest

from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.fallback.rules import DEFAULT_MOVES, FallbackRules, Move
from backstay.taxonomy import FailureKind

NOW = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
RULES = FallbackRules()


def _f(code: str, **kw: object) -> Failure:
    return Failure(code=code, **kw)  # type: ignore[arg-type]


def test_every_kind_has_a_move() -> None:
    assert set(DEFAULT_MOVES) == set(FailureKind)


@pytest.mark.parametrize(
    ("code", "move"),
    [
        ("ERR_HTTP_503_UNAVAILABLE", Move.NEXT),
        ("ERR_READ_TIMEOUT", Move.NEXT),
        ("ERR_CONNECTION_REFUSED", Move.NEXT),
        ("ERR_LLM_QUOTA_EXHAUSTED", Move.NEXT),
        ("ERR_LLM_CONTEXT_LENGTH", Move.LARGER_CONTEXT),
        ("ERR_HTTP_401_UNAUTHORIZED", Move.NEXT_CREDENTIAL),
        ("ERR_HTTP_400_BAD_REQUEST", Move.NEVER),
        ("ERR_LLM_CONTENT_FILTER", Move.NEVER),
        ("ERR_CANCELLED", Move.NEVER),
    ],
)
def test_default_moves_follow_the_documented_table(code: str, move: Move) -> None:
    assert RULES.move_for(_f(code), now=NOW) is move


def test_a_rate_limit_with_a_short_wait_stays() -> None:
    assert RULES.move_for(_f("ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0)) is Move.NEVER


def test_a_rate_limit_without_a_wait_stays() -> None:
    assert RULES.move_for(_f("ERR_HTTP_429_RATE_LIMITED")) is Move.NEVER


def test_a_rate_limit_with_a_long_wait_moves() -> None:
    assert RULES.move_for(_f("ERR_HTTP_429_RATE_LIMITED", retry_after_s=60.0)) is Move.NEXT


def test_the_long_wait_threshold_is_configurable() -> None:
    rules = FallbackRules(long_wait_s=1.0)
    assert rules.move_for(_f("ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0)) is Move.NEXT


def test_a_reset_time_counts_as_the_wait() -> None:
    failure = _f("ERR_HTTP_429_RATE_LIMITED", resets_at=NOW + _dt.timedelta(minutes=5))
    assert RULES.move_for(failure, now=NOW) is Move.NEXT


def test_content_policy_can_be_made_to_move() -> None:
    rules = FallbackRules(moves={"content_policy": "next"})
    assert rules.move_for(_f("ERR_LLM_CONTENT_FILTER")) is Move.NEXT
    assert rules.moves[FailureKind.AUTH] is Move.NEXT_CREDENTIAL  # the rest keep defaults


def test_output_after_the_first_token_never_moves() -> None:
    streamed = _f("ERR_LLM_STREAM_ERROR", details={"stream_interrupted": True})
    assert RULES.move_for(streamed) is Move.NEVER
    assert RULES.move_for(_f("ERR_HTTP_503_UNAVAILABLE"), partial=True) is Move.NEVER


def test_cancelled_cannot_be_made_to_move() -> None:
    with pytest.raises(ConfigError, match=r"fallback\.moves\.cancelled"):
        FallbackRules(moves={"cancelled": "next"})


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(ConfigError, match="'overload' is not a failure kind"):
        FallbackRules(moves={"overload": "next"})


def test_an_unknown_move_is_named() -> None:
    with pytest.raises(ConfigError, match=r"fallback\.moves\.auth: must be one of"):
        FallbackRules(moves={"auth": "sideways"})


def test_a_long_rate_limit_cools_down_for_its_wait() -> None:
    assert RULES.cooldown_s(_f("ERR_HTTP_429_RATE_LIMITED", retry_after_s=45.0)) == 45.0


def test_a_short_rate_limit_does_not_cool_down() -> None:
    assert RULES.cooldown_s(_f("ERR_HTTP_429_RATE_LIMITED", retry_after_s=3.0)) == 0.0


def test_auth_cools_down_for_the_long_auth_cooldown() -> None:
    assert RULES.cooldown_s(_f("ERR_HTTP_401_UNAUTHORIZED")) == RULES.auth_cooldown_s


def test_a_quota_cools_down_until_its_reset() -> None:
    failure = _f("ERR_LLM_DAILY_QUOTA", resets_at=NOW + _dt.timedelta(hours=2))
    assert RULES.cooldown_s(failure, now=NOW) == 7200.0


def test_a_quota_without_a_reset_uses_the_quota_cooldown() -> None:
    assert RULES.cooldown_s(_f("ERR_LLM_QUOTA_EXHAUSTED")) == RULES.quota_cooldown_s


def test_a_server_error_cools_down_only_for_its_retry_after() -> None:
    assert RULES.cooldown_s(_f("ERR_HTTP_503_UNAVAILABLE")) == 0.0
    assert RULES.cooldown_s(_f("ERR_HTTP_503_UNAVAILABLE", retry_after_s=20.0)) == 20.0


def test_a_context_overflow_never_cools_down() -> None:
    assert RULES.cooldown_s(_f("ERR_LLM_CONTEXT_LENGTH", retry_after_s=20.0)) == 0.0


def test_rules_round_trip_through_plain_data() -> None:
    rules = FallbackRules(moves={"content_policy": "next"}, long_wait_s=3.0)
    assert FallbackRules.from_dict(rules.to_dict()) == rules


def test_a_negative_threshold_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"fallback\.long_wait_s"):
        FallbackRules(long_wait_s=-1.0)
