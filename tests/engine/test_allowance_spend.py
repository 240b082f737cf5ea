"""A run's requests held to its grant by a gateway without a spend ledger
(``backstay.engine.allowance_spend.AllowanceSpend``, made by ``SharedBudgets(None)``): the
grant binds before the budget does, a short request waits for a raise (bounded) or is
refused naming the budget, a raise is monotonic and idempotent, a wrong raise names
where."""

from __future__ import annotations

import asyncio
from typing import Any, Final

import pytest

from backstay.engine.allowance_spend import AllowanceSpend
from backstay.engine.run_allowance import allowance_json
from backstay.engine.shared_budget import SharedBudgets
from backstay.errors import ConfigError
from backstay.gateway.usage import TokenUsage
from backstay.policy.spend import BATCH_SCOPE, ScopeTotals, Spend, SpendBudget

BATCH: Final = ScopeTotals(
    scope=BATCH_SCOPE,
    budget=SpendBudget(tokens=10_000),
    spent=Spend(tokens=1_000),
    reserved=Spend(tokens=3_000),
)
# A short wait: the tests of waiting stay fast.
WAIT_S: Final = 0.3


def _budget(granted: int, *, wait_s: float = WAIT_S) -> AllowanceSpend:
    data: dict[str, Any] = {
        "operation_id": "w:t0",
        "task_id": "t0",
        "adapter": "claude-code",
        "model": "claude-haiku-4-5",
        "held": {"usd": 0.0, "tokens": 0},
        "allowance": allowance_json([BATCH]),
        "granted": SpendBudget(tokens=granted).to_dict(),
    }
    made = SharedBudgets(None)(data)
    assert isinstance(made, AllowanceSpend)
    made._wait_s = wait_s
    return made


def test_requests_are_held_to_the_grant_before_the_budget() -> None:
    budget = _budget(2_000)
    assert budget.admit(1_500) is None
    budget.charge(TokenUsage(input_tokens=1_500, output_tokens=100))
    budget.release(1_500)
    assert budget.admit(400) is None  # 1,600 used + 400 in flight = the grant
    refused = budget.admit(1)
    assert refused is not None
    # Refused as at the batch's budget: what was not granted counts as reserved.
    assert refused.startswith("budget_exceeded: the batch token budget 10000 has no room")
    assert "(3000 spent, 7000 reserved, estimate 1)" in refused
    assert "task t0 stops here and is paused" in refused
    assert budget.admit(1) == refused  # the first refusal is final


def test_a_short_request_waits_for_a_raise_and_goes_on() -> None:
    budget = _budget(1_000, wait_s=5.0)
    assert budget.admit(800) is None

    async def scenario() -> str | None:
        waiting = asyncio.ensure_future(budget.admit_waiting(500))
        for _ in range(100):  # bounded: until the request says what it wants
            await asyncio.sleep(0.01)
            if budget.state()["wanted"]["tokens"]:
                break
        assert budget.state()["wanted"] == Spend(tokens=300).to_dict()
        assert not waiting.done()
        budget.raise_to([BATCH], SpendBudget(tokens=1_300))
        return await asyncio.wait_for(waiting, 5.0)

    assert asyncio.run(scenario()) is None
    assert budget.state()["in_flight"] == Spend(tokens=1_300).to_dict()
    assert budget.state()["wanted"] == Spend().to_dict()


def test_a_short_request_with_no_raise_is_refused_after_the_wait() -> None:
    budget = _budget(1_000)
    refused = asyncio.run(budget.admit_waiting(1_200))
    assert refused is not None
    assert refused.startswith("budget_exceeded: the batch token budget 10000")
    assert budget.refusal is not None


def test_a_request_the_budget_has_no_room_for_is_refused_without_waiting() -> None:
    budget = _budget(1_000, wait_s=60.0)  # a wait would outlast the test's timeout
    refused = asyncio.run(asyncio.wait_for(budget.admit_waiting(6_001), 5.0))
    assert refused is not None
    assert "(1000 spent, 3000 reserved, estimate 6001)" in refused


def test_a_raise_is_monotonic_and_idempotent_and_takes_fresher_totals() -> None:
    budget = _budget(2_000)
    fresher = ScopeTotals(
        scope=BATCH_SCOPE,
        budget=SpendBudget(tokens=10_000),
        spent=Spend(tokens=1_000),
        reserved=Spend(tokens=8_500),
    )
    raised = {"allowance": allowance_json([fresher]), "granted": {"usd": None, "tokens": 3_000}}
    assert budget.raise_from(raised)["granted"]["tokens"] == 3_000
    assert budget.raise_from(raised)["granted"]["tokens"] == 3_000
    lower = {**raised, "granted": {"usd": None, "tokens": 500}}
    assert budget.raise_from(lower)["granted"]["tokens"] == 3_000
    # The fresher totals bind: 1,000 spent + 8,500 reserved leave 500.
    refused = budget.admit(501)
    assert refused is not None
    assert "(1000 spent, 8500 reserved, estimate 501)" in refused


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"granted": {"tokens": 5}}, "body"),
        ({"allowance": [], "granted": {"tokens": -5}}, "budget.granted"),
        ({"allowance": {}, "granted": {"tokens": 5}}, "budget.allowance"),
    ],
)
def test_a_wrong_raise_is_a_config_error_naming_where(data: Any, where: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _budget(1_000).raise_from(data)
    assert raised.value.where == where


def test_a_run_opened_without_a_grant_may_use_the_whole_room() -> None:
    data: dict[str, Any] = {
        "operation_id": "w:t0",
        "task_id": "t0",
        "adapter": "claude-code",
        "held": {"usd": 0.0, "tokens": 0},
        "allowance": allowance_json([BATCH]),
    }
    budget = SharedBudgets(None)(data)
    assert isinstance(budget, AllowanceSpend)
    assert budget.granted == SpendBudget(tokens=6_000)
