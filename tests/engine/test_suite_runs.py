"""``SuiteRuns`` and ``SuiteSpecs``: a suite's runs made when they are asked for, each
equal to the spec built whole, in ``Suite.expand()``'s order, with their operation ids
given without making a spec."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import pytest
from tests.engine.support import clock

from backstay.adapters.contract import TierConfig
from backstay.config import AdapterOptions, Suite, SuiteTask
from backstay.engine import WORKSPACE_DIR, SuiteBatch, TaskSpec
from backstay.engine.registration import SpecFamilies

ENV = {"MOCK_KEY": "k-123"}


def _suite(*, runs: int = 3) -> Suite:
    tiers = (TierConfig(tier_id="T0"), TierConfig(tier_id="T1"))
    tasks = (
        SuiteTask(id="a", adapter="mock", model="m", prompt="hi", tiers=tiers, runs=runs),
        SuiteTask(id="b", adapter="mock", model="m2", prompt="yo", runs=2),
    )
    options = AdapterOptions(adapter="mock", config={"k": 1}, api_key_env="MOCK_KEY")
    return Suite(name="lazy", tasks=tasks, adapters={"mock": options})


def test_the_runs_follow_the_suites_expansion_and_equal_specs_built_whole(tmp_path: Path) -> None:
    suite = _suite()
    batch = SuiteBatch.open(suite, tmp_path, environ=ENV, clock=clock())
    specs = batch.specs
    expanded = suite.expand()
    assert len(specs) == len(batch.runs) == len(expanded) == 3 * 2 + 2
    for i, run in enumerate(expanded):
        spec = specs[i]
        assert (spec.task_id, spec.tier, spec.run) == (run.task.id, run.tier, run.run)
        assert spec == dataclasses.replace(spec, run=spec.run)  # every check run again
        assert spec.workspace == spec.run_dir(tmp_path.resolve()) / WORKSPACE_DIR
        assert batch.runs[i].spec == spec
    assert list(specs) == [specs[i] for i in range(len(specs))]
    assert [r.spec for r in batch.runs] == list(specs)


def test_the_operation_ids_are_the_specs_own(tmp_path: Path) -> None:
    batch = SuiteBatch.open(_suite(runs=12), tmp_path, environ=ENV, clock=clock())
    ids = batch.operation_ids()
    assert list(ids) == [spec.operation_id for spec in batch.specs]
    assert ids[11].endswith(":a:T0-run_12")
    assert len(set(ids)) == len(ids)


def test_indexes_slices_and_the_end_as_a_sequence_has_them(tmp_path: Path) -> None:
    specs = SuiteBatch.open(_suite(), tmp_path, environ=ENV, clock=clock()).specs
    whole = list(specs)
    assert specs[-1] == whole[-1]
    assert specs[-len(whole)] == whole[0]
    assert specs[2:5] == whole[2:5]
    assert specs[::3] == whole[::3]
    assert specs[5:100] == whole[5:]
    with pytest.raises(IndexError):
        specs[len(whole)]
    with pytest.raises(IndexError):
        specs[-len(whole) - 1]


def test_the_batch_is_spec_families_of_one_task_and_tier_each(tmp_path: Path) -> None:
    specs = SuiteBatch.open(_suite(), tmp_path, environ=ENV, clock=clock()).specs
    assert isinstance(specs, SpecFamilies)
    firsts = specs.representatives()
    assert [(s.task_id, s.tier_dir, s.run) for s in firsts] == [
        ("a", "T0", 1), ("a", "T1", 1), ("b", "T0", 1),
    ]  # fmt: skip
    assert firsts == (specs[0], specs[3], specs[6])


def test_the_runs_workspaces_are_made_a_range_at_a_time(tmp_path: Path) -> None:
    batch = SuiteBatch.open(_suite(), tmp_path, environ=ENV, clock=clock())
    batch.prepare_range(2, 4)
    made = [spec.workspace.is_dir() for spec in batch.specs]
    assert made == [False, False, True, True, False, False, False, False]


def _specs_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is TaskSpec)


def test_a_batch_of_thousands_of_runs_holds_one_spec_a_task_and_tier(tmp_path: Path) -> None:
    before = _specs_alive()
    batch = SuiteBatch.open(_suite(runs=1000), tmp_path, environ=ENV, clock=clock())
    ids = batch.operation_ids()
    assert len(ids) == len(batch.specs) == 2002
    assert _specs_alive() - before == 3  # the first run of each task and tier
