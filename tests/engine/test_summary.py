"""Summary: a batch's totals, from the stored records alone."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from tests.engine.support import WALL, spec

from backstay.adapters.usage import Usage
from backstay.engine import (
    AttemptOutcome,
    AttemptRecord,
    CircuitChange,
    CircuitEntry,
    TaskRecord,
    TaskState,
)
from backstay.engine.summary import summarize
from backstay.failure import Failure
from backstay.fallback import Candidate

S = TaskState


def _task(tmp_path: Path, task_id: str, state: TaskState, **kw: object) -> TaskRecord:
    fields: dict[str, object] = {
        "spec": spec(tmp_path, task_id),
        "state": state,
        "reason": "",
        "attempts_used": 1,
        "budget_base": 0,
        "next_run_at": None,
        "result": None,
        "created_at": WALL,
        "updated_at": WALL,
    }
    fields.update(kw)
    return TaskRecord(**fields)  # type: ignore[arg-type]


def _attempt(task_id: str, number: int, **kw: object) -> AttemptRecord:
    fields: dict[str, object] = {
        "operation_id": f"wf:{task_id}:run_01",
        "number": number,
        "attempt_id": f"wf:{task_id}:run_01:attempt_{number}",
        "output_dir": "d",
        "started_at": WALL,
        "outcome": AttemptOutcome.SUCCEEDED,
    }
    fields.update(kw)
    return AttemptRecord(**fields)  # type: ignore[arg-type]


def test_every_state_is_counted_zeros_included(tmp_path: Path) -> None:
    summary = summarize([_task(tmp_path, "a", S.SUCCEEDED)], [], [])
    assert summary.by_state[S.SUCCEEDED] == 1
    assert set(summary.by_state) == set(TaskState)


def test_failed_attempts_are_counted_by_kind(tmp_path: Path) -> None:
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED")
    attempts = [
        _attempt("a", 1, outcome=AttemptOutcome.FAILED, failure=limited),
        _attempt("a", 2, outcome=AttemptOutcome.FAILED, failure=limited),
        _attempt("a", 3),
    ]
    summary = summarize([_task(tmp_path, "a", S.SUCCEEDED)], attempts, [])
    assert (dict(summary.failures_by_kind), summary.attempts) == ({"rate_limit": 2}, 3)


def test_waits_add_up_the_delays_chosen(tmp_path: Path) -> None:
    attempts = [_attempt("a", 1, delay_s=1.5), _attempt("a", 2, delay_s=2.5)]
    assert summarize([_task(tmp_path, "a", S.SUCCEEDED)], attempts, []).waited_s == 4.0


def test_usage_adds_up_over_every_attempt(tmp_path: Path) -> None:
    attempts = [
        _attempt("a", 1, usage=Usage(input_tokens=10, output_tokens=1, cost_usd=0.5)),
        _attempt("a", 2, usage=Usage(input_tokens=5, output_tokens=2)),
    ]
    usage = summarize([_task(tmp_path, "a", S.SUCCEEDED)], attempts, []).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (15, 3, 0.5)


def test_a_cost_nobody_reported_is_unknown_not_zero(tmp_path: Path) -> None:
    attempts = [_attempt("a", 1, usage=Usage(input_tokens=10))]
    assert summarize([_task(tmp_path, "a", S.SUCCEEDED)], attempts, []).usage.cost_usd is None


def test_the_earliest_reset_of_a_paused_task_is_reported(tmp_path: Path) -> None:
    soon, later = WALL + dt.timedelta(hours=1), WALL + dt.timedelta(hours=2)
    tasks = [
        _task(tmp_path, "a", S.PAUSED, next_run_at=later),
        _task(tmp_path, "b", S.PAUSED, next_run_at=soon),
    ]
    assert summarize(tasks, [], []).next_resume_at == soon


def test_attempts_of_other_tasks_are_left_out(tmp_path: Path) -> None:
    summary = summarize([_task(tmp_path, "a", S.SUCCEEDED)], [_attempt("zz", 1)], [])
    assert summary.attempts == 0


def test_a_batch_is_finished_when_every_task_is_terminal(tmp_path: Path) -> None:
    done = summarize([_task(tmp_path, "a", S.FAILED), _task(tmp_path, "b", S.CANCELLED)], [], [])
    waiting = summarize([_task(tmp_path, "a", S.ESCALATED)], [], [])
    assert (done.finished, waiting.finished) == (True, False)


def test_the_summary_is_json_data(tmp_path: Path) -> None:
    tasks = [_task(tmp_path, "a", S.PAUSED, next_run_at=WALL)]
    data = json.loads(json.dumps(summarize(tasks, [_attempt("a", 1)], []).to_dict()))
    assert (data["by_state"]["paused"], data["next_resume_at"]) == (1, WALL.isoformat())
    assert data["tasks"][0]["task_id"] == "a"


def test_circuit_trips_and_waits_are_counted_for_the_tasks_summarized(tmp_path: Path) -> None:
    def entry(change: CircuitChange, task_id: str, wait_s: float | None = None) -> CircuitEntry:
        op = f"wf:{task_id}:run_01"
        return CircuitEntry(breaker="x/m", change=change, at=WALL, operation_id=op, wait_s=wait_s)

    entries = [
        entry(CircuitChange.OPENED, "a"),
        entry(CircuitChange.WAITED, "a", 4.0),
        entry(CircuitChange.HALF_OPENED, "a"),
        entry(CircuitChange.OPENED, "a"),
        entry(CircuitChange.WAITED, "a", 2.5),
        entry(CircuitChange.CLOSED, "a"),
        entry(CircuitChange.OPENED, "other"),
        entry(CircuitChange.WAITED, "other", 100.0),
    ]
    summary = summarize([_task(tmp_path, "a", S.SUCCEEDED)], [], [], circuits=entries)
    assert (summary.circuit_trips, summary.circuit_waits) == (2, 2)
    assert summary.circuit_waited_s == 6.5
    assert dict(summary.trips_by_breaker) == {"x/m": 2}
    data = summary.to_dict()
    assert (data["circuit_trips"], data["circuit_waited_s"]) == (2, 6.5)


def test_a_task_answered_by_a_fallback_names_both_models(tmp_path: Path) -> None:
    spare = Candidate(adapter="other", model="big", api_key_env="OTHER_KEY")
    task = _task(
        tmp_path,
        "a",
        S.SUCCEEDED,
        spec=spec(tmp_path, "a", fallbacks=(spare,)),
        attempts_used=2,
    )
    attempts = [
        _attempt("a", 1, outcome=AttemptOutcome.FAILED, candidate="fake/m"),
        _attempt("a", 2, candidate=spare.name),
    ]
    (report,) = summarize([task], attempts, []).tasks
    assert (report.requested, report.answered, report.fell_back) == ("fake/m", "other/big", True)


def test_a_task_answered_by_its_own_model_did_not_fall_back(tmp_path: Path) -> None:
    (report,) = summarize([_task(tmp_path, "a", S.SUCCEEDED)], [_attempt("a", 1)], []).tasks
    assert (report.requested, report.answered, report.fell_back) == ("fake/m", "fake/m", False)


def test_a_task_that_has_not_succeeded_has_no_answering_model(tmp_path: Path) -> None:
    failed = _attempt("a", 1, outcome=AttemptOutcome.FAILED)
    (report,) = summarize([_task(tmp_path, "a", S.FAILED)], [failed], []).tasks
    assert (report.answered, report.fell_back) == (None, False)


def test_the_summary_counts_fallen_back_tasks_and_answers_per_model(tmp_path: Path) -> None:
    spare = Candidate(adapter="other", model="big")
    tasks = [
        _task(tmp_path, t, S.SUCCEEDED, spec=spec(tmp_path, t, fallbacks=(spare,)))
        for t in ("a", "b", "c")
    ]
    attempts = [_attempt("a", 1, candidate=spare.name), _attempt("b", 1, candidate=spare.name)]
    attempts.append(_attempt("c", 1))
    summary = summarize(tasks, attempts, [])
    assert (summary.fell_back, summary.answers_by_model) == (2, {"fake/m": 1, "other/big": 2})
    data = summary.to_dict()
    assert (data["fell_back"], data["answers_by_model"]) == (2, {"fake/m": 1, "other/big": 2})
