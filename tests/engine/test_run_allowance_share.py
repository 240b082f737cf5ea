"""A run's grant (``backstay.engine.run_allowance``): the first share of a shared budget's
room, when a top-up is due and how much it adds (pure); the share and its top-ups
reserved in a real spend ledger, SQLite and redis-server (``AttemptBudget.allowance`` /
``top_up``)."""

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
    allowance_share,
    beyond,
    parse_allowance,
    parse_granted,
    top_up,
    top_up_due,
)
from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError
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
BATCH_TOKENS: Final = 30_000


def _totals(
    scope: SpendScope, budget: SpendBudget, spent: Spend = NONE, reserved: Spend = NONE
) -> ScopeTotals:
    return ScopeTotals(scope=scope, budget=budget, spent=spent, reserved=reserved)


def test_the_first_share_is_a_shared_scopes_room_divided_among_the_attempts() -> None:
    scopes = [_totals(BATCH_SCOPE, SpendBudget(usd=0.9, tokens=12_000), spent=Spend(tokens=3_000))]
    share = allowance_share(scopes, Spend(usd=0.01, tokens=1_000), parallel=3)
    assert share.usd == pytest.approx(0.3)
    assert share.tokens == 3_000


def test_the_first_share_is_never_below_the_estimate_nor_above_the_room() -> None:
    scopes = [_totals(BATCH_SCOPE, SpendBudget(tokens=4_000), reserved=Spend(tokens=2_500))]
    assert allowance_share(scopes, Spend(tokens=1_000), 100) == SpendBudget(tokens=1_000)
    assert allowance_share(scopes, Spend(tokens=2_000), 100) == SpendBudget(tokens=1_500)


def test_a_tasks_own_budget_is_not_divided_and_bounds_the_share() -> None:
    alone = [_totals(TASK, SpendBudget(tokens=6_000))]
    assert allowance_share(alone, Spend(tokens=100), 10) == SpendBudget(tokens=6_000)
    both = [*alone, _totals(TENANT, SpendBudget(tokens=100_000))]
    assert allowance_share(both, Spend(tokens=100), 10) == SpendBudget(tokens=6_000)
    wide = [*alone, _totals(TENANT, SpendBudget(tokens=20_000))]
    assert allowance_share(wide, Spend(tokens=100), 10) == SpendBudget(tokens=2_000)


def test_a_share_among_no_attempts_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="parallel"):
        allowance_share([], Spend(), 0)


def test_a_top_up_is_due_past_half_the_grant_in_a_limited_dimension() -> None:
    granted = SpendBudget(tokens=4_000)
    assert not top_up_due(granted, Spend(usd=9.0, tokens=2_000))
    assert top_up_due(granted, Spend(tokens=2_001))
    assert top_up_due(SpendBudget(usd=0.1), Spend(usd=0.06))
    assert not top_up_due(SpendBudget(), Spend(usd=5.0, tokens=10**9))


def test_beyond_is_what_passes_the_grant_in_its_limited_dimensions() -> None:
    granted = SpendBudget(tokens=1_000)
    assert beyond(granted, Spend(usd=3.0, tokens=999)) == Spend()
    assert beyond(granted, Spend(tokens=1_250)) == Spend(tokens=250)


def test_a_top_up_adds_a_share_of_the_room_left_at_least_the_estimate_or_what_is_wanted() -> None:
    # 30,000 of the batch, 6,000 spent by others, 6,000 reserved by others: 18,000 room;
    # the run holds 6,000 of it: 12,000 left, a third of it is 4,000.
    scopes = [
        _totals(
            BATCH_SCOPE,
            SpendBudget(tokens=BATCH_TOKENS),
            spent=Spend(tokens=6_000),
            reserved=Spend(tokens=6_000),
        )
    ]
    granted = SpendBudget(tokens=6_000)
    raised = top_up(scopes, granted, estimate=Spend(tokens=1_000), parallel=3)
    assert raised == SpendBudget(tokens=10_000)
    wanting = top_up(
        scopes, granted, estimate=Spend(tokens=1_000), parallel=3, wanted=Spend(tokens=5_000)
    )
    assert wanting == SpendBudget(tokens=11_000)
    # Never past the room.
    assert top_up(scopes, granted, estimate=Spend(tokens=50_000), parallel=3) == SpendBudget(
        tokens=18_000
    )


