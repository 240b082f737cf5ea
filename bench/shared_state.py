"""Shared state on Redis: what a decision costs, and what sharing a limiter buys.

1. Per-decision cost, in-memory vs SQLite vs Redis, measured in the same run: a circuit
   breaker's full decision (``acquire`` + ``success``), its closed-path check alone
   (``acquire``), a rate limiter's ``reserve`` (Redis: one Lua script; there is no SQLite
   limiter, the in-process one is the peer), and an idempotency lease's ``claim`` +
   ``complete``. Redis is a local ``redis-server`` (Debian's) on 127.0.0.1, started and
   stopped by PID; every Redis figure includes its loopback round trips.
2. Goodput of N driver processes (``tests/store/redis/limiter_driver.py``) against one
   fake provider enforcing R requests a minute, each process pacing its calls with the
   same Redis limiter vs each with a limiter of its own (configured with the same R, as a
   team would configure each machine). The provider's minute of burst is used up first
   (requests until the first 429), so M calls cannot finish before M / R: the ideal every
   wall time (first to last request in the provider's log) is divided by. 429s are the
   provider's own count.

Run alone with ``.venv/bin/python bench/shared_state.py``, or in ``make bench``.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import httpx
import redis

import provider_process
from backstay.breaker import CircuitBreaker, MemoryBreakerStore
from backstay.idempotency import MemoryOperationStore
from backstay.idempotency.records import Acquired
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.store import SQLiteBreakerStore, SQLiteOperationStore
from backstay.store.location import parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisBreakerStore
from backstay.store.redis.limiter import RedisRateLimiter
from backstay.store.redis.operations import RedisOperationStore

ROOT: Final = Path(__file__).resolve().parents[1]
DRIVER: Final = ROOT / "tests" / "store" / "redis" / "limiter_driver.py"
REPEAT: Final = 5
NUMBER: Final = 2_000
RPM: Final = 600
CALLS: Final = 100  # M
PROCESSES: Final = (2, 4)  # N
DRAIN_LIMIT: Final = 5_000
HEADERS: Final = {"x-api-key": "bench-key", "anthropic-version": "2023-06-01"}
BODY: Final = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str]:
    """A ``redis-server`` on a free loopback port, no persistence; its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (scripts/install-test-deps)")
    port, directory = _free_port(), tempfile.mkdtemp(prefix="backstay-bench-redis-")
    process = subprocess.Popen(  # noqa: S603 - the Debian binary, our arguments
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--maxmemory-policy", "noeviction", "--dir", directory],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(port=port)
    try:
        for _ in range(500):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        process.terminate()
        process.wait(30)
        shutil.rmtree(directory, ignore_errors=True)


def _best_us(fn: Callable[[], object], number: int = NUMBER) -> float:
    return min(timeit.repeat(fn, number=number, repeat=REPEAT)) / number * 1e6


# ---- 1. per-decision cost ---------------------------------------------------------------


def _breaker_rows(store: Any) -> tuple[float, float]:
    breaker = CircuitBreaker("bench/model", store=store)

    def full() -> None:
        breaker.acquire().success()

    return _best_us(full, 500), _best_us(breaker.acquire)


def _lease_us(store: Any) -> float:
    counter = iter(range(10**9))

    def once() -> None:
        claim = store.claim(f"op-{next(counter)}", "bench", 60.0)
        assert isinstance(claim, Acquired)
        store.complete(claim.lease, {"ok": True})

    return _best_us(once, 300)


def decisions(url: str, tmp: Path) -> list[tuple[str, float, float, float | None]]:
    """(what, memory µs, SQLite µs, Redis µs) per decision."""
    conn = RedisConnection(parse_store(f"{url}?namespace=bench"))
    try:
        mem_full, mem_check = _breaker_rows(MemoryBreakerStore())
        with SQLiteBreakerStore(tmp / "breakers.sqlite") as sqlite_store:
            sql_full, sql_check = _breaker_rows(sqlite_store)
        red_full, red_check = _breaker_rows(RedisBreakerStore(conn))
        settings = RateLimitSettings(requests_per_minute=1e9)
        memory_limiter = RateLimiter.from_settings("bench/model", settings)
        redis_limiter = RedisRateLimiter("bench/model", conn, settings=settings)
        with SQLiteOperationStore(tmp / "ops.sqlite") as sqlite_ops:
            sql_lease = _lease_us(sqlite_ops)
        return [
            ("breaker acquire + success", mem_full, sql_full, red_full),
            ("breaker acquire (closed check)", mem_check, sql_check, red_check),
            ("limiter reserve", _best_us(memory_limiter.reserve), float("nan"),
             _best_us(redis_limiter.reserve)),
            ("lease claim + complete", _lease_us(MemoryOperationStore()), sql_lease,
             _lease_us(RedisOperationStore(conn))),
        ]  # fmt: skip
    finally:
        conn.close()


# ---- 2. goodput, shared vs own limiter --------------------------------------------------


def _drain(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30.0) as client:
        for _ in range(DRAIN_LIMIT):
            if client.post("/v1/messages", json=BODY, headers=HEADERS).status_code == 429:
                return
    raise RuntimeError(f"the provider's bucket was not empty after {DRAIN_LIMIT} requests")


def _log_wall_s(log: Path, after: float) -> float:
    """First to last request the provider logged after ``after`` (Unix seconds): the
    processes' start-up is not the limiter's doing."""
    times = [json.loads(line)["time"] for line in log.read_text(encoding="utf-8").splitlines()]
    times = [t for t in times if t >= after]
    return max(times) - min(times)


def _run(processes: int, *, shared_url: str | None, tmp: Path) -> dict[str, float]:
    log = tmp / f"requests-{processes}-{shared_url is not None}.jsonl"
    argv = [sys.executable, str(DRIVER), "", "--requests", str(CALLS // processes),
            "--threads", "2", "--rpm", str(RPM), "--burst-s", "1", "--wait-go"]  # fmt: skip
    if shared_url is not None:
        argv += ["--redis", shared_url]
    with provider_process.serve("--rpm", str(RPM), "--log", str(log)) as url:
        argv[2] = url
        children = [
            subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # noqa: S603 - our driver
            for _ in range(processes)
        ]
        for child in children:  # every process imported and set up: none starts late
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        _drain(url)
        before = httpx.get(url + "/_backstay/stats").json()
        started = time.time()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        results = [json.loads(child.communicate(timeout=600)[0]) for child in children]
        after = httpx.get(url + "/_backstay/stats").json()
    wall = _log_wall_s(log, started)
    requests = after["requests"] - before["requests"]
    limited = after["by_fault"].get("rate_limit_enforced", 0) - before["by_fault"].get(
        "rate_limit_enforced", 0
    )
    ok = sum(r["ok"] for r in results)
    ideal = CALLS / (RPM / 60.0)
    return {"wall": wall, "ratio": wall / ideal, "ok": ok, "requests": requests,
            "limited": limited, "goodput": ok / wall}  # fmt: skip


def report() -> None:
    with redis_server() as url, tempfile.TemporaryDirectory() as tmp:
        rows = decisions(url, Path(tmp))
        print("\nShared state: cost per decision (best of 5, µs), same run")
        print(f"  {'decision':<34} {'memory':>9} {'SQLite':>9} {'Redis':>9}  Redis/SQLite")
        for name, mem, sql, red in rows:
            vs = "    -" if math.isnan(sql) else f"{red / sql:5.2f}x"  # no SQLite limiter
            sql_text = "      n/a" if math.isnan(sql) else f"{sql:9.1f}"
            print(f"  {name:<34} {mem:9.2f} {sql_text} {red:9.1f}  {vs}")
        print(
            f"\nShared state: goodput of N processes, {CALLS} calls against {RPM} RPM "
            f"(ideal {CALLS / (RPM / 60.0):.0f} s from an empty bucket)"
        )
        print(f"  {'N':>2} {'limiter':<8} {'wall s':>7} {'x ideal':>8} {'ok':>4} "
              f"{'requests':>9} {'429s':>5} {'wasted':>7} {'calls/s':>8}")  # fmt: skip
        for processes in PROCESSES:
            for name, shared in (("shared", f"{url}?namespace=goodput{processes}"), ("own", None)):
                r = _run(processes, shared_url=shared, tmp=Path(tmp))
                wasted = r["limited"] / max(1, r["requests"])
                print(f"  {processes:>2} {name:<8} {r['wall']:7.1f} {r['ratio']:8.2f} "
                      f"{r['ok']:4.0f} {r['requests']:9.0f} {r['limited']:5.0f} "
                      f"{wasted:7.1%} {r['goodput']:8.2f}")  # fmt: skip


if __name__ == "__main__":
    report()
