"""A half-open probe whose runner died is given back at once (``CircuitGate``), through a
real redis-server and a real ``state.sqlite``: the probe is taken by another process,
killed with SIGKILL while it holds it, and the circuit lets the next task probe long before
``probe_timeout_s`` (300 s by default). A live holder's probe still counts."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest
from tests.breaker.support import SERVER
from tests.redis_server import RedisServer

from backstay.breaker import BreakerSettings
from backstay.breaker.record import CircuitState
from backstay.clock import SYSTEM_CLOCK
from backstay.engine.circuits import CircuitGate
from backstay.errors import CircuitOpen
from backstay.store.location import StoreLocation, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.breakers import RedisBreakerStore
from backstay.store.redis.circuit_log import RedisCircuitLog
from backstay.store.redis.clock import RedisClock
from backstay.store.sqlite.breakers import SQLiteBreakerStore
from backstay.store.sqlite.circuit_log import SQLiteCircuitLog

BREAKER: Final = "mock/mock-model"
FIRST: Final = "wf:t04:run_01"
SECOND: Final = "wf:t05:run_01"
# Opens on one failure, half-open at once, one probe; probe_timeout_s left at its 300 s.
SETTINGS: Final = BreakerSettings(
    failure_threshold=1,
    failure_rate_threshold=None,
    open_duration_s=0.0,
    half_open_max_probes=1,
    success_threshold=1,
)
HOLD_LIMIT_S: Final = 60.0

# Takes the probe in the name of its own runner and holds it (as an attempt in flight).
_HOLDER: Final = textwrap.dedent(
    """
    import sys, time
    from tests.engine.test_circuit_probe_holders import SETTINGS, gate_over
    gate, close = gate_over(sys.argv[1], sys.argv[2])
    permit = gate.acquire_named(sys.argv[3], sys.argv[4])
    print("held", flush=True)
    time.sleep(float(sys.argv[5]))
    close()
    """
)


def gate_over(kind: str, where: str) -> tuple[CircuitGate, Callable[[], None]]:
    """A gate over the breakers of a Redis URL or of a state directory; and its closer."""
    if kind == "redis":
        conn = RedisConnection(parse_store(where))
        gate = CircuitGate(
            SETTINGS,
            log=RedisCircuitLog(conn),
            store=RedisBreakerStore(conn),
            clock=RedisClock(conn),
        )
        return gate, conn.close
    log = SQLiteCircuitLog(where)  # makes the state directory
    store = SQLiteBreakerStore(Path(where) / "state.sqlite")

    def close() -> None:
        store.close()
        log.close()

    gate = CircuitGate(SETTINGS, log=log, store=store, clock=SYSTEM_CLOCK)
    return gate, close


@pytest.fixture(params=["redis", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "state")
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    location: StoreLocation = request.getfixturevalue("redis_location")
    yield "redis", f"{server.url}?namespace={location.namespace}"


@contextlib.contextmanager
def _holder(kind: str, where: str, operation_id: str) -> Iterator[subprocess.Popen[str]]:
    """A process that took the half-open probe for ``operation_id`` and holds it."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    argv = [sys.executable, "-c", _HOLDER, kind, where, BREAKER, operation_id, str(HOLD_LIMIT_S)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, cwd=root)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _open(gate: CircuitGate) -> None:
    gate.acquire_named(BREAKER, "wf:t00:run_01").failure(SERVER)
    assert gate.registry.breaker_for(BREAKER).state is CircuitState.OPEN


def test_a_probe_held_by_a_killed_runner_is_given_to_the_next_task_at_once(
    backend: tuple[str, str],
) -> None:
    kind, where = backend
    gate, close = gate_over(kind, where)
    try:
        _open(gate)
        with _holder(kind, where, FIRST) as proc:
            with pytest.raises(CircuitOpen):  # alive: its probe counts
                gate.acquire_named(BREAKER, SECOND)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        started = dt.datetime.now(dt.UTC)
        permit = gate.acquire_named(BREAKER, SECOND)  # no CircuitOpen: the probe came back
        assert (dt.datetime.now(dt.UTC) - started).total_seconds() < 5.0
        permit.success()
        assert gate.registry.breaker_for(BREAKER).state is CircuitState.CLOSED
    finally:
        close()


def test_a_task_taken_up_again_gets_back_the_probe_its_dead_runner_took(
    backend: tuple[str, str],
) -> None:
    """A runner of another machine (its death cannot be seen from here) took the probe for
    a task; the runner that now holds that task's lease gets the probe, another task not."""
    kind, where = backend
    gate, close = gate_over(kind, where)
    elsewhere, close_elsewhere = gate_over(kind, where)
    elsewhere.owner = "another-host:4242:0a1b2c3d"
    try:
        _open(gate)
        elsewhere.acquire_named(BREAKER, FIRST)  # never reported: its runner is gone
        with pytest.raises(CircuitOpen) as refused:
            gate.acquire_named(BREAKER, SECOND)
        assert refused.value.retry_after_s is None  # every probe is out
        permit = gate.acquire_named(BREAKER, FIRST)
        holders = gate.registry.breaker_for(BREAKER).probe_holders()
        assert holders == (f"{gate.owner} {FIRST}",)
        permit.failure(SERVER)
        assert gate.registry.breaker_for(BREAKER).state is CircuitState.OPEN
    finally:
        close_elsewhere()
        close()
