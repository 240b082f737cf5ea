"""The shared retry budget: the in-process budget's rule, counted fleet-wide."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from backstay.policy.budget import BudgetSettings, RetryBudget
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.budget import RedisRetryBudget

SETTINGS = BudgetSettings(ratio=0.5, min_retries_per_s=0.0, window_s=60.0)
Budget = RedisRetryBudget | RetryBudget
Maker = Callable[[], Budget]


@pytest.fixture(params=["memory", "redis"])
def make(request: pytest.FixtureRequest) -> Iterator[Maker]:
    if request.param == "memory":
        budget = RetryBudget("b", settings=SETTINGS)
        yield lambda: budget
        return
    location: StoreLocation = request.getfixturevalue("redis_location")
    conns: list[RedisConnection] = []

    def shared() -> Budget:
        conns.append(RedisConnection(location))
        return RedisRetryBudget("b", conns[-1], settings=SETTINGS)

    yield shared
    for conn in conns:
        conn.close()


def test_retries_are_at_most_the_ratio_of_calls_across_handles(make: Maker) -> None:
    one, two = make(), make()
    for _ in range(2):
        one.record_call()
        two.record_call()
    assert [one.try_spend_retry(), two.try_spend_retry()] == [True, True]
    assert one.try_spend_retry() is False
    assert two.try_spend_retry() is False


def test_no_calls_and_no_floor_allow_no_retry(make: Maker) -> None:
    assert make().try_spend_retry() is False
