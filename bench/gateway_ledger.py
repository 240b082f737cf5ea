"""What the gateway's spending ledger beside ``--store`` holds in steady state
(``backstay.store.sqlite.gateway_spend``, ``backstay.store.redis.gateway_spend``).

N requests of an hourly-window budget, reserved and settled in a loop with K in flight
(each settles K requests after it is reserved), the gateway's clock moving through four
hours: then the ledger's rows and scopes, the SQLite file's size, and the Redis keys and
their memory (``MEMORY USAGE``) — beside the ledger of one row per request it replaces
(the batch's ``SQLiteSpendLedger`` / ``RedisSpendLedger``, as the gateway used it), fed
the same requests; and the cost of a request (a reservation and its settlement, µs).
Redis is a local ``redis-server`` on 127.0.0.1 (``shared_state.redis_server``).

Run alone: ``.venv/bin/python bench/gateway_ledger.py [N]``.
"""

from __future__ import annotations

import collections
import datetime as _dt
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import redis

from backstay.engine.spend_ledger import AttemptSpend
from backstay.gateway.spending import WINDOW_MARGIN_S, BudgetWindow, GatewayBudget
from backstay.policy.spend import Spend, SpendBudget
from backstay.store.location import parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.gateway_spend import RedisGatewayLedger
from backstay.store.redis.spend import RedisSpendLedger
from backstay.store.sqlite.gateway_spend import SQLiteGatewayLedger
from backstay.store.sqlite.spend import SQLiteSpendLedger
from shared_state import redis_server

REQUESTS: Final = 20_000
IN_FLIGHT: Final = 8
HOURS: Final = 4
START: Final = _dt.datetime(2026, 11, 28, 0, 0, tzinfo=_dt.UTC).timestamp()
BUDGET: Final = GatewayBudget(tokens=10**12, window=BudgetWindow.HOUR)
ESTIMATE: Final = Spend(usd=0.000_75, tokens=250)
CHARGED: Final = Spend(usd=0.000_93, tokens=310)


def _feed_new(ledger: Any, n: int) -> float:
    """Reserve and settle ``n`` requests, ``IN_FLIGHT`` at a time; µs per request."""
    flying: collections.deque[tuple[str, str]] = collections.deque()
    started = time.perf_counter()
    for i in range(n):
        now = START + i * HOURS * 3600 / n
        scope, ends = BUDGET.scope(now)
        assert ends is not None
        request = f"{scope}:{i}"
        until = ends + WINDOW_MARGIN_S
        ledger.reserve(request, scope, BUDGET.limit, ESTIMATE, now=now, until=until)
        flying.append((request, scope))
        if len(flying) > IN_FLIGHT:
            done, held = flying.popleft()
            ledger.settle(done, CHARGED, scope=held, prompt_tokens=250, output_tokens=60)
    return (time.perf_counter() - started) / n * 1e6


def _feed_old(ledger: Any, n: int) -> float:
    """The same requests as rows of a batch's spend ledger (one row each, kept)."""
    flying: collections.deque[str] = collections.deque()
    at = _dt.datetime.fromtimestamp(START, _dt.UTC)
    started = time.perf_counter()
    for i in range(n):
        scope, _ = BUDGET.scope(START + i * HOURS * 3600 / n)
        row = AttemptSpend(
            attempt_id=f"{scope}:{i}",
            operation_id=scope,
            tenant=None,
            adapter="gateway",
            model="",
            task_budget=SpendBudget(tokens=10**12),
            estimate=ESTIMATE,
        )
        ledger.reserve(row, at=at)
        flying.append(row.attempt_id)
        if len(flying) > IN_FLIGHT:
            ledger.settle(
                flying.popleft(),
                CHARGED,
                prompt_tokens=250,
                output_tokens=60,
                reported_usd=None,
                at=at,
            )
    return (time.perf_counter() - started) / n * 1e6


def _file_kib(path: Path) -> float:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if os.path.exists(p)) / 1024


def _redis_held(client: redis.Redis, pattern: str) -> tuple[int, int, float]:
    """(keys, hash fields, KiB by MEMORY USAGE) of the keys matching ``pattern``."""
    keys = list(client.scan_iter(match=pattern, count=1000))
    fields = sum(int(client.hlen(k)) for k in keys if client.type(k) == b"hash")
    used = sum(int(client.memory_usage(k) or 0) for k in keys)
    return len(keys), fields, used / 1024


def sqlite_rows(n: int, tmp: Path) -> list[tuple[str, str, str, float]]:
    """(ledger, what it keeps, size, µs a request) on SQLite."""
    new = SQLiteGatewayLedger(tmp / "new")
    try:
        new_us = _feed_new(new, n)
        scopes, rows = new.counts()
    finally:
        new.close()
    old = SQLiteSpendLedger(tmp / "old", file_name="gateway-spend.sqlite")
    try:
        old_us = _feed_old(old, n)
        with old._lock:
            kept = old._conn.execute("SELECT count(*) FROM backstay_spend").fetchone()[0]
    finally:
        old.close()
    return [
        (
            "SQLite, folded (now)",
            f"{scopes} scope rows, {rows} request rows",
            f"{_file_kib(new.path):.0f} KiB",
            new_us,
        ),
        (
            "SQLite, a row per request",
            f"{kept} request rows",
            f"{_file_kib(old.path):.0f} KiB",
            old_us,
        ),
    ]


def redis_rows(n: int, url: str) -> list[tuple[str, str, str, float]]:
    """(ledger, what it keeps, size, µs a request) on Redis."""
    conn = RedisConnection(parse_store(f"{url}?namespace=bench"))
    try:
        new_us = _feed_new(RedisGatewayLedger(conn, tag="new"), n)
        old_us = _feed_old(RedisSpendLedger(conn, tag="old"), n)
        keys, fields, kib = _redis_held(conn.client, "{bench:new}*")
        old_keys, old_fields, old_kib = _redis_held(conn.client, "{bench:old}*")
    finally:
        conn.close()
    return [
        ("Redis, folded (now)", f"{keys} keys, {fields} hash fields", f"{kib:.1f} KiB", new_us),
        (
            "Redis, a row per request",
            f"{old_keys} keys, {old_fields} hash fields",
            f"{old_kib:.0f} KiB",
            old_us,
        ),
    ]


def report(n: int = REQUESTS) -> None:
    with redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        rows = sqlite_rows(n, Path(tmp)) + redis_rows(n, url)
    print()
    print(
        f"The gateway's spending ledger after {n:,} requests over {HOURS} hourly windows, "
        f"{IN_FLIGHT} in flight"
    )
    print(f"  {'ledger':<28} {'what it keeps':<34} {'size':>10} {'µs a request':>13}")
    for name, kept, size, us in rows:
        print(f"  {name:<28} {kept:<34} {size:>10} {us:13.0f}")


if __name__ == "__main__":
    report(int(sys.argv[1]) if len(sys.argv) > 1 else REQUESTS)
