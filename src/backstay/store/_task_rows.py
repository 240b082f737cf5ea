"""The task component of the state file: its tables, and rows ↔ records (both ways).

Times are stored as Unix seconds (REAL), failures as ``Failure.to_error_info`` JSON (read
back with ``Failure.from_error_info``), usage and results as JSON objects; failures and
results pass ``redact_personal_mapping`` first (nothing personal is kept at rest).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from backstay.adapters.usage import Usage, usage_data
from backstay.engine._spec_codec import decode_spec
from backstay.engine.records import (
    AttemptEnd,
    AttemptOutcome,
    AttemptRecord,
    Escalation,
    EscalationStatus,
    ResolveAction,
    StateChange,
    TaskRecord,
)
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.failure import Failure
from backstay.redact import redact_personal_mapping

__all__ = [
    "ATTEMPTS",
    "ATTEMPT_COLUMNS",
    "COMPONENT",
    "COUNTS",
    "DDL",
    "ESCALATIONS",
    "ESCALATION_COLUMNS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "TASKS",
    "TASK_COLUMNS",
    "SpecDecoder",
    "change_params",
    "changed_row",
    "decode_attempt",
    "decode_escalation",
    "decode_task",
    "dumps",
    "end_params",
    "failure_json",
    "from_ts",
    "register_params",
    "spec_decoder",
    "to_ts",
    "usage_json",
]

COMPONENT: Final = "tasks"
# 2: each attempt records the candidate it ran on (``candidate``; NULL before).
# 3: tasks indexed by state, and counted per state in ``COUNTS`` by triggers (so in the
# very transaction of each change), for readers of a large batch.
SCHEMA_VERSION: Final = 3
TASKS: Final = "backstay_tasks"
ATTEMPTS: Final = "backstay_attempts"
ESCALATIONS: Final = "backstay_escalations"
COUNTS: Final = "backstay_task_counts"
TABLES: Final = (TASKS, ATTEMPTS, ESCALATIONS, COUNTS)

_ADD_ONE: Final = (
    f"INSERT INTO {COUNTS} (state, n) VALUES (NEW.state, 1) "  # noqa: S608 - constant names
    "ON CONFLICT (state) DO UPDATE SET n = n + 1;"
)
# Idempotent, so that migrating a file which has some of them already is safe.
SUMMARY_DDL: Final = (
    f"CREATE INDEX IF NOT EXISTS {TASKS}_state ON {TASKS} (state)",
    f"CREATE TABLE IF NOT EXISTS {COUNTS} (state TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    f"CREATE TRIGGER IF NOT EXISTS {TASKS}_count_in AFTER INSERT ON {TASKS} BEGIN {_ADD_ONE} END",
    f"CREATE TRIGGER IF NOT EXISTS {TASKS}_count_move AFTER UPDATE OF state ON {TASKS} "  # noqa: S608
    f"WHEN OLD.state IS NOT NEW.state BEGIN "
    f"UPDATE {COUNTS} SET n = n - 1 WHERE state = OLD.state; {_ADD_ONE} END",
    f"CREATE TRIGGER IF NOT EXISTS {TASKS}_count_out AFTER DELETE ON {TASKS} BEGIN "  # noqa: S608
    f"UPDATE {COUNTS} SET n = n - 1 WHERE state = OLD.state; END",
    f"DELETE FROM {COUNTS}",  # noqa: S608
    f"INSERT INTO {COUNTS} (state, n) SELECT state, count(*) FROM {TASKS} GROUP BY state",  # noqa: S608
)

DDL: Final = (
    f"""CREATE TABLE {TASKS} (
    operation_id TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_run_id TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL,
    attempts_used INTEGER NOT NULL,
    budget_base INTEGER NOT NULL,
    next_run_at REAL,
    result_json TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
)""",
    f"""CREATE TABLE {ATTEMPTS} (
    operation_id TEXT NOT NULL REFERENCES {TASKS} (operation_id),
    number INTEGER NOT NULL,
    attempt_id TEXT NOT NULL UNIQUE,
    output_dir TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    outcome TEXT NOT NULL,
    failure_json TEXT,
    delay_s REAL,
    exit_code INTEGER,
    usage_json TEXT,
    candidate TEXT,
    PRIMARY KEY (operation_id, number)
)""",
    f"""CREATE TABLE {ESCALATIONS} (
    escalation_id INTEGER PRIMARY KEY,
    operation_id TEXT NOT NULL REFERENCES {TASKS} (operation_id),
    task_id TEXT NOT NULL,
    failure_json TEXT NOT NULL,
    context_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    action TEXT,
    note TEXT NOT NULL DEFAULT '',
    resolved_at REAL,
    resolved_by TEXT
)""",
    f"CREATE INDEX {ESCALATIONS}_open ON {ESCALATIONS} (status, operation_id)",
    *SUMMARY_DDL,
)

# The statements taking the component from each older version to the next.
MIGRATIONS: Final = {
    1: (f"ALTER TABLE {ATTEMPTS} ADD COLUMN candidate TEXT",),
    2: SUMMARY_DDL,
}

TASK_COLUMNS: Final = (
    "spec_json, state, reason, attempts_used, budget_base, next_run_at, result_json, "
    "created_at, updated_at"
)
ATTEMPT_COLUMNS: Final = (
    "operation_id, number, attempt_id, output_dir, started_at, ended_at, outcome, "
    "failure_json, delay_s, exit_code, usage_json, candidate"
)
ESCALATION_COLUMNS: Final = (
    "escalation_id, operation_id, task_id, failure_json, context_json, created_at, status, "
    "action, note, resolved_at, resolved_by"
)


def to_ts(moment: _dt.datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def from_ts(seconds: float | None) -> _dt.datetime | None:
    return None if seconds is None else _dt.datetime.fromtimestamp(seconds, _dt.UTC)


def _at(seconds: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC)


def dumps(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), allow_nan=False, ensure_ascii=False, sort_keys=True)


def failure_json(failure: Failure | None) -> str | None:
    """A failure as stored: its message and details redacted of personal data as well
    (a provider's error may quote the prompt)."""
    return None if failure is None else dumps(redact_personal_mapping(failure.to_error_info()))


def _failure(text: str | None) -> Failure | None:
    return None if text is None else Failure.from_error_info(json.loads(text))


def usage_json(usage: Usage) -> str:
    return dumps(usage_data(usage))


def register_params(spec: TaskSpec, spec_json: str, at: _dt.datetime) -> tuple[Any, ...]:
    """The parameters of ``_task_sql.REGISTER``."""
    when = at.timestamp()
    ids = (spec.operation_id, spec.workflow_id, spec.task_id, spec.task_run_id)
    return (*ids, spec_json, when, when)


def change_params(operation_id: str, change: StateChange) -> tuple[Any, ...]:
    """The parameters of ``_task_sql.CHANGE_STATE``."""
    result = None if change.result is None else dumps(redact_personal_mapping(change.result))
    return (
        change.state.value,
        change.reason,
        to_ts(change.next_run_at),
        change.at.timestamp(),
        result,
        change.new_budget,
        operation_id,
    )


def changed_row(row: tuple[Any, ...], params: tuple[Any, ...]) -> tuple[Any, ...]:
    """The ``TASK_COLUMNS`` row ``row`` becomes when ``_task_sql.CHANGE_STATE`` runs on it
    with ``params`` (``change_params``): what reading it back would give, without the read.
    ``budget_base`` takes ``attempts_used`` as it was, as the statement's ``SET`` does."""
    state, reason, next_run_at, updated_at, result, new_budget, _ = params
    return (
        row[0],
        state,
        reason,
        row[3],
        row[3] if new_budget else row[4],
        next_run_at,
        row[6] if result is None else result,
        row[7],
        updated_at,
    )


def end_params(operation_id: str, end: AttemptEnd) -> tuple[Any, ...]:
    """The parameters of ``_task_sql.END_ATTEMPT``."""
    return (
        end.ended_at.timestamp(),
        end.outcome.value,
        failure_json(end.failure),
        end.delay_s,
        end.exit_code,
        usage_json(end.usage),
        operation_id,
        end.number,
    )


SpecDecoder = Callable[[str], tuple[TaskSpec, tuple[str, ...]]]


def spec_decoder(secrets: Mapping[str, str], *, size: int = 4096) -> SpecDecoder:
    """``decode_spec`` over ``secrets``, memoized on the stored text: a task's spec never
    changes once registered, and its store reads it back at every move."""

    @functools.lru_cache(maxsize=size)
    def decode(text: str) -> tuple[TaskSpec, tuple[str, ...]]:
        return decode_spec(text, secrets=secrets)

    return decode


def decode_task(row: tuple[Any, ...], decode: SpecDecoder) -> TaskRecord:
    spec, missing = decode(row[0])
    return TaskRecord(
        spec=spec,
        state=TaskState(row[1]),
        reason=row[2],
        attempts_used=row[3],
        budget_base=row[4],
        next_run_at=from_ts(row[5]),
        result=None if row[6] is None else json.loads(row[6]),
        created_at=_at(row[7]),
        updated_at=_at(row[8]),
        missing_env=missing,
    )


def decode_attempt(row: tuple[Any, ...]) -> AttemptRecord:
    return AttemptRecord(
        operation_id=row[0],
        number=row[1],
        attempt_id=row[2],
        output_dir=row[3],
        started_at=_at(row[4]),
        ended_at=from_ts(row[5]),
        outcome=AttemptOutcome(row[6]),
        failure=_failure(row[7]),
        delay_s=row[8],
        exit_code=row[9],
        usage=Usage() if row[10] is None else Usage(**json.loads(row[10])),
        candidate=row[11],
    )


def decode_escalation(row: tuple[Any, ...]) -> Escalation:
    failure = _failure(row[3])
    assert failure is not None  # noqa: S101 - the column is NOT NULL
    return Escalation(
        escalation_id=row[0],
        operation_id=row[1],
        task_id=row[2],
        failure=failure,
        context=json.loads(row[4]),
        created_at=_at(row[5]),
        status=EscalationStatus(row[6]),
        action=None if row[7] is None else ResolveAction(row[7]),
        note=row[8],
        resolved_at=from_ts(row[9]),
        resolved_by=row[10],
    )
