"""The driver over ``AttemptSpendStore`` (SQLite): an attempt's reservation and charge are
written with its begin and end, and a charge whose end is refused (an operator cancelled
the task meanwhile) is still written, so no reservation stays open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.engine.support import OK, Call, ScriptedAdapter, engine, spec

from backstay.engine import TaskState
from backstay.engine.records import StateChange
from backstay.policy.spend import BATCH_SCOPE, Spend, SpendBudget
from backstay.store.sqlite.tasks import STATE_FILE


def _spend_rows(state: Path) -> list[tuple[str, str, float | None]]:
    conn = sqlite3.connect(state / STATE_FILE)
    try:
        query = "SELECT attempt_id, status, usd FROM backstay_spend ORDER BY attempt_id"
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_each_attempt_is_charged_in_the_transaction_that_ends_it(tmp_path: Path) -> None:
    seen: list[tuple[str, TaskState]] = []
    state = tmp_path / "s"

    def during(call: Call) -> None:  # the reservation is there while the attempt runs
        record = eng.store.task(call.operation_id)
        assert record is not None
        seen.append((_spend_rows(state)[-1][1], record.state))

    adapter = ScriptedAdapter({f"t{i}": [OK] for i in range(3)}, on_dispatch=during)
    specs = [spec(tmp_path, f"t{i}") for i in range(3)]
    with engine(state, adapter, budget=SpendBudget(usd=10.0), concurrency=1) as eng:
        assert eng.stores.attempt_spend is not None
        summary = eng.run_sync(specs)
        totals = eng.spending()[0]
    assert summary.count(TaskState.SUCCEEDED) == 3
    assert seen == [("reserved", TaskState.RUNNING)] * 3
    assert [row[1] for row in _spend_rows(state)] == ["settled"] * 3
    assert totals.spent.usd is not None
    assert abs(totals.spent.usd - 3 * (OK.cost_usd or 0.0)) < 1e-12
    assert totals.reserved == Spend()


def test_a_charge_whose_end_is_refused_is_written_on_its_own(tmp_path: Path) -> None:
    state = tmp_path / "s"

    def cancel(call: Call) -> None:  # recorded by an operator while the attempt runs
        change = StateChange(state=TaskState.CANCELLED, reason="cancelled", at=eng.clock.now())
        eng.store.cancel(call.operation_id, change)

    adapter = ScriptedAdapter({"t1": [OK]}, on_dispatch=cancel)
    with engine(state, adapter, budget=SpendBudget(usd=10.0)) as eng:
        eng.run_sync([spec(tmp_path, "t1")])
        tasks = eng.store.tasks()
        totals = eng.spending()[0]
    assert [t.state for t in tasks] == [TaskState.CANCELLED]
    assert [row[1] for row in _spend_rows(state)] == ["settled"]
    assert totals.reserved == Spend()
    assert totals.spent.tokens == OK.tokens_total


def test_the_batch_budget_refuses_an_attempt_before_it_begins(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({f"t{i}": [OK] for i in range(3)})
    specs = [spec(tmp_path, f"t{i}") for i in range(3)]
    state = tmp_path / "s"
    # A first attempt is estimated at about 1,000 tokens (its prompt and the default
    # output): none fits in 500.
    with engine(state, adapter, budget=SpendBudget(tokens=500), concurrency=1) as eng:
        summary = eng.run_sync(specs)
        attempts = eng.store.attempts()
        reserved = eng.spend.totals(BATCH_SCOPE).reserved
    assert summary.budget_paused == 3
    assert attempts == ()
    assert reserved == Spend()
    assert _spend_rows(state) == []
    assert adapter.calls == []
