"""A run's allowance (``backstay.engine.run_allowance``): the least room of a task's
budgets, what the attempt reserves for it, the wire form; the allowance's reservation in a
real SQLite spend ledger (``AttemptBudget.allowance``); and the requests a gateway without
a ledger holds against it (``SharedBudgets(None)``)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.usage import Usage
from backstay.clock import SYSTEM_CLOCK
from backstay.engine.budgets import BudgetGate
from backstay.engine.request_budget import ALLOWANCE_TRIES, AttemptBudget
from backstay.engine.run_allowance import (
    allowance_hold,
    allowance_json,
    allowance_room,
    others,
    parse_allowance,
    parse_granted,
)
from backstay.engine.shared_budget import SharedBudgets
from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError
from backstay.gateway.usage import TokenUsage
from backstay.policy.spend import (
    BATCH_SCOPE,
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendRefusal,
    SpendScope,
)
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores

TASK: Final = SpendScope(kind=ScopeKind.TASK, name="w:t0")
TENANT: Final = SpendScope(kind=ScopeKind.TENANT, name="acme")
NONE: Final = Spend()
# More than one attempt's estimate of a short prompt (about 1,025 tokens): an allowance.
ESTIMATE_AT_MOST: Final = 2_000


def _totals(
    scope: SpendScope, budget: SpendBudget, spent: Spend = NONE, reserved: Spend = NONE
) -> ScopeTotals:
    return ScopeTotals(scope=scope, budget=budget, spent=spent, reserved=reserved)


def test_the_room_is_the_least_of_the_scopes_in_each_dimension() -> None:
    scopes = [
        _totals(TASK, SpendBudget(tokens=10_000), spent=Spend(tokens=2_000)),
        _totals(TENANT, SpendBudget(usd=1.0), spent=Spend(usd=0.25), reserved=Spend(usd=0.5)),
        _totals(BATCH_SCOPE, SpendBudget(usd=2.0, tokens=7_000), reserved=Spend(tokens=1_500)),
    ]
    assert allowance_room(scopes) == SpendBudget(usd=0.25, tokens=5_500)


def test_a_dimension_no_scope_limits_has_no_room_limit_and_room_is_never_negative() -> None:
    over = _totals(TASK, SpendBudget(tokens=100), spent=Spend(tokens=150))
    assert allowance_room([over]) == SpendBudget(usd=None, tokens=0)
    assert allowance_room([]) == SpendBudget()


def test_the_attempts_own_reservation_is_taken_out_and_unlimited_scopes_left_out() -> None:
    held = Spend(usd=0.25, tokens=1_000)
    scopes = [
        _totals(TASK, SpendBudget(tokens=5_000), reserved=Spend(usd=0.25, tokens=1_000)),
        _totals(BATCH_SCOPE, SpendBudget(), reserved=Spend(tokens=9_000)),
        _totals(TENANT, SpendBudget(tokens=8_000), reserved=Spend(usd=0.75, tokens=3_000)),
    ]
    seen = others(scopes, held)
    assert [s.scope for s in seen] == [TASK, TENANT]
    assert [s.reserved for s in seen] == [Spend(), Spend(usd=0.5, tokens=2_000)]
    assert allowance_room(seen) == SpendBudget(tokens=5_000)


def test_the_hold_is_the_room_where_limited_and_the_estimate_elsewhere() -> None:
    estimate = Spend(usd=0.02, tokens=1_100)
    assert allowance_hold(SpendBudget(tokens=5_000), estimate) == Spend(usd=0.02, tokens=5_000)
    assert allowance_hold(SpendBudget(usd=0.5), estimate) == Spend(usd=0.5, tokens=1_100)
    assert allowance_hold(SpendBudget(), estimate) == estimate


def test_the_wire_form_reads_back_as_the_same_totals() -> None:
    scopes = [
        _totals(TASK, SpendBudget(tokens=10), spent=Spend(usd=0.5, tokens=3)),
        _totals(BATCH_SCOPE, SpendBudget(usd=1.5), reserved=Spend(usd=0.25)),
    ]
    assert parse_allowance(allowance_json(scopes)) == tuple(scopes)


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"scopes": []}, "budget.allowance"),
        ([{"scope": "planet"}], "budget.allowance[0].scope"),
        ([{"scope": "task", "name": "t", "budget": {"tokens": 5}, "spent": {}, "x": 1}], "x"),
        (
            [{"scope": "batch", "budget": {"tokens": 5}, "spent": {"tokens": -1}, "reserved": {}}],
            "budget.allowance[0].spent",
        ),
        ([{"scope": "batch", "budget": {"coins": 5}}], "budget.allowance[0].budget"),
    ],
)
def test_a_wrong_allowance_is_a_config_error_naming_where(data: object, where: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_allowance(data)
    assert where in str(raised.value)


def _scopes(sent: dict[str, Any] | None) -> tuple[ScopeTotals, ...]:
    assert sent is not None
    return parse_allowance(sent["allowance"])


def _spec(tmp_path: Path, task_id: str, tokens: int | None = None) -> TaskSpec:
    return TaskSpec(
        workflow_id="allowance",
        task_id=task_id,
        adapter="claude-code",
        model="claude-haiku-4-5",
        workspace=tmp_path,
        timeout_s=60.0,
        prompt="hi",
        budget=None if tokens is None else SpendBudget(tokens=tokens),
    )


@pytest.fixture(params=["sqlite", "redis"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SpendLedger]:
    """A batch's spend ledger with a batch budget of 20,000 tokens: in its SQLite state
    directory, or on redis-server."""
    state = tmp_path / "state"
    state.mkdir()
    location = StoreLocation.sqlite(state)
    if request.param == "redis":
        location = request.getfixturevalue("redis_location")
    bundle = open_stores(location, state_dir=state)
    try:
        bundle.spend.set_budget(
            BATCH_SCOPE, SpendBudget(tokens=20_000), at=_dt.datetime.now(_dt.UTC)
        )
        yield bundle.spend
    finally:
        bundle.close()


def test_the_allowance_is_reserved_in_the_ledger_in_place_of_the_estimate(
    tmp_path: Path, ledger: SpendLedger
) -> None:
    gate = BudgetGate(ledger, clock=SYSTEM_CLOCK)
    adapter = ClaudeCodeAdapter()
    first, second = _spec(tmp_path, "t0", tokens=8_000), _spec(tmp_path, "t1")
    assert gate.reserve(first, adapter, 1) is None
    estimate = gate.held(first, 1)
    assert 0 < estimate.tokens < 8_000
    assert gate.reserve(second, adapter, 1) is None  # another task holds its estimate
    held_by_second = gate.held(second, 1).tokens

    sent = AttemptBudget(gate, first, adapter, 1).allowance()

    assert sent is not None
    scopes = parse_allowance(sent["allowance"])
    assert parse_granted(sent["granted"]) == SpendBudget(tokens=8_000)
    # The task's own budget binds: its whole room is the run's, and reserved for it.
    assert allowance_room(scopes) == SpendBudget(tokens=8_000)
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == 8_000 + held_by_second
    assert [s.reserved.tokens for s in scopes] == [0, held_by_second]
    # Another task fits only beside the allowance, not in the room it holds.
    third = _spec(tmp_path, "t2", tokens=50_000)
    assert gate.reserve(third, adapter, 1) is None
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == 8_000 + 2 * held_by_second
    # Settling charges what the run used in place of the allowance.
    gate.settle(first, adapter, 1, Usage(input_tokens=1_200, output_tokens=300))
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == 2 * held_by_second
    assert ledger.totals(BATCH_SCOPE).spent.tokens == 1_500


def test_a_run_started_beside_another_runs_allowance_gets_the_room_left(
    tmp_path: Path, ledger: SpendLedger
) -> None:
    gate = BudgetGate(ledger, clock=SYSTEM_CLOCK)
    adapter = ClaudeCodeAdapter()
    first, second = _spec(tmp_path, "t0"), _spec(tmp_path, "t1")
    assert gate.reserve(first, adapter, 1) is None
    assert gate.reserve(second, adapter, 1) is None
    estimate = gate.held(second, 1)

    one = _scopes(AttemptBudget(gate, first, adapter, 1).allowance())
    two = _scopes(AttemptBudget(gate, second, adapter, 1).allowance())

    # The batch's budget binds both: the first run takes all but the second's estimate.
    assert allowance_room(one) == SpendBudget(tokens=20_000 - estimate.tokens)
    assert allowance_room(two) == SpendBudget(tokens=estimate.tokens)
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == 20_000


def test_a_task_under_no_budget_gets_no_allowance_and_keeps_its_estimate(
    tmp_path: Path,
) -> None:
    bundle = open_stores(StoreLocation.sqlite(tmp_path), state_dir=tmp_path)
    try:
        gate = BudgetGate(bundle.spend, clock=SYSTEM_CLOCK)
        spec, adapter = _spec(tmp_path, "t0"), ClaudeCodeAdapter()
        assert gate.reserve(spec, adapter, 1) is None
        estimate = gate.held(spec, 1)
        assert AttemptBudget(gate, spec, adapter, 1).allowance() is None
        assert bundle.spend.totals(BATCH_SCOPE).reserved == estimate
    finally:
        bundle.close()


class _Racing:
    """A spend ledger where another runner reserves ``step`` tokens for a task of its own
    just before each of the first ``races`` reservations of an allowance (more than the
    attempt's estimate) is made."""

    def __init__(self, ledger: SpendLedger, step: int, races: int) -> None:
        self._ledger = ledger
        self._step = step
        self._races = races
        self.raced = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None:
        if attempt.estimate.tokens > ESTIMATE_AT_MOST and self.raced < self._races:
            self.raced += 1
            other = dataclasses.replace(
                attempt,
                attempt_id=f"other-{self.raced}",
                operation_id=f"other:{self.raced}",
                task_budget=None,
                estimate=Spend(tokens=self._step),
            )
            assert self._ledger.reserve(other, at=at) is None
        return self._ledger.reserve(attempt, at=at)


def test_an_allowance_refused_by_a_race_is_read_again_and_reserved_smaller(
    tmp_path: Path, ledger: SpendLedger
) -> None:
    racing = _Racing(ledger, step=3_000, races=1)
    gate = BudgetGate(racing, clock=SYSTEM_CLOCK)
    spec, adapter = _spec(tmp_path, "t0"), ClaudeCodeAdapter()
    assert gate.reserve(spec, adapter, 1) is None
    budget = AttemptBudget(gate, spec, adapter, 1)

    scopes = _scopes(budget.allowance())

    assert racing.raced == 1
    assert allowance_room(scopes) == SpendBudget(tokens=17_000)
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == 20_000


def test_an_allowance_raced_every_time_keeps_an_empty_reservation_to_settle(
    tmp_path: Path, ledger: SpendLedger
) -> None:
    racing = _Racing(ledger, step=1_000, races=ALLOWANCE_TRIES)
    gate = BudgetGate(racing, clock=SYSTEM_CLOCK)
    spec, adapter = _spec(tmp_path, "t0"), ClaudeCodeAdapter()
    assert gate.reserve(spec, adapter, 1) is None
    budget = AttemptBudget(gate, spec, adapter, 1)

    scopes = _scopes(budget.allowance())

    assert racing.raced == ALLOWANCE_TRIES
    # The run is told the room as it stands, none of it held for it; its attempt still
    # has a reservation, which settling charges.
    assert allowance_room(scopes) == SpendBudget(tokens=20_000 - ALLOWANCE_TRIES * 1_000)
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == ALLOWANCE_TRIES * 1_000
    assert gate.settle(spec, adapter, 1, Usage(input_tokens=700)).tokens == 700
    assert ledger.totals(BATCH_SCOPE).spent.tokens == 700


def _budget_object(allowance: list[dict[str, object]] | None) -> dict[str, object]:
    data: dict[str, object] = {
        "operation_id": "w:t0",
        "task_id": "t0",
        "adapter": "claude-code",
        "model": "claude-haiku-4-5",
        "held": {"usd": 0.0, "tokens": 1_000},
    }
    if allowance is not None:
        data["allowance"] = allowance
    return data


def test_without_a_ledger_a_runs_requests_are_held_to_its_allowance() -> None:
    allowance = allowance_json([_totals(TASK, SpendBudget(tokens=3_000), spent=Spend(tokens=500))])
    budget = SharedBudgets(None)(_budget_object(allowance))
    assert budget is not None
    assert budget.admit(1_000) is None
    budget.charge(TokenUsage(input_tokens=1_000, output_tokens=200))
    budget.release(1_000)
    assert budget.admit(1_000) is None  # 500 + 1,200 + 1,000 ≤ 3,000
    assert budget.admit(300) is None  # 500 + 1,200 + 1,000 in flight + 300 = 3,000
    refused = budget.admit(1)
    assert refused is not None
    assert refused.startswith("budget_exceeded: the task w:t0 token budget 3000 has no room")
    assert "task t0 stops here and is paused" in refused
    assert budget.refusal is not None
    assert budget.refusal.totals.spent == Spend(tokens=3_000)


def test_without_a_ledger_a_run_without_an_allowance_is_not_asked() -> None:
    assert SharedBudgets(None)(_budget_object(None)) is None
    assert not SharedBudgets(None).keeps_ledger


def test_a_single_runs_refusal_says_the_run_ends_not_that_a_task_is_paused() -> None:
    allowance = allowance_json([_totals(TASK, SpendBudget(tokens=1_000))])
    budget = SharedBudgets(None)({**_budget_object(allowance), "stop": "ended"})
    assert budget is not None
    refused = budget.admit(2_000)
    assert refused is not None
    assert refused.endswith("; the run stops here")
    assert "paused" not in refused


def test_an_unknown_stop_is_a_config_error_naming_it() -> None:
    allowance = allowance_json([_totals(TASK, SpendBudget(tokens=1_000))])
    with pytest.raises(ConfigError, match="paused, ended") as raised:
        SharedBudgets(None)({**_budget_object(allowance), "stop": "later"})
    assert raised.value.where == "budget.stop"
