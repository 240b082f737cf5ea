"""``suite_diff``: the fields an edited suite changes in the stored specs, the tasks it
adds and those it no longer has (pure)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.engine.support import WALL, spec

from backstay.engine import TaskRecord, TaskSpec, TaskState, suite_diff


def _record(task: TaskSpec, *, missing: tuple[str, ...] = ()) -> TaskRecord:
    return TaskRecord(
        spec=task,
        state=TaskState.FAILED,
        reason="r",
        attempts_used=1,
        budget_base=0,
        next_run_at=None,
        result=None,
        created_at=WALL,
        updated_at=WALL + dt.timedelta(seconds=1),
        missing_env=missing,
    )


def test_an_unchanged_suite_has_no_diff(tmp_path: Path) -> None:
    assert not suite_diff([_record(spec(tmp_path))], [spec(tmp_path)])


def test_the_changed_fields_are_named_per_task(tmp_path: Path) -> None:
    edited = spec(tmp_path, prompt="do it better", model="m2")
    diff = suite_diff([_record(spec(tmp_path))], [edited])
    (change,) = diff.changed
    assert (change.task_id, change.state, change.fields) == (
        "t1",
        TaskState.FAILED,
        ("model", "prompt"),
    )


def test_a_redacted_prompt_changed_is_one_field(tmp_path: Path) -> None:
    old = spec(tmp_path, prompt="mail ann@example.com")
    new = spec(tmp_path, prompt="mail bob@example.com")
    (change,) = suite_diff([_record(old)], [new]).changed
    assert change.fields == ("prompt",)


def test_added_and_removed_tasks_are_named(tmp_path: Path) -> None:
    diff = suite_diff([_record(spec(tmp_path, task_id="gone"))], [spec(tmp_path, task_id="new")])
    assert (diff.added, diff.removed) == (("wf:new:run_01",), ("wf:gone:run_01",))


def test_a_secret_not_in_this_environment_is_no_change(tmp_path: Path) -> None:
    keyed = spec(tmp_path, env={"API_KEY": "sk-canary-0123456789abcdef"})
    stored = _record(spec(tmp_path), missing=("API_KEY",))
    assert not suite_diff([stored], [keyed])
