"""IdempotencyGuard.run_sync: the same protocol for plain functions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
from tests.idempotency.support import OP, ActingClock, Calls, acquire

from backstay.errors import ConfigError
from backstay.idempotency.errors import LeaseLost, OperationInProgress
from backstay.idempotency.guard import IdempotencyGuard
from backstay.idempotency.memory import MemoryOperationStore
from backstay.idempotency.records import Acquired
from backstay.idempotency.settings import GuardSettings
from backstay.testing import FakeClock

SETTINGS = GuardSettings(lease_ttl_s=3.0, wait_timeout_s=10.0, poll_initial_s=0.5, poll_max_s=2.0)


def _guard(clock: FakeClock) -> tuple[IdempotencyGuard, MemoryOperationStore]:
    store = MemoryOperationStore(clock=clock)
    return IdempotencyGuard(store, settings=SETTINGS, owner="me", clock=clock), store


def test_a_cached_result_is_returned_without_calling_fn() -> None:
    guard, store = _guard(FakeClock())
    store.complete(acquire(store, "earlier"), {"answer": 42})
    calls = Calls()
    assert guard.run_sync(OP, calls.sync) == {"answer": 42}
    assert calls.count == 0


def test_fn_runs_once_and_later_runs_get_its_result() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls()
    assert guard.run_sync(OP, calls.sync) == guard.run_sync(OP, calls.sync) == {"call": 1}
    assert calls.count == 1


def test_a_failure_propagates_and_the_next_claimant_runs() -> None:
    guard, store = _guard(FakeClock())
    error = ValueError("bad output")

    def fail() -> Mapping[str, Any]:
        raise error

    with pytest.raises(ValueError, match="bad output") as info:
        guard.run_sync(OP, fail)
    assert info.value is error
    assert store.get(OP) is None
    assert guard.run_sync(OP, Calls().sync) == {"call": 1}


def test_a_busy_operation_raises_in_progress_when_told_not_to_wait() -> None:
    guard, store = _guard(FakeClock())
    acquire(store, "other")
    with pytest.raises(OperationInProgress, match="held by 'other'"):
        guard.run_sync(OP, Calls().sync, wait=False)


def test_a_waiter_gives_up_after_its_wait_timeout() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)
    acquire(store, "other", ttl_s=1_000.0)
    with pytest.raises(OperationInProgress):
        guard.run_sync(OP, Calls().sync, wait_timeout_s=3.0)
    assert sum(clock.sleeps) == pytest.approx(3.0)


def test_a_waiter_returns_the_result_the_holder_completes() -> None:
    clock = ActingClock()
    guard, store = _guard(clock)
    lease = acquire(store, "other")

    def holder_finishes() -> None:
        store.complete(lease, {"by": "other"})

    clock.on_sleep = holder_finishes
    calls = Calls()
    assert guard.run_sync(OP, calls.sync) == {"by": "other"}
    assert calls.count == 0


def test_a_late_result_after_a_takeover_is_refused_with_lease_lost() -> None:
    clock = FakeClock()
    guard, store = _guard(clock)

    def overtaken() -> Mapping[str, Any]:
        clock.advance(SETTINGS.lease_ttl_s)
        acquire(store, "intruder")
        return {"late": True}

    with pytest.raises(LeaseLost, match="was not recorded"):
        guard.run_sync(OP, overtaken)
    assert store.get(OP) is None


def test_a_non_idempotent_operation_without_a_key_is_refused() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls()
    with pytest.raises(ConfigError, match="non-idempotent operations without a key are refused"):
        guard.run_non_idempotent_sync(None, calls.sync)
    assert calls.count == 0


def test_a_non_idempotent_operation_with_a_key_runs_once() -> None:
    guard, _ = _guard(FakeClock())
    calls = Calls()
    guard.run_non_idempotent_sync(OP, calls.sync)
    guard.run_non_idempotent_sync(OP, calls.sync)
    assert calls.count == 1


def test_the_keeper_thread_stops_as_soon_as_fn_returns() -> None:
    store = MemoryOperationStore()
    guard = IdempotencyGuard(store, settings=GuardSettings(lease_ttl_s=300.0))
    started = time.monotonic()
    guard.run_sync(OP, Calls().sync)
    assert time.monotonic() - started < 1.0


def test_the_lease_is_released_when_fn_raises_a_base_exception() -> None:
    guard, store = _guard(FakeClock())

    def interrupted() -> Mapping[str, Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        guard.run_sync(OP, interrupted)
    assert isinstance(store.claim(OP, "next", 1.0), Acquired)