def test_with_no_room_left_a_top_up_keeps_the_grant() -> None:
    scopes = [_totals(BATCH_SCOPE, SpendBudget(tokens=8_000), reserved=Spend(tokens=5_000))]
    granted = SpendBudget(tokens=3_000)
    assert top_up(scopes, granted, estimate=Spend(tokens=900), parallel=2) == granted
    over = [_totals(BATCH_SCOPE, SpendBudget(tokens=8_000), spent=Spend(tokens=9_000))]
    assert top_up(over, granted, estimate=Spend(tokens=900), parallel=2) == granted


@pytest.mark.parametrize("data", [None, [1], {"tokens": -1}, {"coins": 3}])
def test_a_wrong_grant_is_a_config_error_naming_it(data: object) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_granted(data)
    assert raised.value.where == "budget.granted"


@pytest.fixture(params=["sqlite", "redis"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SpendLedger]:
    """A batch's spend ledger with a batch budget of ``BATCH_TOKENS``: in its SQLite state
    directory, or on redis-server."""
    location = StoreLocation.sqlite(tmp_path)
    if request.param == "redis":
        location = request.getfixturevalue("redis_location")
    bundle = open_stores(location, state_dir=tmp_path)
    try:
        bundle.spend.set_budget(
            BATCH_SCOPE, SpendBudget(tokens=BATCH_TOKENS), at=_dt.datetime.now(_dt.UTC)
        )
        yield bundle.spend
    finally:
        bundle.close()


def _spec(tmp_path: Path, task_id: str) -> TaskSpec:
    return TaskSpec(
        workflow_id="share",
        task_id=task_id,
        adapter="claude-code",
        model="claude-haiku-4-5",
        workspace=tmp_path,
        timeout_s=60.0,
        prompt="hi",
    )


def _state(granted: SpendBudget, used: int, wanted: int = 0) -> dict[str, Any]:
    return {
        "granted": granted.to_dict(),
        "used": Spend(tokens=used).to_dict(),
        "in_flight": Spend().to_dict(),
        "wanted": Spend(tokens=wanted).to_dict(),
    }


def test_three_runs_under_one_batch_budget_each_hold_a_share_not_the_whole_room(
    tmp_path: Path, ledger: SpendLedger
) -> None:
    gate, adapter = BudgetGate(ledger, clock=SYSTEM_CLOCK), ClaudeCodeAdapter()
    specs = [_spec(tmp_path, f"t{i}") for i in range(3)]
    for spec in specs:
        assert gate.reserve(spec, adapter, 1) is None
    grants = []
    for spec in specs:
        sent = AttemptBudget(gate, spec, adapter, 1).allowance(parallel=3)
        assert sent is not None
        grants.append(parse_granted(sent["granted"]).tokens)
    # Each got a third of the room it saw; all three hold reservations at once, and the
    # batch's room is not all held.
    assert grants[0] is not None
    assert grants[0] < BATCH_TOKENS / 3 + 1
    assert all(g is not None and g >= gate.held(specs[0], 1).tokens for g in grants)
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == sum(g or 0 for g in grants)
    assert ledger.totals(BATCH_SCOPE).reserved.tokens < BATCH_TOKENS


def test_a_top_up_reserves_more_and_stops_at_the_room(tmp_path: Path, ledger: SpendLedger) -> None:
    gate, adapter = BudgetGate(ledger, clock=SYSTEM_CLOCK), ClaudeCodeAdapter()
    spec = _spec(tmp_path, "t0")
    assert gate.reserve(spec, adapter, 1) is None
    budget = AttemptBudget(gate, spec, adapter, 1)
    sent = budget.allowance(parallel=3)
    assert sent is not None
    granted = parse_granted(sent["granted"])
    assert granted == SpendBudget(tokens=BATCH_TOKENS // 3)
    # Not past half: nothing to do.
    assert budget.top_up(_state(granted, used=granted.tokens // 2 if granted.tokens else 0)) is None
    raised_at = 0
    for _ in range(40):  # bounded: each top-up takes a third of what is left
        found = budget.top_up(_state(granted, used=granted.tokens or 0))
        assert found is not None
        after = parse_granted(found["granted"])
        assert after.tokens is not None
        assert granted.tokens is not None
        assert after.tokens >= granted.tokens  # never lowered
        assert ledger.totals(BATCH_SCOPE).reserved.tokens == after.tokens
        if after == granted:
            break
        raised_at += 1
        granted = after
    # Raised while there was room, then the grant stays at the whole room, and the totals
    # the gateway gets are fresh.
    assert raised_at >= 2
    assert granted == SpendBudget(tokens=BATCH_TOKENS)
    assert parse_allowance(found["allowance"])[-1].reserved == Spend()
    # Settling charges what the run used in place of the grant.
    gate.settle(spec, adapter, 1, Usage(input_tokens=2_000))
    assert ledger.totals(BATCH_SCOPE).reserved.tokens == 0
    assert ledger.totals(BATCH_SCOPE).spent.tokens == 2_000


def test_a_waiting_request_gets_at_least_what_it_wants(tmp_path: Path, ledger: SpendLedger) -> None:
    gate, adapter = BudgetGate(ledger, clock=SYSTEM_CLOCK), ClaudeCodeAdapter()
    spec = _spec(tmp_path, "t0")
    assert gate.reserve(spec, adapter, 1) is None
    budget = AttemptBudget(gate, spec, adapter, 1)
    sent = budget.allowance(parallel=30)
    assert sent is not None
    granted = parse_granted(sent["granted"])
    found = budget.top_up(_state(granted, used=0, wanted=9_000))
    assert found is not None
    assert parse_granted(found["granted"]).tokens == (granted.tokens or 0) + 9_000


class _Racing:
    """A spend ledger where, once ``armed``, another runner reserves, just before each
    reservation of the attempt's (but an empty one), all of the batch's room but one token
    less than it asks."""

    def __init__(self, ledger: SpendLedger) -> None:
        self._ledger = ledger
        self.armed = False
        self.raced = 0
        self.own = 0  # the attempt's reservation as it stands

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)

    def reserve(self, attempt: AttemptSpend, *, at: _dt.datetime) -> SpendRefusal | None:
        if self.armed and attempt.estimate.tokens > 0:
            self.raced += 1
            others = self._ledger.totals(BATCH_SCOPE).committed.tokens - self.own
            step = BATCH_TOKENS - others - attempt.estimate.tokens + 1
            if step > 0:
                other = dataclasses.replace(
                    attempt,
                    attempt_id=f"other-{self.raced}",
                    operation_id=f"other:{self.raced}",
                    estimate=Spend(tokens=step),
                )
                assert self._ledger.reserve(other, at=at) is None
        refusal = self._ledger.reserve(attempt, at=at)
        self.own = 0 if refusal is not None else attempt.estimate.tokens
        return refusal


def test_a_top_up_raced_every_time_keeps_an_empty_reservation_to_settle(
    tmp_path: Path, ledger: SpendLedger
) -> None:
    racing = _Racing(ledger)
    gate, adapter = BudgetGate(racing, clock=SYSTEM_CLOCK), ClaudeCodeAdapter()
    spec = _spec(tmp_path, "t0")
    assert gate.reserve(spec, adapter, 1) is None
    budget = AttemptBudget(gate, spec, adapter, 1)
    sent = budget.allowance(parallel=3)
    assert sent is not None
    granted = parse_granted(sent["granted"])
    racing.armed = True

    assert budget.top_up(_state(granted, used=granted.tokens or 0)) is None

    # Each try was refused, and so was holding the grant as before: the attempt keeps an
    # empty reservation (the others hold the whole budget), which settling still charges.
    assert racing.raced == ALLOWANCE_TRIES + 1
    task = SpendScope(kind=ScopeKind.TASK, name=spec.operation_id)
    assert ledger.totals(task).reserved == Spend()
    racing.armed = False
    gate.settle(spec, adapter, 1, Usage(input_tokens=700))
    assert ledger.totals(BATCH_SCOPE).spent.tokens == 700
