"""Circuit breaker, closed path: backstay vs pybreaker and purgatory, measured side by side.

A healthy call through each breaker (the call itself is a function returning 1, measured
as ``bare``). backstay's check is ``acquire()`` alone (what the retry driver asks before an
attempt); a full protected call adds ``success()``. Memory per breaker via tracemalloc.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import purgatory
import pybreaker

import backstay
from retry import Row, median_us, ratio, verdict

CHECK_TARGET_US = 0.3
BREAKER_BYTES_TARGET = 10 * 1024
NUMBER = 200_000


def _ok() -> int:
    return 1


def _purgatory_call(factory: Any) -> int:
    with factory.get_breaker("bench"):
        return _ok()


def _bytes_per_breaker(count: int = 1000) -> float:
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    registry = backstay.BreakerRegistry()
    kept = [registry.breaker_for(f"provider/model-{i}") for i in range(count)]
    for breaker in kept:  # a breaker holds state once it has seen calls
        breaker.acquire().success()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return grown / count


def breaker_rows() -> list[Row]:
    breaker = backstay.CircuitBreaker("bench")
    env: dict[str, Any] = {
        "ok": _ok,
        "breaker": breaker,
        "call": backstay.call,
        "pyb": pybreaker.CircuitBreaker(),
        "pg_call": _purgatory_call,
        "pg_factory": purgatory.SyncCircuitBreakerFactory(),
    }
    bare = median_us("ok()", env, NUMBER)
    check = median_us("breaker.acquire()", env, NUMBER)
    ours = median_us("p = breaker.acquire(); ok(); p.success()", env, NUMBER)
    driven = median_us("call(ok, breaker=breaker)", env, NUMBER // 2)
    pyb = median_us("pyb.call(ok)", env, NUMBER // 2)
    pg = median_us("pg_call(pg_factory)", env, NUMBER // 10)
    per_breaker = _bytes_per_breaker()
    return [
        Row("bare call", bare),
        Row(
            "backstay acquire() (the closed-path check)",
            check,
            note=verdict(check, CHECK_TARGET_US),
        ),
        Row("backstay acquire + call + success()", ours, note=f"{ratio(ours, pyb)} pybreaker"),
        Row("backstay.call(fn, breaker=...)", driven, note=f"{ratio(driven, pyb)} pybreaker"),
        Row("pybreaker CircuitBreaker.call", pyb),
        Row("purgatory with breaker:", pg, note=f"backstay full call {ratio(ours, pg)} of it"),
        Row(
            "memory per backstay breaker (1,000 keyed)",
            per_breaker,
            unit="B",
            note=verdict(per_breaker, BREAKER_BYTES_TARGET, strict=True),
        ),
    ]
