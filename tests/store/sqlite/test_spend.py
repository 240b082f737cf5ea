"""``SQLiteSpendLedger`` beyond the shared contract (tests/store/test_spend_ledger.py): its
budgets and rows are kept in the state file, and read back by a ledger opened later."""

from __future__ import annotations

from pathlib import Path

from tests.store.test_spend_ledger import ACME, AT

from backstay.policy.spend import BATCH_SCOPE, Spend, SpendBudget
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import STATE_FILE


def test_the_ledger_lives_in_the_state_file(tmp_path: Path) -> None:
    with SQLiteSpendLedger(tmp_path) as ledger:
        ledger.set_budget(ACME, SpendBudget(usd=1.0), at=AT)
    assert (tmp_path / STATE_FILE).is_file()
    with SQLiteSpendLedger(tmp_path) as ledger:
        assert ledger.budget(ACME) == SpendBudget(usd=1.0)
        assert ledger.totals(BATCH_SCOPE).spent == Spend()
