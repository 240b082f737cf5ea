"""The short paths of ``SQLiteSpendLedger``: a first reservation is written before its
check (and taken back if refused), and the sums a change needs are read in one statement.
They must leave the rows and sums exactly as the long path does (a full recount of the
rows agrees); an attempt reserved again still replaces, or fails on, its earlier row."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from tests.store.sqlite.spend_support import (
    AT,
    assert_sums_match_recount,
    attempt,
    recount,
    step,
)

from backstay.policy.spend import BATCH_SCOPE, ScopeKind, Spend, SpendBudget, SpendScope
from backstay.store.sqlite.spend import SQLiteSpendLedger

ACME = SpendScope(kind=ScopeKind.TENANT, name="acme")


def _workload(ledger: SQLiteSpendLedger) -> None:
    ledger.set_budget(ACME, SpendBudget(usd=1e6, tokens=10**9), at=AT)
    for i in range(200):
        step(ledger, i)
    for i in range(0, 200, 3):  # left open or released: reserved again (replaced if open)
        if i % 5 in {3, 4}:
            again = replace(attempt(i), estimate=Spend(usd=0.3 + i / 999, tokens=9))
            assert ledger.reserve(again, at=AT) is None
    assert ledger.settle_open("op3", at=AT) >= 0


def test_the_sums_equal_a_recount_after_reservations_made_again(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        _workload(ledger)
        assert_sums_match_recount(ledger, tmp_path)


def _traced(ledger: SQLiteSpendLedger) -> list[str]:
    statements: list[str] = []
    ledger._conn.set_trace_callback(statements.append)
    return statements


def test_a_first_reservation_and_its_settlement_read_the_sums_once_each(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        assert ledger.reserve(attempt(1), at=AT) is None
        statements = _traced(ledger)
        assert ledger.reserve(attempt(2), at=AT) is None
        reads = [s for s in statements if s.startswith("SELECT")]
        assert len([s for s in reads if "backstay_spend_sums" in s]) == 1
        assert not [s for s in reads if "FROM backstay_spend " in s]  # no row read
        statements.clear()
        settled = ledger.settle(
            attempt(2).attempt_id, Spend(usd=0.2, tokens=5), prompt_tokens=3,
            output_tokens=2, reported_usd=0.1, at=AT,
        )  # fmt: skip
        assert settled
        reads = [s for s in statements if s.startswith("SELECT")]
        assert len([s for s in reads if "backstay_spend_sums" in s]) == 1
        assert_sums_match_recount(ledger, tmp_path)


def test_a_refused_first_reservation_leaves_no_row(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        ledger.set_budget(BATCH_SCOPE, SpendBudget(usd=0.15), at=AT)
        assert ledger.reserve(attempt(1), at=AT) is None
        before = recount(tmp_path)
        assert ledger.reserve(attempt(2), at=AT) is not None
        assert recount(tmp_path) == before
        assert ledger.totals(BATCH_SCOPE).reserved == attempt(1).estimate
        # Refused, it was not held: settling or releasing it finds nothing.
        assert not ledger.settle(attempt(2).attempt_id, Spend(), prompt_tokens=0,
                                 output_tokens=0, reported_usd=None, at=AT)  # fmt: skip
        assert_sums_match_recount(ledger, tmp_path)


def test_a_reservation_refused_again_has_released_the_earlier_one(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        ledger.set_budget(BATCH_SCOPE, SpendBudget(usd=1.0), at=AT)
        first = attempt(1)
        assert ledger.reserve(first, at=AT) is None
        assert ledger.reserve(replace(first, estimate=Spend(usd=2.0)), at=AT) is not None
        assert ledger.totals(BATCH_SCOPE).reserved == Spend()
        assert_sums_match_recount(ledger, tmp_path)


def test_reserving_a_settled_attempt_again_fails_and_changes_nothing(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        first = attempt(1)
        assert ledger.reserve(first, at=AT) is None
        assert ledger.settle(first.attempt_id, Spend(usd=0.2, tokens=5), prompt_tokens=3,
                             output_tokens=2, reported_usd=None, at=AT)  # fmt: skip
        before = recount(tmp_path)
        with pytest.raises(sqlite3.IntegrityError):
            ledger.reserve(first, at=AT)
        assert recount(tmp_path) == before
        assert_sums_match_recount(ledger, tmp_path)
