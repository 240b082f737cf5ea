from __future__ import annotations

import pytest

from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.runtime import ExecutionLimits, LimitName
from backstay.runtime.limits import LimitTracker


def _tracker(**limits: float) -> LimitTracker:
    return LimitTracker(ExecutionLimits(**limits), started=100.0)  # type: ignore[arg-type]


def test_a_tool_call_past_the_limit_is_refused_before_it_runs() -> None:
    tracker = _tracker(max_tool_calls=1)
    assert tracker.check_before(100.0, call="tool") is None
    tracker.record_tool_call()
    breach = tracker.check_before(100.0, call="tool")
    assert breach is not None
    assert (breach.limit, breach.allowed, breach.reached) == (LimitName.TOOL_CALLS, 1, 2)


def test_real_token_counts_after_a_call_reach_the_limit() -> None:
    tracker = _tracker(max_tokens=100)
    breach = tracker.record_model_call(
        Usage(input_tokens=80, output_tokens=30), retry=False, now=100.0
    )
    assert breach is not None
    assert breach.limit is LimitName.TOKENS


def test_failed_attempts_count_as_model_calls_and_retries() -> None:
    tracker = _tracker(max_retries=1)
    tracker.record_model_call(Usage(api_calls=1), retry=False, now=100.0)
    tracker.record_model_call(Usage(api_calls=1), retry=True, now=100.0)
    breach = tracker.check_before(100.0, call="model", retry=True)
    assert tracker.model_calls == 2
    assert breach is not None
    assert breach.limit is LimitName.RETRIES


def test_wall_time_is_checked_before_every_call() -> None:
    tracker = _tracker(wall_time_s=5.0)
    breach = tracker.check_before(105.0, call="model")
    assert breach is not None
    assert breach.limit is LimitName.WALL_TIME


def test_cost_reaches_its_cap() -> None:
    tracker = _tracker(max_cost_usd=0.01)
    breach = tracker.record_model_call(Usage(cost_usd=0.02), retry=False, now=100.0)
    assert breach is not None
    assert breach.limit is LimitName.COST


def test_the_first_breach_is_sticky() -> None:
    tracker = _tracker(max_steps=1)
    tracker.record_step()
    first = tracker.check_before(100.0, call="step")
    assert tracker.check_before(100.0, call="tool") is first


def test_a_call_repeated_loop_repeats_times_is_a_loop() -> None:
    tracker = _tracker(loop_repeats=3)
    assert tracker.loop(2) is None
    breach = tracker.loop(3)
    assert breach is not None
    assert breach.limit is LimitName.LOOP


def test_limits_are_checked_on_construction() -> None:
    with pytest.raises(ConfigError, match=r"limits\.max_steps"):
        ExecutionLimits(max_steps=0)
