"""RedisSpendLedger: the SQLite ledger's behaviour tests, run against a real Redis (each
test's ledgers share one namespace, as the SQLite ones share one state file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import pytest
from tests.engine import test_spend_ledger as shared

from backstay.engine.spend_ledger import SpendLedger
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.spend import RedisSpendLedger

test_a_reservation_counts_until_it_is_settled_with_the_real_figure = (
    shared.test_a_reservation_counts_until_it_is_settled_with_the_real_figure
)
test_two_runners_on_one_state_file_never_reserve_past_the_budget = (
    shared.test_two_runners_on_one_state_file_never_reserve_past_the_budget
)
test_a_released_reservation_is_gone = shared.test_a_released_reservation_is_gone
test_open_reservations_of_a_dead_runner_are_charged_at_their_estimates = (
    shared.test_open_reservations_of_a_dead_runner_are_charged_at_their_estimates
)
test_a_tenant_budget_counts_only_that_tenants_attempts = (
    shared.test_a_tenant_budget_counts_only_that_tenants_attempts
)
test_a_task_budget_comes_with_the_attempt = shared.test_a_task_budget_comes_with_the_attempt
test_earlier_use_is_the_mean_of_settled_attempts_that_used_tokens = (
    shared.test_earlier_use_is_the_mean_of_settled_attempts_that_used_tokens
)
test_kept_budgets_survive_reopening_and_can_be_removed = (
    shared.test_kept_budgets_survive_reopening_and_can_be_removed
)


class _Opened(RedisSpendLedger):
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(autouse=True)
def _ledgers_on_redis(
    redis_location: StoreLocation, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    conn = RedisConnection(redis_location)

    def opener(path: Path, **_: Any) -> _Opened:
        del path
        return _Opened(conn)

    monkeypatch.setattr(shared, "SQLiteSpendLedger", opener)
    yield
    conn.close()


def test_it_is_a_spend_ledger(redis_location: StoreLocation) -> None:
    conn = RedisConnection(redis_location)
    try:
        assert isinstance(RedisSpendLedger(conn), SpendLedger)
    finally:
        conn.close()
