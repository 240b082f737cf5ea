"""A spec's operation id, primary candidate and folders, as kept or joined at once, equal
those made part by part for every run, tier and window."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from tests.engine.support import spec

from backstay.adapters.contract import TierConfig
from backstay.engine import TaskSpec, task_run_id
from backstay.engine.task import attempt_id
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.idempotency.ids import attempt_id as make_attempt_id
from backstay.idempotency.ids import operation_id as make_operation_id

_TIERS = [None, TierConfig(tier_id="T0"), TierConfig(tier_id="tier.b-2_x")]


@pytest.mark.parametrize(
    ("tier", "run", "window"),
    list(itertools.product(_TIERS, [1, 2, 9, 10, 99, 100, 1234], [None, 1, 8000])),
)
def test_the_ids_and_folders_equal_those_made_part_by_part(
    tmp_path: Path, tier: TierConfig | None, run: int, window: int | None
) -> None:
    for workflow, task_id, model in (("wf", "t1", "m"), ("suite-2026T1Z-ab12", "a.b_c-d", "gpt-x")):
        task = spec(
            tmp_path, task_id, workflow_id=workflow, tier=tier, run=run, model=model,
            context_window=window,
        )  # fmt: skip
        for _ in range(2):  # made, then kept
            assert task.operation_id == make_operation_id(workflow, task_id, task_run_id(run, tier))
            primary = Candidate(adapter=task.adapter, model=model, context_window=window)
            assert task.primary == primary
            assert type(task.primary.context_window) is type(primary.context_window)
            assert task.candidates == (primary, *task.fallbacks)
            for state in (tmp_path / "state", Path("rel/state"), Path("/")):
                parts = state / "runs" / task_id / task.tier_dir / f"run_{run:02d}"
                assert task.run_dir(state) == parts
                assert str(task.run_dir(state)) == str(parts)
                for number in (1, 7, 12):
                    assert task.attempt_dir(state, number) == parts / f"attempt_{number}"


def test_a_window_of_another_type_is_checked_each_time(tmp_path: Path) -> None:
    good = spec(tmp_path, context_window=1)
    assert good.primary.context_window == 1
    for bad in (True, 1.0, 0):
        with pytest.raises(ConfigError, match="context_window"):
            spec(tmp_path, context_window=bad)


def test_two_specs_of_other_runs_and_tiers_never_share_an_id(tmp_path: Path) -> None:
    ids = {
        spec(tmp_path, tier=tier, run=run).operation_id for tier in _TIERS for run in range(1, 40)
    }
    assert len(ids) == len(_TIERS) * 39
    assert isinstance(spec(tmp_path), TaskSpec)


def test_an_attempt_id_kept_equals_the_one_made(tmp_path: Path) -> None:
    for tier in _TIERS:
        for run in (1, 2, 11):
            op = spec(tmp_path, tier=tier, run=run).operation_id
            for number in (1, 2, 3, 10, 250):
                for _ in range(2):  # made, then kept
                    assert attempt_id(op, number) == make_attempt_id(op, number)
    for bad_op, number in (("not an id", 1), ("wf:t1:run_01", 0), ("wf:t1:run_01", True)):
        for _ in range(2):
            with pytest.raises(ConfigError):
                make_attempt_id(bad_op, number)
            with pytest.raises(ConfigError):
                attempt_id(bad_op, number)
