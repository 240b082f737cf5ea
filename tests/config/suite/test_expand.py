"""Suite.expand: task × tier × run, with ids that stay the same for the same suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.config.suite_helpers import load, one_task

from backstay import ConfigError
from backstay.adapters.contract import TierConfig
from backstay.config import Suite, SuiteTask, task_run_id, workflow_id
from backstay.idempotency.ids import parse_operation_id


def _suite(*tasks: SuiteTask) -> Suite:
    return Suite(name="nightly", tasks=tasks)


def _task(task_id: str, *, runs: int = 1, tiers: tuple[str, ...] = ("T0",)) -> SuiteTask:
    return SuiteTask(
        id=task_id,
        adapter="mock",
        model="m",
        prompt="hi",
        runs=runs,
        tiers=tuple(TierConfig(tier_id=t) for t in tiers),
    )


def test_runs_go_task_by_task_tier_by_tier_run_by_run() -> None:
    suite = _suite(_task("a", runs=2, tiers=("T0", "T1")), _task("b"))
    assert [run.key for run in suite.expand()] == [
        "a/T0-run_01",
        "a/T0-run_02",
        "a/T1-run_01",
        "a/T1-run_02",
        "b/T0-run_01",
    ]


def test_each_run_knows_its_task_tier_and_number() -> None:
    task = _task("a", tiers=("T0", "T1"))
    run = _suite(task).expand()[1]
    assert (run.task, run.tier.tier_id, run.run, run.task_run_id) == (task, "T1", 1, "T1-run_01")


def test_run_numbers_keep_at_least_two_digits() -> None:
    assert [task_run_id("T0", n) for n in (1, 10, 100)] == ["T0-run_01", "T0-run_10", "T0-run_100"]


def test_the_ids_are_the_same_for_the_same_file(tmp_path: Path) -> None:
    text = one_task("prompt: hi\nruns: 2\ntiers: [{tier_id: A}, {tier_id: B}]")
    first = [run.key for run in load(tmp_path, text).expand()]
    assert first == [run.key for run in load(tmp_path, text).expand()]


def test_the_workflow_id_is_the_suite_name_and_the_run_id() -> None:
    assert workflow_id(_suite(_task("a")), "20250101T120000Z") == "nightly-20250101T120000Z"


@pytest.mark.parametrize("run_id", ["", "a:b", "a b", "-x"])
def test_a_run_id_must_be_usable_in_ids(run_id: str) -> None:
    with pytest.raises(ConfigError):
        workflow_id(_suite(_task("a")), run_id)


def test_a_run_operation_id_is_the_idempotency_key_of_the_run() -> None:
    suite = _suite(_task("hello"))
    (run,) = suite.expand()
    workflow = workflow_id(suite, "r1")
    assert run.operation_id(workflow) == "nightly-r1:hello:T0-run_01"
    parts = parse_operation_id(run.operation_id(workflow))
    assert (parts.workflow_id, parts.task_id, parts.task_run_id) == (workflow, "hello", "T0-run_01")


def test_a_task_is_found_by_its_id() -> None:
    task = _task("b")
    assert _suite(_task("a"), task).task("b") is task


def test_asking_for_a_missing_task_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no task 'x' in suite 'nightly'"):
        _suite(_task("a")).task("x")
