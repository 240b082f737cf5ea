"""``SQLiteAttemptSpend``: an attempt's reservation is written in the transaction that
begins it and its settlement in the one that ends it; a refusal or a refused end writes
neither half; the ledger shares the task store's connection, and a runner killed with
SIGKILL at any point leaves every attempt with its spend row in the matching state."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import spec
from tests.store.sqlite import attempt_spend_kill_child as child
from tests.store.sqlite.spend_support import AT, assert_sums_match_recount

from backstay.engine.attempt_spend import Settlement
from backstay.engine.records import AttemptEnd, AttemptOutcome, StateChange
from backstay.engine.spend_ledger import AttemptSpend
from backstay.engine.states import TaskState
from backstay.errors import ConfigError
from backstay.policy.spend import BATCH_SCOPE, Spend, SpendBudget, SpendRefusal
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.store.sqlite.attempt_spend import SQLiteAttemptSpend
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import STATE_FILE, SQLiteTaskStore
from backstay.testing import FakeClock

ROOT: Final = Path(__file__).parents[3]
KILL_WAIT_S: Final = 60.0


def _opened(tmp_path: Path) -> tuple[SQLiteTaskStore, SQLiteSpendLedger, SQLiteAttemptSpend, str]:
    tasks = SQLiteTaskStore(tmp_path / "state")
    ledger = SQLiteSpendLedger(tmp_path / "state", tasks=tasks)
    one = spec(tmp_path, "t1")
    tasks.register(one, at=AT)
    return tasks, ledger, SQLiteAttemptSpend(tasks, ledger), one.operation_id


def _spend(op: str, usd: float = 0.5) -> AttemptSpend:
    return AttemptSpend(
        attempt_id=f"{op}/1",
        operation_id=op,
        tenant=None,
        adapter="fake",
        model="m",
        task_budget=None,
        estimate=Spend(usd=usd, tokens=10),
    )


def _begin(joint: SQLiteAttemptSpend, op: str, usd: float = 0.5) -> object:
    return joint.begin_reserved(
        op, number=1, attempt_id=f"{op}/1", output_dir="out", at=AT, candidate=None,
        spend=_spend(op, usd),
    )  # fmt: skip


def _settlement(op: str) -> Settlement:
    return Settlement(
        attempt_id=f"{op}/1",
        charged=Spend(usd=0.25, tokens=7),
        prompt_tokens=5,
        output_tokens=2,
        reported_usd=0.25,
        at=AT,
    )


def _succeeded() -> tuple[AttemptEnd, StateChange]:
    end = AttemptEnd(number=1, outcome=AttemptOutcome.SUCCEEDED, ended_at=AT)
    return end, StateChange(state=TaskState.SUCCEEDED, reason="done", at=AT, result={})


def _spend_rows(tmp_path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(tmp_path / "state" / STATE_FILE)
    try:
        return conn.execute("SELECT attempt_id, status FROM backstay_spend").fetchall()
    finally:
        conn.close()


def test_an_attempt_begins_with_its_reservation_and_ends_with_its_charge(tmp_path: Path) -> None:
    tasks, ledger, joint, op = _opened(tmp_path)
    with tasks, ledger:
        begun = _begin(joint, op)
        assert not isinstance(begun, SpendRefusal)
        assert begun.state is TaskState.RUNNING
        assert ledger.totals(BATCH_SCOPE).reserved == Spend(usd=0.5, tokens=10)
        record, _ = joint.end_settled(
            op, *_succeeded(), escalation=None, settlement=_settlement(op)
        )
        totals = ledger.totals(BATCH_SCOPE)
    assert record.state is TaskState.SUCCEEDED
    assert totals.spent == Spend(usd=0.25, tokens=7)
    assert totals.reserved == Spend()
    assert _spend_rows(tmp_path) == [(f"{op}/1", "settled")]
    assert_sums_match_recount(SQLiteSpendLedger(tmp_path / "state"), tmp_path / "state")


def test_a_refused_reservation_begins_nothing(tmp_path: Path) -> None:
    tasks, ledger, joint, op = _opened(tmp_path)
    with tasks, ledger:
        ledger.set_budget(BATCH_SCOPE, SpendBudget(usd=0.1), at=AT)
        refused = _begin(joint, op)
        record = tasks.task(op)
        attempts = tasks.attempts(op)
    assert isinstance(refused, SpendRefusal)
    assert record is not None
    assert record.state is TaskState.PENDING
    assert record.attempts_used == 0
    assert attempts == ()
    assert _spend_rows(tmp_path) == []


def test_an_end_the_task_store_refuses_writes_no_charge(tmp_path: Path) -> None:
    tasks, ledger, joint, op = _opened(tmp_path)
    with tasks, ledger:
        assert not isinstance(_begin(joint, op), SpendRefusal)
        _end, change = _succeeded()
        wrong = AttemptEnd(number=2, outcome=AttemptOutcome.SUCCEEDED, ended_at=AT)
        with pytest.raises(ConfigError, match=r"attempt 2 .* is not running"):
            joint.end_settled(op, wrong, change, escalation=None, settlement=_settlement(op))
        reserved = ledger.totals(BATCH_SCOPE).reserved
        record = tasks.task(op)
    assert reserved == Spend(usd=0.5, tokens=10)  # the settlement was rolled back with it
    assert record is not None
    assert record.state is TaskState.RUNNING
    assert _spend_rows(tmp_path) == [(f"{op}/1", "reserved")]


def test_the_ledger_of_a_bundle_shares_the_task_stores_connection(tmp_path: Path) -> None:
    state = tmp_path / "state"
    stores = open_stores(StoreLocation.sqlite(state), state_dir=state, clock=FakeClock())
    try:
        assert isinstance(stores.tasks, SQLiteTaskStore)
        assert isinstance(stores.spend, SQLiteSpendLedger)
        assert stores.spend.tasks is stores.tasks
        assert isinstance(stores.attempt_spend, SQLiteAttemptSpend)
    finally:
        stores.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed once, with the task store
        stores.spend.budget(BATCH_SCOPE)


def test_a_ledger_on_another_file_or_connection_is_refused(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path / "a") as tasks, SQLiteSpendLedger(tmp_path / "a") as apart:
        with pytest.raises(ValueError, match="is not"):
            SQLiteSpendLedger(tmp_path / "b", tasks=tasks)
        with pytest.raises(ValueError, match="does not share"):
            SQLiteAttemptSpend(tasks, apart)


def _kill_when(state: Path, attempts: int) -> None:
    """Run the child batch and SIGKILL it once the file holds ``attempts`` attempts."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.store.sqlite.attempt_spend_kill_child", str(state)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + KILL_WAIT_S
        while child.count(state, "SELECT count(*) FROM backstay_attempts") < attempts:
            assert proc.poll() is None, "the batch ended before it could be killed"
            assert time.monotonic() < deadline, f"no {attempts} attempts in {KILL_WAIT_S} s"
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60.0)
    assert proc.returncode == -signal.SIGKILL


def test_a_runner_killed_mid_batch_leaves_each_attempt_with_its_spend(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for attempts in (5, 30, 55):  # three kills, each resumed by the next run (80 in all)
        _kill_when(state, attempts)
        assert child.mismatches(state) == []
    with SQLiteSpendLedger(state) as ledger:
        assert_sums_match_recount(ledger, state)
    child.main(str(state))  # resumed to the end in this process
    assert child.mismatches(state) == []
    ended = "SELECT count(*) FROM backstay_tasks WHERE state IN ('succeeded', 'failed')"
    assert child.count(state, ended) == child.TASKS  # (a killed retry may run out of attempts)
    with SQLiteSpendLedger(state) as ledger:
        assert_sums_match_recount(ledger, state)
        assert ledger.totals(BATCH_SCOPE).reserved == Spend()
