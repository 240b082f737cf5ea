"""``backstay.cli._gateway_spend``: the gateway's requests as rows of a real SQLite gateway
ledger beside a state directory's (two connections, as two gateway processes, holding one
budget), a ``backstay run``'s registration held there with what its earlier attempts
spent, and the ``--price`` values."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Final

import pytest

from backstay.adapters.request_spend import RequestSpend
from backstay.cli._gateway_spend import (
    GATEWAY_LEDGER,
    RunLedgerBudgets,
    price_pairs,
    table_price,
)
from backstay.engine.shared_budget import SharedBudgets
from backstay.errors import ConfigError
from backstay.gateway.routes import Route
from backstay.gateway.spending import RUN_IDLE_S, HeldRequests, RequestHold
from backstay.gateway.usage import TokenUsage
from backstay.policy.spend import ScopeKind, Spend, SpendBudget, SpendScope
from backstay.store.sqlite.gateway_spend import SQLiteGatewayLedger
from backstay.store.sqlite.spend import SQLiteSpendLedger

ROUTE: Final = Route(provider="anthropic", model="claude-sonnet-4-5", endpoint="/v1/messages")


def _ledger(state: Path) -> SQLiteGatewayLedger:
    return SQLiteGatewayLedger(state, file_name=f"{GATEWAY_LEDGER}.sqlite")


def test_two_connections_to_one_file_hold_one_budget(tmp_path: Path) -> None:
    first, second = _ledger(tmp_path), _ledger(tmp_path)
    try:
        budget = SpendBudget(tokens=100)
        at = {"now": 0.0, "until": None}
        assert first.reserve("a", "gateway", budget, Spend(tokens=60), **at) is None
        refused = second.reserve("b", "gateway", budget, Spend(tokens=60), **at)
        assert refused is not None
        assert refused.totals.reserved.tokens == 60
        first.settle("a", Spend(tokens=20), scope="gateway", prompt_tokens=15, output_tokens=5)
        assert second.reserve("b", "gateway", budget, Spend(tokens=60), **at) is None
        # The batch scope of the gateway's own ledger: every request of every gateway.
        total = second.overview()[0]
        assert total.scope == SpendScope(kind=ScopeKind.BATCH)
        assert (total.spent.tokens, total.reserved.tokens) == (20, 60)
    finally:
        first.close()
        second.close()
    assert (tmp_path / "gateway-spend.sqlite").is_file()
    assert not (tmp_path / "state.sqlite").exists()  # the batch's ledger is not touched


def _registration(spent: int, **extra: Any) -> dict[str, Any]:
    """A ``backstay run``'s registration (``_RunRequests.shared`` and ``allowance``)."""
    scope = {
        "scope": "task",
        "name": "run",
        "budget": {"usd": None, "tokens": 1000},
        "spent": {"usd": 0.0, "tokens": spent},
        "reserved": {"usd": 0.0, "tokens": 0},
    }
    return {
        "operation_id": "run",
        "task_id": "run",
        "tenant": None,
        "task_budget": {"usd": None, "tokens": 1000},
        "held": {"usd": 0.0, "tokens": 100},
        "adapter": "claude-code",
        "model": "claude-sonnet-4-5",
        "stop": "ended",
        "allowance": [scope],
        "granted": {"usd": None, "tokens": 1000 - spent},
        **extra,
    }


def test_a_run_is_held_in_the_ledger_with_what_its_earlier_attempts_spent(
    tmp_path: Path,
) -> None:
    ledger, batch = _ledger(tmp_path), SQLiteSpendLedger(tmp_path)
    try:
        budgets = RunLedgerBudgets(SharedBudgets(batch), ledger)
        run = budgets(_registration(700))
        assert isinstance(run, HeldRequests)
        held = asyncio.run(run.hold(ROUTE, 200))
        assert isinstance(held, RequestHold)
        held.add(TokenUsage(input_tokens=220, output_tokens=30))
        held.settle()
        # 700 earlier + 250 now: a request of 100 has no room left in 1000.
        refused = asyncio.run(run.hold(ROUTE, 100))
        again = asyncio.run(run.hold(ROUTE, 1))
        kept = ledger.overview()[0]
    finally:
        ledger.close()
        batch.close()
    assert isinstance(refused, str)
    assert refused.startswith("budget_exceeded: the task run token budget 1000 has no room")
    assert refused.endswith("the run stops here")
    assert "950 spent" in refused
    assert again == refused  # the first refusal is kept: every later request refused
    assert run.refusal is not None
    assert run.refusal.totals.scope == SpendScope(kind=ScopeKind.TASK, name="run")
    assert (kept.spent.tokens, kept.reserved.tokens) == (950, 0)


def test_a_batchs_run_goes_on_to_the_batchs_ledger(tmp_path: Path) -> None:
    ledger, batch = _ledger(tmp_path), SQLiteSpendLedger(tmp_path)
    try:
        budgets = RunLedgerBudgets(SharedBudgets(batch), ledger)
        shared = _registration(0)
        for key in ("stop", "allowance", "granted"):
            del shared[key]
        assert isinstance(budgets(shared), RequestSpend)
        with pytest.raises(ConfigError) as raised:
            budgets(_registration(0, surprise=1))
    finally:
        ledger.close()
        batch.close()
    assert raised.value.where == "budget.surprise"


def test_prices_are_given_per_million_tokens_and_used_first() -> None:
    prices = price_pairs(["my-model=3,15"])
    price = table_price(prices)
    mine = Route(provider="openai", model="my-model", endpoint="/v1/chat/completions")
    usd = price(mine, TokenUsage(input_tokens=1_000_000, output_tokens=100_000))
    assert usd == pytest.approx(4.5)
    assert price(ROUTE, TokenUsage(input_tokens=1000)) is not None  # the price table's
    for bad in ("my-model", "my-model=3", "=1,2", "m=a,b"):
        with pytest.raises(ConfigError) as raised:
            price_pairs([bad])
        assert raised.value.where == "--price"


def test_a_runs_rows_fold_into_its_scope_which_is_forgotten_once_idle(tmp_path: Path) -> None:
    ledger, batch = _ledger(tmp_path), SQLiteSpendLedger(tmp_path)
    try:
        budgets = RunLedgerBudgets(SharedBudgets(batch), ledger)
        run = budgets(_registration(100))
        assert isinstance(run, HeldRequests)
        for _ in range(5):
            held = asyncio.run(run.hold(ROUTE, 10))
            assert isinstance(held, RequestHold)
            held.add(TokenUsage(input_tokens=12, output_tokens=3))
            held.settle()
        after_run = ledger.counts()
        # Another run starts a day and more after this one's last request: it is forgotten.
        later = budgets(_registration(0))
        assert isinstance(later, HeldRequests)
        later.clock = lambda: time.time() + RUN_IDLE_S + 60
        assert isinstance(asyncio.run(later.hold(ROUTE, 10)), RequestHold)
        names = [t.scope.name for t in ledger.overview()[1:]]
    finally:
        ledger.close()
        batch.close()
    # The run's scope (100 earlier + 5 x 15) and the total, no request row.
    assert after_run == (2, 0)
    assert names == [later.scope()[0]]
