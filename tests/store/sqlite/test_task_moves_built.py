"""The record ``SQLiteTaskStore`` returns from a change is built from the row it read
before writing and what it wrote (no read-back): it must be exactly what a read gives
afterwards, on every path (begin, end, retry with a new budget, escalation, resume, a
result with personal data, cancel), and with times from any zone and to the microsecond."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec

from backstay.adapters.usage import Usage
from backstay.engine import AttemptOutcome, TaskState
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange, TaskRecord
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.store import SQLiteTaskStore

S = TaskState
OP = "wf:t1:run_01"
ZONE = dt.timezone(dt.timedelta(hours=5, minutes=30))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteTaskStore]:
    with SQLiteTaskStore(tmp_path / "state", secrets={"API_TOKEN": "tok"}) as opened:
        opened.register(spec(tmp_path, env={"API_TOKEN": "tok", "MODE": "x"}), at=WALL)
        yield opened


def _same(store: SQLiteTaskStore, built: TaskRecord) -> None:
    read = store.task(built.operation_id)
    assert read == built
    assert repr(read) == repr(built)  # the times' zones too, not only their instants


def _begin(store: SQLiteTaskStore, number: int, at: dt.datetime) -> TaskRecord:
    built = store.begin_attempt(
        OP, number=number, attempt_id=f"{OP}:attempt_{number}", output_dir="d", at=at
    )
    _same(store, built)
    return built


def _end(
    store: SQLiteTaskStore,
    number: int,
    change: StateChange,
    escalation: NewEscalation | None = None,
) -> TaskRecord:
    end = AttemptEnd(
        number=number,
        outcome=AttemptOutcome.SUCCEEDED if change.state is S.SUCCEEDED else AttemptOutcome.FAILED,
        ended_at=change.at,
        usage=Usage(input_tokens=3, output_tokens=1),
    )
    built, added = store.end_attempt(OP, end, change, escalation=escalation)
    _same(store, built)
    if escalation is not None:
        assert added is not None
        assert added.task_id == built.task_id == "t1"
    return built


def test_every_path_returns_what_a_read_gives(store: SQLiteTaskStore) -> None:
    at = WALL.astimezone(ZONE) + dt.timedelta(microseconds=123_457)
    began = _begin(store, 1, at)
    assert (began.state, began.attempts_used, began.reason) == (S.RUNNING, 1, "running attempt 1")
    assert began.missing_env == ()
    later = at + dt.timedelta(seconds=1, microseconds=3)
    retry = StateChange(
        state=S.RETRYING, reason="again", at=later, next_run_at=later, new_budget=True
    )
    ended = _end(store, 1, retry)
    assert (ended.budget_base, ended.next_run_at) == (1, later)
    _begin(store, 2, later + dt.timedelta(seconds=2))
    failure = Failure(code="ERR_LLM_CONTENT_FILTER")
    escalated = StateChange(state=S.ESCALATED, reason="look", at=later + dt.timedelta(seconds=3))
    _end(store, 2, escalated, NewEscalation(failure=failure, context={"k": "v"}))
    resumed = store.change_state(
        OP,
        StateChange(state=S.PENDING, reason="resumed", at=later + dt.timedelta(seconds=4)),
        close_escalations="go on",
    )
    _same(store, resumed)
    _begin(store, 3, later + dt.timedelta(seconds=5))
    result = {"answer": "mail me at jane.doe@example.com", "n": 2}
    done = StateChange(
        state=S.SUCCEEDED, reason="ok", at=later + dt.timedelta(seconds=6), result=result
    )
    succeeded = _end(store, 3, done)
    assert succeeded.result is not None
    assert "jane.doe@example.com" not in str(succeeded.result)  # as stored: redacted


def test_a_cancel_and_a_pause_return_what_a_read_gives(store: SQLiteTaskStore) -> None:
    paused = store.change_state(
        OP, StateChange(state=S.PAUSED, reason="wait", at=WALL, next_run_at=WALL)
    )
    _same(store, paused)
    cancelled = store.cancel(OP, StateChange(state=S.CANCELLED, reason="stop", at=WALL))
    _same(store, cancelled)


def test_missing_secrets_are_reported_on_the_built_record(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path / "state") as store:
        store.register(spec(tmp_path, env={"API_TOKEN": "tok"}), at=WALL)
        built = _begin(store, 1, WALL)
        assert built.missing_env == ("API_TOKEN",)


def test_random_times_round_trip_as_a_read_would(store: SQLiteTaskStore) -> None:
    draw = random.Random(7)
    at = WALL
    for number in range(1, 60):
        at += dt.timedelta(seconds=draw.uniform(0, 1e6), microseconds=draw.randrange(10**6))
        zone = dt.timezone(dt.timedelta(minutes=draw.randrange(-12 * 60, 14 * 60)))
        _begin(store, number, at.astimezone(zone))
        at += dt.timedelta(microseconds=draw.randrange(10**6))
        next_run = at + dt.timedelta(seconds=draw.uniform(0, 100))
        change = StateChange(
            state=S.RETRYING,
            reason=f"r{number}",
            at=at.astimezone(zone),
            next_run_at=next_run.astimezone(zone),
            new_budget=draw.random() < 0.3,
        )
        _end(store, number, change)


def test_refused_moves_write_nothing(store: SQLiteTaskStore) -> None:
    before = store.task(OP)
    with pytest.raises(ConfigError, match="not the next one"):
        store.begin_attempt(OP, number=2, attempt_id="x", output_dir="d", at=WALL)
    with pytest.raises(ConfigError, match="no task"):
        store.begin_attempt("nope", number=1, attempt_id="x", output_dir="d", at=WALL)
    assert (store.task(OP), store.attempts(OP)) == (before, ())
    began = _begin(store, 1, WALL)
    end = AttemptEnd(number=2, outcome=AttemptOutcome.FAILED, ended_at=WALL)
    with pytest.raises(ConfigError, match="not running"):
        store.end_attempt(OP, end, StateChange(state=S.RETRYING, reason="r", at=WALL))
    assert store.task(OP) == began
