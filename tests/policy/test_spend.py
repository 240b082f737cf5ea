"""The pure accounting of spending budgets: the rule, reservations, the estimate."""

from __future__ import annotations

import threading
from typing import Final

import pytest

from backstay.errors import ConfigError
from backstay.policy.spend import (
    BATCH_SCOPE,
    DEFAULT_OUTPUT_TOKENS,
    EarlierUse,
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendHold,
    SpendLedger,
    SpendRefusal,
    SpendScope,
    check_spend,
    estimate_tokens,
)

TENANT: Final = SpendScope(kind=ScopeKind.TENANT, name="acme")
TASK: Final = SpendScope(kind=ScopeKind.TASK, name="w:t:run_01")


NOTHING: Final = Spend()


def _totals(budget: SpendBudget, spent: Spend, reserved: Spend = NOTHING) -> ScopeTotals:
    return ScopeTotals(scope=BATCH_SCOPE, budget=budget, spent=spent, reserved=reserved)


def test_an_estimate_that_fits_is_admitted() -> None:
    totals = _totals(SpendBudget(usd=0.05), Spend(usd=0.03))
    assert check_spend([totals], Spend(usd=0.02)) is None


def test_an_estimate_past_the_limit_is_refused_naming_the_scope() -> None:
    totals = _totals(SpendBudget(usd=0.05), Spend(usd=0.03))
    refusal = check_spend([totals], Spend(usd=0.021))
    assert isinstance(refusal, SpendRefusal)
    assert refusal.dimension == "usd"
    assert refusal.reason.startswith("budget_exceeded: the batch USD budget $0.05")


def test_a_reached_budget_refuses_even_an_estimate_of_zero() -> None:
    totals = _totals(SpendBudget(tokens=100), Spend(tokens=100))
    refusal = check_spend([totals], Spend())
    assert refusal is not None
    assert refusal.dimension == "tokens"


def test_reservations_count_as_spent_until_settled() -> None:
    totals = _totals(SpendBudget(usd=0.05), Spend(usd=0.01), Spend(usd=0.03))
    assert check_spend([totals], Spend(usd=0.01)) is None
    assert check_spend([totals], Spend(usd=0.0101)) is not None


def test_an_unlimited_budget_admits_anything() -> None:
    assert check_spend([_totals(SpendBudget(), Spend(usd=1e9, tokens=10**12))], Spend()) is None


def test_the_first_scope_without_room_is_named() -> None:
    roomy = ScopeTotals(scope=TASK, budget=SpendBudget(usd=1.0), spent=Spend(), reserved=Spend())
    tight = ScopeTotals(scope=TENANT, budget=SpendBudget(usd=0.01), spent=Spend(), reserved=Spend())
    refusal = check_spend([roomy, tight], Spend(usd=0.02))
    assert refusal is not None
    assert refusal.totals.scope == TENANT
    assert "tenant acme" in refusal.reason


def test_many_small_costs_reaching_the_limit_exactly_are_not_refused_by_rounding() -> None:
    ledger = SpendLedger({BATCH_SCOPE: SpendBudget(usd=0.3)})
    for _ in range(3):
        hold = ledger.reserve([BATCH_SCOPE], Spend(usd=0.1))
        assert isinstance(hold, SpendHold)
        ledger.settle(hold, Spend(usd=0.1))
    assert ledger.totals(BATCH_SCOPE).spent.usd == pytest.approx(0.3)


def test_a_refused_reservation_holds_nothing_in_any_scope() -> None:
    ledger = SpendLedger({TENANT: SpendBudget(usd=0.01)})
    refusal = ledger.reserve([BATCH_SCOPE, TENANT], Spend(usd=0.02))
    assert isinstance(refusal, SpendRefusal)
    assert ledger.totals(BATCH_SCOPE).reserved == Spend()


def test_settling_charges_the_real_figure_instead_of_the_estimate() -> None:
    ledger = SpendLedger({BATCH_SCOPE: SpendBudget(usd=0.05)})
    hold = ledger.reserve([BATCH_SCOPE], Spend(usd=0.04, tokens=900))
    assert isinstance(hold, SpendHold)
    ledger.settle(hold, Spend(usd=0.01, tokens=200))
    totals = ledger.totals(BATCH_SCOPE)
    assert totals.spent == Spend(usd=0.01, tokens=200)
    assert totals.reserved == Spend()
    assert isinstance(ledger.reserve([BATCH_SCOPE], Spend(usd=0.04)), SpendHold)


def test_a_released_reservation_frees_its_room() -> None:
    ledger = SpendLedger({BATCH_SCOPE: SpendBudget(usd=0.05)})
    hold = ledger.reserve([BATCH_SCOPE], Spend(usd=0.05))
    assert isinstance(hold, SpendHold)
    assert isinstance(ledger.reserve([BATCH_SCOPE], Spend(usd=0.01)), SpendRefusal)
    ledger.release(hold)
    assert isinstance(ledger.reserve([BATCH_SCOPE], Spend(usd=0.01)), SpendHold)


def test_a_reservation_is_settled_once() -> None:
    ledger = SpendLedger()
    hold = ledger.reserve([BATCH_SCOPE], Spend(usd=0.01))
    assert isinstance(hold, SpendHold)
    ledger.settle(hold, Spend())
    with pytest.raises(ConfigError, match="not open"):
        ledger.settle(hold, Spend())


def test_concurrent_reservations_never_hold_more_than_the_budget() -> None:
    ledger = SpendLedger({BATCH_SCOPE: SpendBudget(usd=0.05)})
    admitted: list[SpendHold] = []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait(timeout=5)
        for _ in range(10):
            got = ledger.reserve([BATCH_SCOPE], Spend(usd=0.004))
            if isinstance(got, SpendHold):
                admitted.append(got)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(admitted) == 12  # 12 x 0.004 = 0.048; a 13th would pass 0.05
    assert ledger.totals(BATCH_SCOPE).reserved.usd == pytest.approx(0.048)


def test_the_output_estimate_is_the_requests_max_tokens_when_it_has_one() -> None:
    earlier = EarlierUse(prompt_tokens=10, output_tokens=50, usd=None)
    got = estimate_tokens(prompt_tokens=20, max_output_tokens=300, earlier=earlier)
    assert (got.input_tokens, got.output_tokens) == (20, 300)


def test_the_output_estimate_is_the_mean_of_earlier_attempts_without_max_tokens() -> None:
    earlier = EarlierUse(prompt_tokens=900.4, output_tokens=49.6, usd=None)
    got = estimate_tokens(prompt_tokens=20, max_output_tokens=None, earlier=earlier)
    assert (got.input_tokens, got.output_tokens) == (900, 50)


def test_without_max_tokens_or_history_the_output_estimate_is_the_default() -> None:
    got = estimate_tokens(prompt_tokens=7, max_output_tokens=None, earlier=None)
    assert got.tokens == 7 + DEFAULT_OUTPUT_TOKENS


def test_a_budget_is_checked_on_construction() -> None:
    with pytest.raises(ConfigError, match=r"budget\.usd"):
        SpendBudget(usd=-1)
    with pytest.raises(ConfigError, match=r"budget\.tokens"):
        SpendBudget(tokens=1.5)  # type: ignore[arg-type]


def test_a_budget_round_trips_through_its_dict() -> None:
    budget = SpendBudget(usd=0.05, tokens=1000)
    assert SpendBudget.from_dict(budget.to_dict()) == budget
    assert budget.describe() == "$0.05 and 1000 tokens"
