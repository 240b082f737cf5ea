"""RedisSpendLedger beyond the shared contract (tests/store/test_spend_ledger.py): its
running sums agree with the SQLite ledger's rows, and are rebuilt from its own rows."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store import test_spend_ledger as contract

from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.policy.spend import BATCH_SCOPE, ScopeKind, Spend, SpendScope
from backstay.store.location import StoreLocation
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.spend import RedisSpendLedger
from backstay.store.sqlite.spend import SQLiteSpendLedger


@pytest.fixture
def open_ledger(redis_location: StoreLocation) -> Iterator[contract.Opener]:
    """Redis ledgers on the test's namespace (the cluster tests run the contract with it)."""
    yield from contract.redis_opener(redis_location)


def _scopes(ops: list[str]) -> list[SpendScope]:
    tenants = [SpendScope(kind=ScopeKind.TENANT, name=t) for t in ("acme", "globex")]
    tasks = [SpendScope(kind=ScopeKind.TASK, name=op) for op in ops]
    return [BATCH_SCOPE, *tenants, *tasks]


def _same_changes(ledgers: list[SpendLedger], ops: list[str], seed: int) -> None:
    """The same seeded reservations, settlements, releases and recoveries on each ledger."""
    rng = random.Random(seed)
    numbers = dict.fromkeys(ops, 0)
    for _ in range(200):
        op = rng.choice(ops)
        step = rng.random()
        if step < 0.5:
            numbers[op] += 1
            attempt = AttemptSpend(
                attempt_id=f"{op}/{numbers[op]}",
                operation_id=op,
                tenant=None if op.endswith("0") else ("acme", "globex")[len(op) % 2],
                adapter="anthropic-api",
                model=rng.choice(["m", "n"]),
                task_budget=None,
                estimate=Spend(usd=rng.choice([0.1, 0.2, 0.3, 0.01]), tokens=rng.randint(1, 99)),
            )
            results = {ledger.reserve(attempt, at=contract.AT) is None for ledger in ledgers}
            assert results == {True}
        elif step < 0.8 and numbers[op]:
            used = rng.randint(0, 50)
            usd = rng.choice([0.07, 0.1, 0.003])
            for ledger in ledgers:
                ledger.settle(
                    f"{op}/{numbers[op]}",
                    Spend(usd=usd, tokens=used),
                    prompt_tokens=used // 2,
                    output_tokens=used - used // 2,
                    reported_usd=None if used % 3 == 0 else usd,
                    at=contract.AT,
                )
        elif step < 0.95 and numbers[op]:
            for ledger in ledgers:
                ledger.release(f"{op}/{numbers[op]}")
        else:
            counts = {ledger.settle_open(op, at=contract.AT) for ledger in ledgers}
            assert len(counts) == 1


def test_the_running_sums_agree_with_the_sqlite_ledgers_rows(
    redis_location: StoreLocation, tmp_path: Path
) -> None:
    ops = [f"wf:t{i}:run_01" for i in range(6)]
    conn = RedisConnection(redis_location)
    try:
        with SQLiteSpendLedger(tmp_path) as sqlite:
            redis_ledger = RedisSpendLedger(conn)
            _same_changes([sqlite, redis_ledger], ops, seed=12)
            for scope in _scopes(ops):
                want, got = sqlite.totals(scope), redis_ledger.totals(scope)
                assert (got.spent.tokens, got.reserved.tokens) == (
                    want.spent.tokens,
                    want.reserved.tokens,
                )
                assert got.spent.usd == pytest.approx(want.spent.usd, abs=1e-12)
                assert got.reserved.usd == pytest.approx(want.reserved.usd, abs=1e-12)
            for model in ("m", "n"):
                want_use = sqlite.earlier("anthropic-api", model)
                got_use = redis_ledger.earlier("anthropic-api", model)
                assert want_use is not None
                assert got_use is not None
                assert (got_use.prompt_tokens, got_use.output_tokens) == pytest.approx(
                    (want_use.prompt_tokens, want_use.output_tokens)
                )
                assert got_use.usd == pytest.approx(want_use.usd)
            assert [t.scope for t in redis_ledger.overview()] == [
                t.scope for t in sqlite.overview()
            ]
    finally:
        conn.close()


def test_a_namespace_written_without_running_sums_gets_them_from_its_rows(
    redis_location: StoreLocation,
) -> None:
    ops = [f"wf:t{i}:run_01" for i in range(4)]
    conn = RedisConnection(redis_location)
    try:
        _same_changes([RedisSpendLedger(conn)], ops, seed=7)
        before = [RedisSpendLedger(conn).totals(scope) for scope in _scopes(ops)]
        conn.client.delete(conn.key("spend", "sums"))  # as an earlier version left it
        after = [RedisSpendLedger(conn).totals(scope) for scope in _scopes(ops)]
        assert after == before
        assert any(t.spent.tokens for t in after)
    finally:
        conn.close()
