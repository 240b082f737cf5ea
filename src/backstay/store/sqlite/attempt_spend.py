"""``SQLiteAttemptSpend``: an attempt's reservation written in the transaction that begins
it, its settlement in the one that ends it (``backstay.engine.attempt_spend``), on the one
connection the task store and the spend ledger of a state file share."""

from __future__ import annotations

import datetime as _dt
import sqlite3

from backstay.engine.attempt_spend import Settlement
from backstay.engine.records import AttemptEnd, Escalation, NewEscalation, StateChange, TaskRecord
from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.policy.spend import SpendRefusal
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import SQLiteTaskStore

__all__ = ["SQLiteAttemptSpend"]


class SQLiteAttemptSpend:
    """The ``AttemptSpendStore`` of ``tasks`` and ``ledger``, a ledger opened on the task
    store's connection (``SQLiteSpendLedger(state_dir, tasks=tasks)``)."""

    def __init__(self, tasks: SQLiteTaskStore, ledger: SQLiteSpendLedger) -> None:
        if ledger.tasks is not tasks:
            raise ValueError("the spend ledger does not share the task store's connection")
        self.tasks = tasks
        self.ledger = ledger

    def keeps(self, ledger: SpendLedger) -> bool:
        return ledger is self.ledger

    def begin_reserved(
        self,
        operation_id: str,
        *,
        number: int,
        attempt_id: str,
        output_dir: str,
        at: _dt.datetime,
        candidate: str | None,
        spend: AttemptSpend,
    ) -> TaskRecord | SpendRefusal:
        def fn(conn: sqlite3.Connection) -> TaskRecord | SpendRefusal:
            refusal = self.ledger.reserve_in(conn, spend, at=at)
            if refusal is not None:
                return refusal  # nothing was written
            return self.tasks.begin_in(
                conn,
                operation_id,
                number=number,
                attempt_id=attempt_id,
                output_dir=output_dir,
                at=at,
                candidate=candidate,
            )

        return self.tasks.transaction(fn)

    def end_settled(
        self,
        operation_id: str,
        end: AttemptEnd,
        change: StateChange,
        *,
        escalation: NewEscalation | None,
        settlement: Settlement,
    ) -> tuple[TaskRecord, Escalation | None]:
        def fn(conn: sqlite3.Connection) -> tuple[TaskRecord, Escalation | None]:
            self.ledger.settle_in(conn, settlement)
            return self.tasks.end_in(conn, operation_id, end, change, escalation=escalation)

        return self.tasks.transaction(fn)
