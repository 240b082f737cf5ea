"""``SQLiteSpendLedger`` beyond the shared contract (tests/store/test_spend_ledger.py): its
budgets and rows are kept in the state file, and read back by a ledger opened later; its
running sums equal a full recount of its rows after any sequence of reservations,
settlements and releases, after a SIGKILL mid-write, and when built for a version 1 file."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from tests.store.sqlite.spend_support import (
    assert_sums_match_recount,
    attempt,
    recount,
    step,
)
from tests.store.test_spend_ledger import ACME, AT

from backstay.policy.spend import BATCH_SCOPE, Spend, SpendBudget
from backstay.store.sqlite.spend import SCHEMA_VERSION, SQLiteSpendLedger
from backstay.store.sqlite.tasks import STATE_FILE


def test_the_ledger_lives_in_the_state_file(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        ledger.set_budget(ACME, SpendBudget(usd=1.0), at=AT)
    assert (tmp_path / STATE_FILE).is_file()
    with SQLiteSpendLedger(tmp_path) as ledger:
        assert ledger.budget(ACME) == SpendBudget(usd=1.0)
        assert ledger.totals(BATCH_SCOPE).spent == Spend()


def test_the_running_sums_equal_a_full_recount_of_the_rows(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        for i in range(300):
            step(ledger, i)
        for op in ("op3", "op8"):  # a dead runner's open reservations, charged
            assert ledger.settle_open(op, at=AT) > 0
        ledger.release("op0/0")  # already settled: nothing changes
        assert len(recount(tmp_path)) == 1 + 2 + 37  # the batch, two tenants, 37 tasks
        assert_sums_match_recount(ledger, tmp_path)
    with SQLiteSpendLedger(tmp_path) as ledger:  # read back from the file
        assert_sums_match_recount(ledger, tmp_path)


def test_reserving_an_attempt_again_replaces_it_in_the_sums(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        first = attempt(1)
        assert ledger.reserve(first, at=AT) is None
        again = replace(first, estimate=Spend(usd=0.5, tokens=7))
        assert ledger.reserve(again, at=AT) is None
        assert ledger.totals(BATCH_SCOPE).reserved == Spend(usd=0.5, tokens=7)
        assert_sums_match_recount(ledger, tmp_path)


def test_a_refused_reservation_changes_no_sum(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        ledger.set_budget(BATCH_SCOPE, SpendBudget(usd=0.15), at=AT)
        assert ledger.reserve(attempt(1), at=AT) is None
        assert ledger.reserve(attempt(2), at=AT) is not None
        assert ledger.totals(BATCH_SCOPE).reserved == attempt(1).estimate


def test_the_sums_agree_with_a_full_recount_after_a_kill(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.store.sqlite.spend_crash_child", str(tmp_path)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60.0
    try:
        while len(_spend_rows(tmp_path)) < 400:
            assert proc.poll() is None, "the child ended before it was killed"
            assert time.monotonic() < deadline, "no 400 rows in 60 s"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60.0)
    assert proc.returncode == -signal.SIGKILL
    with SQLiteSpendLedger(tmp_path) as ledger:
        assert_sums_match_recount(ledger, tmp_path)


def _spend_rows(state: Path) -> list[tuple[object, ...]]:
    if not (state / STATE_FILE).exists():
        return []
    conn = sqlite3.connect(state / STATE_FILE, timeout=10.0)
    try:
        return conn.execute("SELECT attempt_id FROM backstay_spend").fetchall()
    except sqlite3.OperationalError:  # the child has not made its tables yet
        return []
    finally:
        conn.close()


def _make_version_1(state: Path) -> None:
    """Take the file back to schema version 1: the same rows, no sums."""
    conn = sqlite3.connect(state / STATE_FILE)
    try:
        with conn:
            conn.execute("DROP TABLE backstay_spend_sums")
            conn.execute("UPDATE backstay_schema SET version = 1 WHERE component = 'spend'")
    finally:
        conn.close()


def test_a_version_1_file_is_migrated_and_its_sums_built_from_its_rows(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        for i in range(60):
            step(ledger, i)
    _make_version_1(tmp_path)
    with SQLiteSpendLedger(tmp_path) as ledger:
        assert_sums_match_recount(ledger, tmp_path)
        assert ledger.totals(BATCH_SCOPE).spent.tokens > 0
        step(ledger, 60)  # and kept from there on
        assert_sums_match_recount(ledger, tmp_path)
    conn = sqlite3.connect(tmp_path / STATE_FILE)
    try:
        version = conn.execute(
            "SELECT version FROM backstay_schema WHERE component = 'spend'"
        ).fetchone()
    finally:
        conn.close()
    assert version == (SCHEMA_VERSION,) == (2,)
