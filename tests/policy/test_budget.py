"""Retry budgets: the ratio and the floor over a sliding window, expiry, threads, settings."""

from __future__ import annotations

import threading

import pytest

from backstay import ConfigError
from backstay.policy.budget import BudgetSettings, BudgetWindow, RetryBudget
from backstay.policy.protocols import RetryBudgetLike
from backstay.testing import FakeClock

RATIO_ONLY = BudgetSettings(ratio=0.2, min_retries_per_s=0.0, window_s=10.0)
FLOOR_ONLY = BudgetSettings(ratio=0.0, min_retries_per_s=0.5, window_s=10.0)


def _spend_all(budget: RetryBudget, limit: int = 10_000) -> int:
    """Spend retries until refused (bounded); how many were granted."""
    granted = 0
    while granted < limit and budget.try_spend_retry():
        granted += 1
    return granted


def _calls(budget: RetryBudget, n: int) -> None:
    for _ in range(n):
        budget.record_call()


def test_retries_are_at_most_the_ratio_of_calls() -> None:
    budget = RetryBudget("api", settings=RATIO_ONLY, clock=FakeClock())
    _calls(budget, 100)
    assert _spend_all(budget) == 20


def test_a_ratio_that_is_not_exact_in_binary_still_grants_the_whole_retry() -> None:
    budget = RetryBudget(
        "api", settings=BudgetSettings(ratio=0.1, min_retries_per_s=0.0), clock=FakeClock()
    )
    _calls(budget, 30)  # 0.1 · 30 == 3.0000000000000004
    assert _spend_all(budget) == 3


def test_the_floor_allows_retries_without_any_call() -> None:
    budget = RetryBudget("api", settings=FLOOR_ONLY, clock=FakeClock())
    assert _spend_all(budget) == 5  # 0.5 per second over 10 s


def test_ratio_and_floor_add_up() -> None:
    settings = BudgetSettings(ratio=0.2, min_retries_per_s=0.3, window_s=10.0)
    budget = RetryBudget("api", settings=settings, clock=FakeClock())
    _calls(budget, 50)
    assert _spend_all(budget) == 13  # 0.2 · 50 + 0.3 · 10


def test_a_refused_retry_is_not_counted() -> None:
    budget = RetryBudget("api", settings=FLOOR_ONLY, clock=FakeClock())
    _spend_all(budget)
    assert budget.try_spend_retry() is False
    assert budget.snapshot().retries == 5


def test_new_calls_earn_new_retries_once_spent() -> None:
    budget = RetryBudget("api", settings=RATIO_ONLY, clock=FakeClock())
    _calls(budget, 5)
    assert _spend_all(budget) == 1
    _calls(budget, 5)
    assert _spend_all(budget) == 1


def test_retries_spent_are_remembered_for_the_whole_window() -> None:
    clock = FakeClock(start=1000.0)
    budget = RetryBudget("api", settings=FLOOR_ONLY, clock=clock)
    _spend_all(budget)
    clock.advance(9.99)
    assert budget.try_spend_retry() is False


def test_retries_spent_are_forgotten_after_the_window() -> None:
    clock = FakeClock(start=1000.0)
    budget = RetryBudget("api", settings=FLOOR_ONLY, clock=clock)
    _spend_all(budget)
    clock.advance(10.0)
    assert _spend_all(budget) == 5


def test_calls_leave_the_window_and_take_their_retries_with_them() -> None:
    clock = FakeClock(start=1000.0)
    budget = RetryBudget("api", settings=RATIO_ONLY, clock=clock)
    _calls(budget, 50)
    clock.advance(10.0)
    assert budget.try_spend_retry() is False


def test_the_window_slides_one_bucket_at_a_time() -> None:
    clock = FakeClock(start=1000.0)
    budget = RetryBudget("api", settings=RATIO_ONLY, clock=clock)
    _calls(budget, 10)  # bucket [1000, 1001)
    clock.advance(5.0)
    _calls(budget, 20)  # bucket [1005, 1006)
    clock.advance(5.0)  # 1010: the first bucket has left, the second has not
    assert budget.snapshot().calls == 20
    assert _spend_all(budget) == 4


