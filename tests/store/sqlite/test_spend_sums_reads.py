"""``SQLiteSpendLedger`` reads only the sums a change adds to: a reservation reads no
model's use (a reserved row adds nothing to it), a settlement reads and writes its model's
use, and the sums still equal a full recount of the rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.store.sqlite.spend_support import assert_sums_match_recount, attempt
from tests.store.test_spend_ledger import AT

from backstay.policy.spend import Spend
from backstay.store.sqlite.spend import SQLiteSpendLedger


def _traced(ledger: SQLiteSpendLedger) -> list[str]:
    statements: list[str] = []
    conn: sqlite3.Connection = ledger._conn
    conn.set_trace_callback(statements.append)
    return statements


def test_a_reservation_reads_no_use_and_a_settlement_reads_its_own(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        first = attempt(1)
        assert ledger.reserve(first, at=AT) is None
        statements = _traced(ledger)
        second = attempt(2)
        assert ledger.reserve(second, at=AT) is None
        assert not [s for s in statements if "use|" in s]
        assert [s for s in statements if "'batch|'" in s and s.startswith("SELECT")]
        statements.clear()
        ledger.settle(
            second.attempt_id,
            Spend(usd=0.2, tokens=150),
            prompt_tokens=100,
            output_tokens=50,
            reported_usd=None,
            at=AT,
        )
        use = [s for s in statements if "use|" in s]
        assert [s for s in use if s.startswith("SELECT")]
        assert [s for s in use if s.startswith("INSERT")]
        ledger.release(first.attempt_id)
        assert_sums_match_recount(ledger, tmp_path)
