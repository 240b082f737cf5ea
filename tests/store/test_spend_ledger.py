"""The ``SpendLedger`` contract, one behaviour per test, over every backend: SQLite and
Redis (there is no memory one). ``open_ledger`` opens ledgers on one backing (one state
directory, one Redis namespace): reserving against batch, tenant and task budgets,
settling, releasing, charging a dead runner's reservations, estimating from earlier use,
keeping budgets. The Redis Cluster runs these again (tests/store/redis/test_cluster_spend.py)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Final, Self

import pytest

from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.policy.spend import (
    BATCH_SCOPE,
    ScopeKind,
    Spend,
    SpendBudget,
    SpendScope,
)
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.spend import RedisSpendLedger
from backstay.store.sqlite.spend import SQLiteSpendLedger

AT: Final = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ACME: Final = SpendScope(kind=ScopeKind.TENANT, name="acme")
Opener = Callable[[], AbstractContextManager[SpendLedger]]


class OpenedRedisLedger(RedisSpendLedger):
    """A Redis ledger used as the SQLite one is, in a ``with`` block (the connection is
    the test's)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def redis_opener(location: StoreLocation) -> Iterator[Opener]:
    conn = RedisConnection(location)
    try:
        yield lambda: OpenedRedisLedger(conn)
    finally:
        conn.close()


@pytest.fixture(params=["sqlite", "redis"])
def open_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    if request.param == "sqlite":
        yield lambda: SQLiteSpendLedger(tmp_path)
        return
    yield from redis_opener(request.getfixturevalue("redis_location"))


def test_it_is_a_spend_ledger(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        assert isinstance(ledger, SpendLedger)


def _attempt(
    n: int,
    usd: float = 0.01,
    *,
    op: str = "wf:t:run_01",
    tenant: str | None = None,
    task_budget: SpendBudget | None = None,
) -> AttemptSpend:
    return AttemptSpend(
        attempt_id=f"{op}/{n}",
        operation_id=op,
        tenant=tenant,
        adapter="anthropic-api",
        model="m",
        task_budget=task_budget,
        estimate=Spend(usd=usd, tokens=100),
    )


def test_a_reservation_counts_until_it_is_settled_with_the_real_figure(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        ledger.set_budget(BATCH_SCOPE, SpendBudget(usd=0.05), at=AT)
        assert ledger.reserve(_attempt(1, 0.04), at=AT) is None
        assert ledger.totals(BATCH_SCOPE).reserved == Spend(usd=0.04, tokens=100)
        assert ledger.reserve(_attempt(2, 0.02), at=AT) is not None
        ledger.settle(
            "wf:t:run_01/1",
            Spend(usd=0.01, tokens=30),
            prompt_tokens=20,
            output_tokens=10,
            reported_usd=0.01,
            at=AT,
        )
        totals = ledger.totals(BATCH_SCOPE)
        assert (totals.spent, totals.reserved) == (Spend(usd=0.01, tokens=30), Spend())
        assert ledger.reserve(_attempt(2, 0.02), at=AT) is None


def test_two_runners_on_one_state_file_never_reserve_past_the_budget(open_ledger: Opener) -> None:
    with open_ledger() as setup:
        setup.set_budget(BATCH_SCOPE, SpendBudget(usd=0.05), at=AT)
    admitted: list[str] = []
    start = threading.Barrier(2)

    def runner(name: str) -> None:
        with open_ledger() as ledger:
            start.wait(timeout=5)
            for i in range(10):
                attempt = _attempt(i, 0.004, op=f"wf:{name}{i}:run_01")
                if ledger.reserve(attempt, at=AT) is None:
                    admitted.append(attempt.attempt_id)

    threads = [threading.Thread(target=runner, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(admitted) == 12  # 12 x 0.004 = 0.048
    with open_ledger() as ledger:
        assert ledger.totals(BATCH_SCOPE).reserved.usd == pytest.approx(0.048)


def test_a_released_reservation_is_gone(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        ledger.reserve(_attempt(1), at=AT)
        ledger.release("wf:t:run_01/1")
        assert ledger.totals(BATCH_SCOPE).reserved == Spend()


def test_open_reservations_of_a_dead_runner_are_charged_at_their_estimates(
    open_ledger: Opener,
) -> None:
    with open_ledger() as ledger:
        ledger.reserve(_attempt(1, 0.02), at=AT)
    with open_ledger() as ledger:
        assert ledger.settle_open("wf:t:run_01", at=AT) == 1
        totals = ledger.totals(BATCH_SCOPE)
    assert (totals.spent, totals.reserved) == (Spend(usd=0.02, tokens=100), Spend())


def test_a_tenant_budget_counts_only_that_tenants_attempts(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        ledger.set_budget(ACME, SpendBudget(usd=0.015), at=AT)
        assert ledger.reserve(_attempt(1, op="wf:a:run_01", tenant="acme"), at=AT) is None
        assert ledger.reserve(_attempt(1, op="wf:b:run_01"), at=AT) is None
        refusal = ledger.reserve(_attempt(1, op="wf:c:run_01", tenant="acme"), at=AT)
        assert refusal is not None
        assert refusal.totals.scope == ACME
        assert [t.scope for t in ledger.overview()] == [BATCH_SCOPE, ACME]


def test_a_task_budget_comes_with_the_attempt(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        tight = SpendBudget(tokens=150)
        assert ledger.reserve(_attempt(1, task_budget=tight), at=AT) is None
        refusal = ledger.reserve(_attempt(2, op="wf:t:run_01", task_budget=tight), at=AT)
        assert refusal is not None
        assert refusal.totals.scope.kind is ScopeKind.TASK
        assert ledger.reserve(_attempt(1, op="wf:u:run_01", task_budget=tight), at=AT) is None


def test_earlier_use_is_the_mean_of_settled_attempts_that_used_tokens(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        assert ledger.earlier("anthropic-api", "m") is None
        for n, (prompt, output, usd) in enumerate([(100, 10, 0.01), (300, 30, 0.03)], 1):
            ledger.reserve(_attempt(n), at=AT)
            ledger.settle(
                f"wf:t:run_01/{n}",
                Spend(usd=usd, tokens=prompt + output),
                prompt_tokens=prompt,
                output_tokens=output,
                reported_usd=usd,
                at=AT,
            )
        ledger.reserve(_attempt(3), at=AT)
        ledger.settle(
            "wf:t:run_01/3", Spend(), prompt_tokens=0, output_tokens=0, reported_usd=None, at=AT
        )
        earlier = ledger.earlier("anthropic-api", "m")
    assert earlier is not None
    assert (earlier.prompt_tokens, earlier.output_tokens) == (200.0, 20.0)
    assert earlier.usd == pytest.approx(0.02)


def test_kept_budgets_survive_reopening_and_can_be_removed(open_ledger: Opener) -> None:
    with open_ledger() as ledger:
        ledger.set_budget(ACME, SpendBudget(usd=1.0, tokens=10), at=AT)
    with open_ledger() as ledger:
        assert ledger.budget(ACME) == SpendBudget(usd=1.0, tokens=10)
        ledger.set_budget(ACME, SpendBudget(), at=AT)
        assert ledger.budget(ACME) == SpendBudget()
