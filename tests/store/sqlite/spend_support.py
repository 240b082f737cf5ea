"""Helpers for the SQLite spend ledger's tests: a workload of reservations, settlements and
releases over several tenants, tasks and models, and a full recount of a state file's
rows to hold the ledger's running sums against."""

from __future__ import annotations

import datetime as dt
import math
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Final

from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.policy.spend import BATCH_SCOPE, EarlierUse, ScopeKind, Spend, SpendScope
from backstay.store.sqlite.tasks import STATE_FILE

AT: Final = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
TENANTS: Final = ("acme", "globex", None)
MODELS: Final = ("m1", "m2")


def attempt(i: int) -> AttemptSpend:
    """The ``i``-th attempt of the workload (amounts that no float adds up exactly)."""
    return AttemptSpend(
        attempt_id=f"op{i % 37}/{i}",
        operation_id=f"op{i % 37}",
        tenant=TENANTS[i % len(TENANTS)],
        adapter="anthropic-api",
        model=MODELS[i % len(MODELS)],
        task_budget=None,
        estimate=Spend(usd=0.1 + i / 3000, tokens=100 + i % 7),
    )


def step(ledger: SpendLedger, i: int) -> None:
    """Reserve attempt ``i``; settle it, release it, or leave it open (by ``i``)."""
    each = attempt(i)
    assert ledger.reserve(each, at=AT) is None
    if i % 5 == 4:
        ledger.release(each.attempt_id)
    elif i % 5 == 3:
        return  # left open, as by a runner that died
    else:
        reported = None if i % 3 == 0 else 0.07 + i / 7000
        ledger.settle(
            each.attempt_id,
            Spend(usd=0.09 + i / 1100, tokens=150 + i % 11),
            prompt_tokens=100 + i % 13,
            output_tokens=50 + i % 3,
            reported_usd=reported,
            at=AT,
        )


def _rows(state: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(state / STATE_FILE)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM backstay_spend").fetchall()
    finally:
        conn.close()


def recount(state: Path) -> dict[SpendScope, tuple[Spend, Spend]]:
    """Every scope's (spent, reserved), summed over every row of the file (``fsum``: the
    correctly rounded sum)."""
    rows = _rows(state)
    scopes: dict[SpendScope, list[sqlite3.Row]] = {BATCH_SCOPE: rows}
    for row in rows:
        task = SpendScope(kind=ScopeKind.TASK, name=row["operation_id"])
        scopes.setdefault(task, []).append(row)
        if row["tenant"] is not None:
            tenant = SpendScope(kind=ScopeKind.TENANT, name=row["tenant"])
            scopes.setdefault(tenant, []).append(row)
    out: dict[SpendScope, tuple[Spend, Spend]] = {}
    for scope, found in scopes.items():
        settled = [r for r in found if r["status"] == "settled"]
        held = [r for r in found if r["status"] == "reserved"]
        out[scope] = (
            Spend(
                usd=math.fsum(r["usd"] for r in settled), tokens=sum(r["tokens"] for r in settled)
            ),
            Spend(
                usd=math.fsum(r["estimate_usd"] for r in held),
                tokens=sum(r["estimate_tokens"] for r in held),
            ),
        )
    return out


def recount_earlier(state: Path, model: str) -> EarlierUse | None:
    """The exact mean use of the settled attempts of ``model`` that used tokens."""
    used = [
        r
        for r in _rows(state)
        if r["status"] == "settled" and r["model"] == model
        and r["prompt_tokens"] is not None and r["tokens"] > 0
    ]  # fmt: skip
    if not used:
        return None
    reported = [Fraction(r["reported_usd"]) for r in used if r["reported_usd"] is not None]
    return EarlierUse(
        prompt_tokens=float(Fraction(sum(r["prompt_tokens"] for r in used), len(used))),
        output_tokens=float(Fraction(sum(r["output_tokens"] for r in used), len(used))),
        usd=float(sum(reported) / len(reported)) if reported else None,
    )


def assert_sums_match_recount(ledger: SpendLedger, state: Path) -> None:
    expected = recount(state)
    for scope, (spent, reserved) in expected.items():
        totals = ledger.totals(scope)
        assert (scope, totals.spent, totals.reserved) == (scope, spent, reserved)
    for model in MODELS:
        assert ledger.earlier("anthropic-api", model) == recount_earlier(state, model)
