"""SQLiteTaskStore: every change one transaction, checked against the state machine,
kept across processes; foreign or damaged files refused and left as they were."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.engine.support import WALL, spec

from backstay.adapters.usage import Usage
from backstay.engine import (
    AttemptOutcome,
    EscalationStatus,
    InvalidTransition,
    ResolveAction,
    TaskState,
)
from backstay.engine.records import AttemptEnd, NewEscalation, StateChange
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.store import STATE_FILE, SQLiteTaskStore
from backstay.store import _task_rows as rows
from backstay.store.sqlite.operations import SQLiteOperationStore

OP = "wf:t1:run_01"
S = TaskState
LATER = WALL + dt.timedelta(seconds=5)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteTaskStore]:
    with SQLiteTaskStore(tmp_path / "state") as opened:
        opened.register(spec(tmp_path), at=WALL)
        yield opened


def _begin(store: SQLiteTaskStore, number: int = 1) -> None:
    store.begin_attempt(
        OP, number=number, attempt_id=f"{OP}:attempt_{number}", output_dir="d", at=WALL
    )


def _fail(
    store: SQLiteTaskStore,
    failure: Failure,
    state: TaskState,
    escalation: NewEscalation | None = None,
) -> None:
    end = AttemptEnd(
        number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER, failure=failure, delay_s=2.5
    )
    change = StateChange(state=state, reason="r", at=LATER)
    store.end_attempt(OP, end, change, escalation=escalation)


def test_a_registered_task_is_pending_with_no_attempts(store: SQLiteTaskStore) -> None:
    record = store.task(OP)
    assert record is not None
    assert (record.state, record.attempts_used, record.created_at) == (S.PENDING, 0, WALL)


def test_registering_a_known_task_again_keeps_its_state(
    store: SQLiteTaskStore, tmp_path: Path
) -> None:
    _begin(store)
    again = store.register(spec(tmp_path, model="other"), at=LATER)
    assert (again.state, again.attempts_used, again.spec.model) == (S.RUNNING, 1, "other")


def test_tasks_come_back_in_registration_order(store: SQLiteTaskStore, tmp_path: Path) -> None:
    for task_id in ("c", "a", "b"):
        store.register(spec(tmp_path, task_id), at=WALL)
    assert [t.task_id for t in store.tasks()] == ["t1", "c", "a", "b"]


def test_beginning_an_attempt_records_it_running_before_anything_else(
    store: SQLiteTaskStore,
) -> None:
    _begin(store)
    (attempt,) = store.attempts(OP)
    record = store.task(OP)
    assert record is not None
    assert (record.state, record.attempts_used) == (S.RUNNING, 1)
    assert (attempt.number, attempt.outcome, attempt.ended_at) == (1, AttemptOutcome.RUNNING, None)


def test_an_attempt_number_that_is_not_the_next_is_refused(store: SQLiteTaskStore) -> None:
    with pytest.raises(ConfigError, match="not the next one"):
        _begin(store, number=2)


def test_an_attempt_end_keeps_the_failure_losslessly(store: SQLiteTaskStore) -> None:
    failure = Failure(
        code="ERR_HTTP_429_RATE_LIMITED",
        message="slow down",
        retry_after_s=2.0,
        resets_at=LATER,
        provider="anthropic",
        status=429,
        details={"header": "retry-after"},
    )
    _begin(store)
    _fail(store, failure, S.RETRYING)
    (attempt,) = store.attempts(OP)
    assert (attempt.failure, attempt.delay_s, attempt.ended_at) == (failure, 2.5, LATER)


def test_an_attempt_end_keeps_its_usage(store: SQLiteTaskStore) -> None:
    usage = Usage(input_tokens=5, output_tokens=2, cost_usd=0.5, api_calls=1)
    _begin(store)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.SUCCEEDED, ended_at=LATER, usage=usage)
    store.end_attempt(OP, end, StateChange(state=S.SUCCEEDED, reason="ok", at=LATER))
    assert store.attempts(OP)[0].usage == usage


def test_a_move_the_state_machine_refuses_records_nothing(store: SQLiteTaskStore) -> None:
    _begin(store)
    end = AttemptEnd(number=1, outcome=AttemptOutcome.FAILED, ended_at=LATER)
    with pytest.raises(InvalidTransition):
        store.end_attempt(OP, end, StateChange(state=S.PENDING, reason="no", at=LATER))
    assert store.attempts(OP)[0].outcome is AttemptOutcome.RUNNING
    record = store.task(OP)
    assert record is not None
    assert record.state is S.RUNNING


def test_an_escalation_is_recorded_with_its_attempt_and_its_context_redacted(
    store: SQLiteTaskStore,
) -> None:
    failure = Failure(code="ERR_LLM_CONTENT_FILTER")
    context = {"partial_output": "key sk-ant-api03-Secret0123456789abcdefABCDEF"}
    _begin(store)
    _fail(store, failure, S.ESCALATED, escalation=NewEscalation(failure=failure, context=context))
    (escalation,) = store.escalations()
    assert (escalation.task_id, escalation.status) == ("t1", EscalationStatus.OPEN)
    assert "Secret0123456789" not in escalation.context["partial_output"]


def test_an_interrupted_task_keeps_its_attempt_count_and_goes_to_retrying(
    store: SQLiteTaskStore,
) -> None:
    _begin(store)
    record = store.recover_interrupted(OP, at=LATER)
    assert (record.state, record.attempts_used, record.next_run_at) == (S.RETRYING, 1, LATER)
    assert store.attempts(OP)[0].outcome is AttemptOutcome.INTERRUPTED


def test_only_a_running_task_can_be_recovered(store: SQLiteTaskStore) -> None:
    with pytest.raises(InvalidTransition):
        store.recover_interrupted(OP, at=LATER)


def test_a_requeue_can_close_the_tasks_open_escalations(store: SQLiteTaskStore) -> None:
    failure = Failure(code="ERR_LLM_DAILY_QUOTA")
    _begin(store)
    _fail(store, failure, S.PAUSED, escalation=NewEscalation(failure=failure, context={}))
    change = StateChange(state=S.PENDING, reason="reset passed", at=LATER)
    store.change_state(OP, change, close_escalations="reset passed")
    (escalation,) = store.escalations()
    assert (escalation.status, escalation.action, escalation.resolved_by) == (
        EscalationStatus.RESOLVED,
        ResolveAction.RESUME,
        "engine",
    )


def test_resolving_an_unknown_escalation_is_refused(store: SQLiteTaskStore) -> None:
    change = StateChange(state=S.PENDING, reason="r", at=LATER)
    with pytest.raises(ConfigError, match="no escalation 9"):
        store.resolve(9, action=ResolveAction.RETRY, note="", by="me", change=change)


def test_a_new_budget_starts_after_the_attempts_made(store: SQLiteTaskStore) -> None:
    _begin(store)
    _fail(store, Failure(code="ERR_LLM_DAILY_QUOTA"), S.PAUSED)
    change = StateChange(state=S.PENDING, reason="human", at=LATER, new_budget=True)
    assert store.change_state(OP, change).budget_base == 1


def test_an_unknown_task_is_named(store: SQLiteTaskStore) -> None:
    with pytest.raises(ConfigError, match="no task 'wf:zz:run_01'"):
        store.change_state("wf:zz:run_01", StateChange(state=S.RUNNING, reason="r", at=LATER))


def test_records_survive_reopening_the_file(store: SQLiteTaskStore, tmp_path: Path) -> None:
    _begin(store)
    with SQLiteTaskStore(tmp_path / "state") as again:
        record = again.task(OP)
        assert record is not None
        assert (record.state, len(again.attempts(OP))) == (S.RUNNING, 1)


def test_the_operation_store_shares_the_state_file(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path) as tasks, SQLiteOperationStore(tasks.path):
        pass
    with sqlite3.connect(tmp_path / STATE_FILE) as conn:
        components = conn.execute("SELECT component FROM backstay_schema ORDER BY 1").fetchall()
    assert components == [("operations",), ("tasks",)]


def _refused(state_dir: Path, match: str) -> ConfigError:
    path = state_dir / STATE_FILE
    before = path.read_bytes()
    siblings = sorted(p.name for p in state_dir.iterdir())
    with pytest.raises(ConfigError, match=match) as info:
        SQLiteTaskStore(state_dir)
    assert path.read_bytes() == before
    assert sorted(p.name for p in state_dir.iterdir()) == siblings
    assert str(path) in str(info.value)
    return info.value


def test_a_corrupt_state_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    _refused(tmp_path, "not a readable backstay store")


def test_another_applications_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / STATE_FILE) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER)")
    _refused(tmp_path, "not a backstay store")


def test_a_state_file_from_a_newer_backstay_is_refused_and_left_untouched(
    tmp_path: Path,
) -> None:
    SQLiteTaskStore(tmp_path).close()
    with sqlite3.connect(tmp_path / STATE_FILE) as conn:
        conn.execute("UPDATE backstay_schema SET version = 99 WHERE component = 'tasks'")
    conn.close()
    _refused(tmp_path, "newer backstay")


def test_register_all_records_a_batch_at_once_and_keeps_known_states(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path / "state") as store:
        store.register(spec(tmp_path, "t1"), at=WALL)
        store.begin_attempt(OP, number=1, attempt_id=f"{OP}:attempt_1", output_dir="d", at=WALL)
        batch = [spec(tmp_path, "t1", prompt="changed"), spec(tmp_path, "t2")]
        records = store.register_all(batch, at=LATER)
        assert [(r.task_id, r.state, r.spec.prompt) for r in records] == [
            ("t1", S.RUNNING, "changed"),
            ("t2", S.PENDING, "do the task"),
        ]
        assert [r.task_id for r in store.tasks()] == ["t1", "t2"]


def test_a_refused_batch_registers_none_of_its_tasks(tmp_path: Path) -> None:
    with SQLiteTaskStore(tmp_path / "state") as store:
        batch = [spec(tmp_path, "t1"), spec(tmp_path, "t2", config={"x": object()})]
        with pytest.raises(ConfigError, match="t2"):
            store.register_all(batch, at=WALL)
        assert store.tasks() == ()


def test_a_stored_spec_is_decoded_once_however_often_it_is_read(tmp_path: Path) -> None:
    decode = rows.spec_decoder({})
    with SQLiteTaskStore(tmp_path / "state") as store:
        store.register(spec(tmp_path), at=WALL)
        text = sqlite3.connect(store.path).execute("SELECT spec_json FROM backstay_tasks")
        stored = text.fetchone()[0]
    first, _ = decode(stored)
    again, _ = decode(stored)
    assert first is again
    assert first == spec(tmp_path)
