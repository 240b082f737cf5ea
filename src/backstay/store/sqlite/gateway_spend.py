"""``SQLiteGatewayLedger``: the spending budgets of ``backstay gateway`` (its own, and the
``backstay run``s it holds) in ``<state_dir>/gateway-spend.sqlite`` (component
``gateway_spend``), shared by every gateway on that directory.

Its state stays bounded however many requests pass:

* ``backstay_gateway_open``: one row per request **in flight** (its scope and estimate),
  written by the reservation and deleted by the settlement;
* ``backstay_gateway_scopes``: one row per live scope (``gateway``, a window's
  ``gateway@day:2026-11-28``, a run's ``run:<id>``): its totals ``[spent usd, spent tokens,
  reserved usd, reserved tokens]`` as exact fractions (``backstay.store._spend_sums``), and
  ``until``, when it may be forgotten (``NULL``: never). A settlement folds its request's
  charge into its scope's totals in the transaction that deletes the row; a reservation
  that starts a new scope first deletes the scopes whose ``until`` has passed and their
  rows; the row of scope ``''`` keeps what every request ever settled spent.

Each reservation reads its scope's row and checks it with
``backstay.policy.spend.check_spend`` inside one ``BEGIN IMMEDIATE`` transaction, so no two
gateways on the file can together reserve past a budget.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Final

from backstay._private import make_private_dirs
from backstay.policy.spend import ScopeTotals, Spend, SpendBudget, SpendRefusal, check_spend
from backstay.store import _spend_sums as sums
from backstay.store._gateway_sums import EVER, fold, scope_totals, settled, totals_of
from backstay.store.sqlite._file import SQLiteFile
from backstay.store.sqlite._schema import open_component
from backstay.store.sqlite.tasks import DEFAULT_TIMEOUT_S

__all__ = ["GATEWAY_FILE", "SQLiteGatewayLedger"]

GATEWAY_FILE: Final = "gateway-spend.sqlite"
COMPONENT: Final = "gateway_spend"
SCHEMA_VERSION: Final = 1
SCOPES: Final = "backstay_gateway_scopes"
OPEN: Final = "backstay_gateway_open"
_DDL: Final = (
    f"""CREATE TABLE {SCOPES} (
    scope TEXT PRIMARY KEY,
    vector TEXT NOT NULL,
    until REAL
)""",
    f"CREATE INDEX {SCOPES}_until ON {SCOPES} (until)",
    f"""CREATE TABLE {OPEN} (
    request_id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    usd REAL NOT NULL,
    tokens INTEGER NOT NULL
)""",
    f"CREATE INDEX {OPEN}_scope ON {OPEN} (scope)",
)
_GET: Final = f"SELECT vector FROM {SCOPES} WHERE scope = ?"  # noqa: S608
_PUT: Final = (
    f"INSERT INTO {SCOPES} (scope, vector, until) VALUES (?, ?, ?) "  # noqa: S608
    "ON CONFLICT (scope) DO UPDATE SET vector = excluded.vector, "
    "until = coalesce(excluded.until, until)"
)
_FORGET_OPEN: Final = (
    f"DELETE FROM {OPEN} WHERE scope IN (SELECT scope FROM {SCOPES} WHERE until < ?)"  # noqa: S608
)
_FORGET: Final = f"DELETE FROM {SCOPES} WHERE until < ?"  # noqa: S608
_HOLD: Final = f"INSERT INTO {OPEN} (request_id, scope, usd, tokens) VALUES (?, ?, ?, ?)"  # noqa: S608
_OPEN_ROW: Final = f"SELECT scope, usd, tokens FROM {OPEN} WHERE request_id = ?"  # noqa: S608
_DROP: Final = f"DELETE FROM {OPEN} WHERE request_id = ?"  # noqa: S608
_ALL: Final = f"SELECT scope, vector FROM {SCOPES} ORDER BY scope"  # noqa: S608


class SQLiteGatewayLedger(SQLiteFile):
    """The gateway's spending ledger in ``state_dir``; see the module docstring.
    ``SpendRows`` (``backstay.gateway.spending``) over a SQLite file."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        file_name: str = GATEWAY_FILE,
    ) -> None:
        self.path = Path(state_dir) / file_name
        self._lock = threading.Lock()
        make_private_dirs(self.path.parent)
        self._conn = open_component(
            self.path,
            component=COMPONENT,
            version=SCHEMA_VERSION,
            tables=(SCOPES, OPEN),
            ddl=_DDL,
            timeout_s=timeout_s,
        )

    @staticmethod
    def _vector(conn: sqlite3.Connection, scope: str) -> sums.Vector | None:
        found = conn.execute(_GET, (scope,)).fetchone()
        return None if found is None else sums.decode(found[0])

    def reserve(
        self,
        request_id: str,
        scope: str,
        budget: SpendBudget,
        estimate: Spend,
        *,
        now: float,
        until: float | None,
    ) -> SpendRefusal | None:
        """Hold ``estimate`` in ``scope`` (``None``), or refuse and hold nothing."""

        def fn(conn: sqlite3.Connection) -> SpendRefusal | None:
            vector = self._vector(conn, scope)
            if vector is None:  # a new scope: the ended ones go first
                conn.execute(_FORGET_OPEN, (now,))
                conn.execute(_FORGET, (now,))
            refusal = check_spend([scope_totals(scope, vector, budget)], estimate)
            if refusal is None:
                conn.execute(_HOLD, (request_id, scope, estimate.usd, estimate.tokens))
                held = sums.encode(fold(vector, held=estimate))
                conn.execute(_PUT, (scope, held, until))
            return refusal

        return self._tx(fn)

    def settle(
        self,
        request_id: str,
        charged: Spend,
        *,
        scope: str,
        prompt_tokens: int,
        output_tokens: int,
    ) -> None:
        """Fold ``charged`` into the request's scope in place of its estimate; its row goes
        (nothing when it is not in flight: settled already, or its scope forgotten)."""
        del scope, prompt_tokens, output_tokens  # the row names its scope

        def fn(conn: sqlite3.Connection) -> None:
            found = conn.execute(_OPEN_ROW, (request_id,)).fetchone()
            if found is None:
                return
            held = str(found[0])
            estimate = Spend(usd=float(found[1]), tokens=int(found[2]))
            conn.execute(_DROP, (request_id,))
            vector = settled(self._vector(conn, held), charged, estimate)
            conn.execute(_PUT, (held, sums.encode(vector), None))
            ever = fold(self._vector(conn, EVER), spent=charged)
            conn.execute(_PUT, (EVER, sums.encode(ever), None))

        self._tx(fn)

    def overview(self) -> tuple[ScopeTotals, ...]:
        """What every request ever settled spent and every live scope holds (``batch``),
        then each live scope by name (no budget)."""
        with self._lock:
            found = [(str(s), sums.decode(v)) for s, v in self._conn.execute(_ALL)]
        return totals_of(found)

    def counts(self) -> tuple[int, int]:
        """How many scope rows and request rows the file keeps."""
        with self._lock:
            scopes = self._conn.execute(f"SELECT count(*) FROM {SCOPES}").fetchone()  # noqa: S608
            rows = self._conn.execute(f"SELECT count(*) FROM {OPEN}").fetchone()  # noqa: S608
        return int(scopes[0]), int(rows[0])
