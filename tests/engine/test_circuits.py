"""The engine's circuit breakers (``CircuitGate``): waits for open circuits, on a fake clock."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import OK, QUICK, ScriptedAdapter, clock, engine, spec

from backstay.breaker import BreakerSettings
from backstay.engine import CircuitChange, TaskDeferred, TaskState, breaker_key
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.store import SQLiteCircuitLog
from backstay.testing import FakeClock, capture_events

S = TaskState
DOWN: Final = Failure(code="ERR_HTTP_503_UNAVAILABLE")
RATE_LIMITED: Final = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=1.0)
# Trips on the second consecutive counted failure; a probe after 10 s.
TWO: Final = BreakerSettings(failure_threshold=2, failure_rate_threshold=None, open_duration_s=10.0)


def test_an_open_circuit_makes_the_task_wait_without_spending_an_attempt(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, OK]})
    fake = clock()
    with engine(tmp_path, adapter, fake=fake, breaker=TWO, concurrency=1) as eng:
        summary = eng.run_sync([spec(tmp_path)])
        record = eng.store.task("wf:t1:run_01")
    assert record is not None
    # Attempt 2 opened the circuit; its 2 s retry delay, then the 8 s left of the 10 s open.
    assert (record.state, record.attempts_used, len(adapter.calls)) == (S.SUCCEEDED, 3, 3)
    assert fake.sleeps == [pytest.approx(1.0), pytest.approx(2.0), pytest.approx(8.0)]
    assert (summary.circuit_trips, summary.circuit_waits) == (1, 1)
    assert summary.circuit_waited_s == pytest.approx(8.0)
    assert summary.waited_s == pytest.approx(3.0)  # the retry delays alone
    assert dict(summary.trips_by_breaker) == {"fake/m": 1}


def test_the_circuit_log_tells_the_story_and_names_the_tasks(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, OK]})
    with engine(tmp_path, adapter, breaker=TWO, concurrency=1) as eng:
        eng.run_sync([spec(tmp_path)])
        entries = eng.circuit_log.entries()
    assert [e.change for e in entries] == [
        CircuitChange.OPENED,
        CircuitChange.WAITED,
        CircuitChange.HALF_OPENED,
        CircuitChange.CLOSED,
    ]
    assert {e.operation_id for e in entries} == {"wf:t1:run_01"}
    assert {e.breaker for e in entries} == {"fake/m"}
    assert entries[0].reason == "2 consecutive failures; open for 10 s"


def test_circuit_events_name_the_task_whose_attempt_caused_them(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, OK]})
    with capture_events() as events, engine(tmp_path, adapter, breaker=TWO) as eng:
        eng.run_sync([spec(tmp_path)])
    circuit = [e for e in events if e.name.startswith("circuit.")]
    assert [e.name for e in circuit] == ["circuit.opened", "circuit.half_opened", "circuit.closed"]
    assert {e.operation for e in circuit} == {"wf:t1:run_01"}
    deferred = [e for e in events if isinstance(e, TaskDeferred)]
    assert len(deferred) == 1
    assert (deferred[0].breaker, deferred[0].attempt) == ("fake/m", 3)
    assert deferred[0].wait_s == pytest.approx(8.0)


def test_a_wait_is_recorded_before_the_task_sleeps(tmp_path: Path) -> None:
    seen: list[list[CircuitChange]] = []

    class Watching(FakeClock):
        async def asleep(self, seconds: float) -> None:
            with SQLiteCircuitLog(tmp_path) as log:  # another connection to the state file
                seen.append([e.change for e in log.entries()])
            await super().asleep(seconds)

    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, OK]})
    fake = Watching(wall=dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC))
    with engine(tmp_path, adapter, fake=fake, breaker=TWO, concurrency=1) as eng:
        eng.run_sync([spec(tmp_path)])
    # Before the third sleep (the wait for the open circuit), the wait is in the file.
    assert seen[2] == [CircuitChange.OPENED, CircuitChange.WAITED]


def test_a_failed_probe_opens_the_circuit_again(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, DOWN, OK]})
    fake = clock()
    with engine(tmp_path, adapter, fake=fake, breaker=TWO, concurrency=1) as eng:
        summary = eng.run_sync([spec(tmp_path)])
        changes = [e.change for e in eng.circuit_log.entries()]
    assert summary.count(S.SUCCEEDED) == 1
    assert summary.attempts == 4
    assert summary.circuit_trips == 2
    assert changes.count(CircuitChange.OPENED) == 2
    assert changes[-1] is CircuitChange.CLOSED


def test_a_task_waits_for_the_circuit_another_task_opened(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN]})
    specs = [
        spec(tmp_path, "t1", policy=dataclasses.replace(QUICK, max_attempts=2)),
        spec(tmp_path, "t2"),
    ]
    with engine(tmp_path, adapter, breaker=TWO, concurrency=1) as eng:
        summary = eng.run_sync(specs)
        waits = [e for e in eng.circuit_log.entries() if e.change is CircuitChange.WAITED]
        t2 = eng.store.task("wf:t2:run_01")
    assert (summary.count(S.FAILED), summary.count(S.SUCCEEDED)) == (1, 1)
    assert t2 is not None
    assert t2.attempts_used == 1  # the wait was not an attempt
    assert [w.operation_id for w in waits] == ["wf:t2:run_01"]
    assert summary.circuit_trips == 1


def test_each_adapter_and_model_has_its_own_circuit(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, OK]})
    specs = [spec(tmp_path, "t1"), spec(tmp_path, "t2", model="other")]
    with engine(tmp_path, adapter, breaker=TWO, concurrency=2) as eng:
        summary = eng.run_sync(specs)
        waiting = {e.operation_id for e in eng.circuit_log.entries() if e.change == "waited"}
    assert summary.count(S.SUCCEEDED) == 2
    assert waiting == {"wf:t1:run_01"}
    assert breaker_key(specs[1]) == ("fake", "other")


def test_failures_that_say_nothing_about_the_provider_never_open_it(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [RATE_LIMITED, RATE_LIMITED, RATE_LIMITED, OK]})
    with engine(tmp_path, adapter, breaker=TWO) as eng:
        summary = eng.run_sync([spec(tmp_path)])
        entries = eng.circuit_log.entries()
    assert (summary.count(S.SUCCEEDED), summary.attempts) == (1, 4)
    assert (summary.circuit_trips, entries) == (0, ())


def test_without_a_breaker_the_engine_never_waits_for_one(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [DOWN, DOWN, DOWN, OK]})
    fake = clock()
    with engine(tmp_path, adapter, fake=fake, breaker=None) as eng:
        summary = eng.run_sync([spec(tmp_path)])
    assert fake.sleeps == [pytest.approx(1.0), pytest.approx(2.0), pytest.approx(4.0)]
    assert (summary.circuit_trips, summary.circuit_waits) == (0, 0)


def test_an_open_circuit_is_still_open_for_the_next_engine_on_the_state_dir(
    tmp_path: Path,
) -> None:
    fake = clock()
    with engine(tmp_path, ScriptedAdapter({"t1": [DOWN, DOWN]}), fake=fake, breaker=TWO) as eng:
        eng.run_sync([spec(tmp_path, policy=dataclasses.replace(QUICK, max_attempts=2))])
    fake.sleeps.clear()
    with engine(tmp_path, ScriptedAdapter(), fake=fake, breaker=TWO) as eng:
        summary = eng.run_sync([spec(tmp_path, "t2")])
    assert summary.count(S.SUCCEEDED) == 1
    assert summary.circuit_waits == 1
    assert fake.sleeps == [pytest.approx(10.0)]


def test_breaker_settings_of_the_wrong_type_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="breaker: must be a BreakerSettings or None"):
        engine(tmp_path, ScriptedAdapter(), breaker={"failure_threshold": 2})
