"""The engine's client-side rate limits and retry budget (``backstay.engine.pacing``), in
this process (a SQLite store), on a fake clock."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import OK, ScriptedAdapter, clock, engine, spec

from backstay.engine import TaskFailed, TaskState
from backstay.engine.pacing import Pacing, engine_pacing, limit_key
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy.budget import BudgetSettings
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.testing import FakeClock, capture_events

DOWN: Final = Failure(code="ERR_HTTP_503_UNAVAILABLE")
# One request a second, no burst beyond one.
ONE_PER_S: Final = RateLimitSettings(requests_per_minute=60.0, burst_s=1.0)


def _dispatch_times(adapter: ScriptedAdapter, fake: FakeClock) -> list[float]:
    times: list[float] = []
    adapter.on_dispatch = lambda call: times.append(fake.monotonic())
    return times


def test_the_most_specific_provider_key_names_the_limiter() -> None:
    keys = {"anthropic", "anthropic/opus", "openai/gpt"}
    found = limit_key(keys, adapter="anthropic-api", provider="anthropic", model="opus")
    assert found == ("anthropic", "opus")
    found = limit_key(keys, adapter="anthropic-api", provider="anthropic", model="haiku")
    assert found == ("anthropic", "haiku")
    assert limit_key(keys, adapter="openai-api", provider="openai", model="gpt") == (
        "openai",
        "gpt",
    )
    assert limit_key(keys, adapter="gemini-api", provider="gemini", model="flash") is None


def test_an_api_task_and_a_cli_session_of_one_provider_get_one_limiter() -> None:
    keys = {"anthropic"}
    api = limit_key(keys, adapter="anthropic-api", provider="anthropic", model="sonnet")
    cli = limit_key(keys, adapter="claude-code", provider="", model="sonnet")
    prefixed = limit_key(keys, adapter="opencode", provider="", model="anthropic/sonnet")
    assert api == cli == prefixed == ("anthropic", "sonnet")


def test_an_adapter_named_limit_paces_its_providers_limiter(tmp_path: Path) -> None:
    stores = open_stores(StoreLocation.sqlite(tmp_path), state_dir=tmp_path)
    try:
        pacing = engine_pacing(
            stores, rate_limits={"claude-code": ONE_PER_S}, retry_budget=None, clock=clock()
        )
    finally:
        stores.close()
    assert pacing is not None
    assert pacing.keys == {"anthropic"}
    found = limit_key(pacing.keys, adapter="anthropic-api", provider="anthropic", model="m")
    assert found == ("anthropic", "m")


def test_tasks_whose_adapter_has_a_rate_limit_start_at_its_rate(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    fake = clock()
    times = _dispatch_times(adapter, fake)
    specs = [spec(tmp_path, f"t{i}") for i in range(5)]
    with engine(tmp_path, adapter, fake=fake, rate_limits={"fake": ONE_PER_S}) as eng:
        summary = eng.run_sync(specs)
    assert summary.by_state[TaskState.SUCCEEDED] == 5
    assert [b - a for a, b in itertools.pairwise(times)] == pytest.approx([1.0] * 4)


def test_a_task_whose_adapter_matches_no_key_is_not_paced(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    fake = clock()
    times = _dispatch_times(adapter, fake)
    specs = [spec(tmp_path, f"t{i}") for i in range(3)]
    with engine(tmp_path, adapter, fake=fake, rate_limits={"other": ONE_PER_S}) as eng:
        eng.run_sync(specs)
    assert len(times) == 3
    assert len(set(times)) == 1
    assert fake.sleeps == []


def test_a_rate_limit_an_attempt_meets_blocks_its_limiter_for_the_wait() -> None:
    fake = clock()
    limiter = RateLimiter.from_settings("fake/m", ONE_PER_S, clock=fake)
    reservation = limiter.reservation(1.0)
    Pacing.attempt_ended(
        limiter, reservation, Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=5.0)
    )
    assert limiter.reserve(1.0) >= 5.0


def test_a_retry_the_budget_refuses_fails_the_task_and_says_why(tmp_path: Path) -> None:
    # No ratio, a floor of one retry in the window: the second retry is refused.
    budget = BudgetSettings(ratio=0.0, min_retries_per_s=0.1, window_s=10.0)
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, OK]})
    with capture_events() as events, engine(tmp_path, adapter, retry_budget=budget) as eng:
        eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    assert (record.state, record.attempts_used) == (TaskState.FAILED, 2)
    assert record.reason.endswith("(retry_budget_exhausted)")
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert [e.reason for e in failed] == [record.reason]


def test_each_task_adds_a_call_whose_ratio_admits_its_retries(tmp_path: Path) -> None:
    budget = BudgetSettings(ratio=1.0, min_retries_per_s=0.0, window_s=60.0)
    adapter = ScriptedAdapter({f"t{i}": [DOWN, OK] for i in range(4)})
    with engine(tmp_path, adapter, retry_budget=budget, concurrency=1) as eng:
        summary = eng.run_sync([spec(tmp_path, f"t{i}") for i in range(4)])
    assert summary.by_state[TaskState.SUCCEEDED] == 4
    assert len(adapter.calls) == 8


def test_a_retry_budget_that_is_not_budget_settings_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="retry_budget"):
        engine(tmp_path, ScriptedAdapter(), retry_budget={"ratio": 0.1})  # type: ignore[arg-type]


def test_the_headers_of_an_attempts_answer_teach_its_limiter_the_providers_rate() -> None:
    fake = clock()
    limiter = RateLimiter.from_settings(
        "fake/m", RateLimitSettings(requests_per_minute=600.0), clock=fake
    )
    reservation = limiter.reservation(1.0)
    headers = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}
    Pacing.attempt_ended(limiter, reservation, None, headers=headers)
    requests = limiter.snapshot().requests
    assert requests is not None
    assert requests.refill_per_s == pytest.approx(1.0)
    assert limiter.reserve(1.0) == pytest.approx(1.0)  # nothing left: the next in a second
