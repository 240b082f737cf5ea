"""TaskSpec: validated task specs, their operation ids and their directories."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.engine.support import spec

from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.engine import TaskSpec, task_run_id
from backstay.errors import ConfigError
from backstay.idempotency.ids import parse_operation_id
from backstay.store.location import StoreLocation


def test_the_operation_id_joins_workflow_task_and_tier_run(tmp_path: Path) -> None:
    task = spec(tmp_path, "fix-bug", tier=TierConfig(tier_id="T0"), run=1)
    assert task.operation_id == "wf:fix-bug:T0-run_01"
    assert parse_operation_id(task.operation_id).task_run_id == "T0-run_01"


def test_a_task_without_a_tier_runs_as_run_nn() -> None:
    assert task_run_id(7) == "run_07"


def test_attempts_write_under_runs_task_tier_run_attempt(tmp_path: Path) -> None:
    task = spec(tmp_path, "t1", tier=TierConfig(tier_id="T1"), run=2)
    assert task.attempt_dir(tmp_path / "state", 3) == (
        tmp_path / "state" / "runs" / "t1" / "T1" / "run_02" / "attempt_3"
    )


def test_a_task_without_a_tier_writes_under_default(tmp_path: Path) -> None:
    assert spec(tmp_path).run_dir(tmp_path).parts[-3:] == ("t1", "default", "run_01")


@pytest.mark.parametrize("bad", ["../up", "a/b", "", "a:b", ".hidden", "x" * 129])
def test_task_ids_that_are_unsafe_in_paths_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match="task_id"):
        spec(tmp_path, bad)


def test_a_tier_id_unsafe_in_paths_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tier\.tier_id"):
        spec(tmp_path, tier=TierConfig(tier_id="T 0"))


def test_the_run_index_starts_at_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="run"):
        spec(tmp_path, run=0)


def test_the_request_checks_apply_when_the_spec_is_made(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="prompt"):
        spec(tmp_path, prompt=None)


def test_a_policy_must_be_a_name_or_a_retry_policy(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="policy"):
        spec(tmp_path, policy=3)


def test_each_attempt_gets_a_request_writing_to_its_own_directory(tmp_path: Path) -> None:
    request = spec(tmp_path, env={"A": "1"}).request(tmp_path / "attempt_1")
    assert isinstance(request, AgentRequest)
    assert (request.output_dir, dict(request.env)) == (tmp_path / "attempt_1", {"A": "1"})


def test_specs_are_frozen(tmp_path: Path) -> None:
    task: TaskSpec = spec(tmp_path)
    with pytest.raises(AttributeError):
        task.task_id = "other"  # type: ignore[misc]


def test_a_request_carries_the_store_it_is_built_with(tmp_path: Path) -> None:
    location = StoreLocation.sqlite(tmp_path / "state")
    task = spec(tmp_path, env={"A": "1"})
    built = task.request(tmp_path / "attempt_1", store=location)
    assert built.store == location
    assert built == dataclasses.replace(task.request(tmp_path / "attempt_1"), store=location)
    assert task.request(tmp_path / "attempt_1").store is None