def test_a_long_pause_clears_everything() -> None:
    clock = FakeClock(start=1000.0)
    budget = RetryBudget("api", settings=RATIO_ONLY, clock=clock)
    _calls(budget, 100)
    _spend_all(budget)
    clock.advance(1e6)
    snap = budget.snapshot()
    assert (snap.calls, snap.retries) == (0, 0)


def test_the_snapshot_says_how_many_retries_are_available() -> None:
    settings = BudgetSettings(ratio=0.2, min_retries_per_s=0.1, window_s=10.0)
    budget = RetryBudget("api", settings=settings, clock=FakeClock())
    _calls(budget, 10)
    budget.try_spend_retry()
    snap = budget.snapshot()
    assert (snap.calls, snap.retries, snap.limit, snap.available) == (10, 1, 3.0, 2)


def test_the_core_window_reads_no_clock() -> None:
    window = BudgetWindow(FLOOR_ONLY, now=0.0)
    granted = [window.try_spend(now=0.0) for _ in range(6)]
    assert granted == [True] * 5 + [False]
    assert window.try_spend(now=10.0) is True


def test_time_going_backwards_does_not_rewind_the_window() -> None:
    window = BudgetWindow(FLOOR_ONLY, now=100.0)
    for _ in range(5):
        window.try_spend(now=100.0)
    assert window.try_spend(now=50.0) is False


def test_threads_never_spend_more_than_the_budget() -> None:
    budget = RetryBudget("shared", settings=RATIO_ONLY, clock=FakeClock())
    _calls(budget, 1000)  # 200 retries allowed
    start = threading.Barrier(8)
    granted = [0] * 8

    def worker(i: int) -> None:
        start.wait(timeout=10)
        for _ in range(100):
            if budget.try_spend_retry():
                granted[i] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sum(granted) == 200
    assert budget.snapshot().retries == 200


def test_threads_recording_calls_lose_none() -> None:
    budget = RetryBudget("shared", settings=RATIO_ONLY, clock=FakeClock())
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait(timeout=10)
        for _ in range(250):
            budget.record_call()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert budget.snapshot().calls == 2000


def test_a_retry_budget_is_what_the_driver_expects() -> None:
    assert isinstance(RetryBudget("api", clock=FakeClock()), RetryBudgetLike)


def test_the_default_settings_are_a_fifth_of_calls_and_one_retry_a_second() -> None:
    settings = BudgetSettings()
    assert (settings.ratio, settings.min_retries_per_s, settings.window_s) == (0.2, 1.0, 10.0)
    assert settings.floor == 10.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ratio", -0.1),
        ("ratio", float("nan")),
        ("ratio", "0.2"),
        ("min_retries_per_s", -1.0),
        ("min_retries_per_s", float("inf")),
        ("window_s", 0.0),
        ("window_s", True),
        ("buckets", 0),
        ("buckets", 2.5),
        ("buckets", 1_000_000),
    ],
)
def test_bad_settings_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        BudgetSettings(**{field: value})  # type: ignore[arg-type]
    assert info.value.where == f"BudgetSettings.{field}"


def test_a_budget_needs_a_name() -> None:
    with pytest.raises(ConfigError) as info:
        RetryBudget("")
    assert info.value.where == "RetryBudget.name"


def test_a_budget_needs_budget_settings() -> None:
    with pytest.raises(ConfigError) as info:
        RetryBudget("api", settings={"ratio": 0.2})  # type: ignore[arg-type]
    assert info.value.where == "RetryBudget.settings"


def test_settings_fields_may_be_given_as_keywords() -> None:
    budget = RetryBudget("kw", ratio=0.5, window_s=5.0)
    assert (budget.settings.ratio, budget.settings.window_s) == (0.5, 5.0)


def test_an_unknown_keyword_setting_is_named() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) rate"):
        RetryBudget("kw", rate=0.5)
