"""``SuiteBatch`` builds one spec per task and tier and the other runs from it: each is
the spec that building it whole would give (its run number and workspace its own)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.engine.support import clock

from backstay.adapters.contract import TierConfig
from backstay.config import AdapterOptions, Suite, SuiteTask
from backstay.engine import WORKSPACE_DIR, SuiteBatch
from backstay.engine._spec_codec import encode_spec

ENV = {"MOCK_KEY": "k-123"}


def _suite() -> Suite:
    tiers = (TierConfig(tier_id="T0"), TierConfig(tier_id="T1"))
    tasks = (
        SuiteTask(id="a", adapter="mock", model="m", prompt="hi", tiers=tiers, runs=4),
        SuiteTask(id="b", adapter="mock", model="m2", prompt="yo", runs=3, timeout_s=9.0),
    )
    options = AdapterOptions(adapter="mock", config={"k": 1}, api_key_env="MOCK_KEY")
    return Suite(name="runs", tasks=tasks, adapters={"mock": options})


def test_every_run_equals_the_spec_built_whole(tmp_path: Path) -> None:
    batch = SuiteBatch.open(_suite(), tmp_path, environ=ENV, clock=clock())
    specs = batch.specs
    assert len(specs) == 4 * 2 + 3
    for spec in specs:
        whole = dataclasses.replace(spec, run=spec.run)  # built again, every check run
        assert spec == whole
        assert encode_spec(spec) == encode_spec(whole)
        assert spec.workspace == spec.run_dir(tmp_path.resolve()) / WORKSPACE_DIR
    assert [(s.task_id, s.tier_dir, s.run) for s in specs[:5]] == [
        ("a", "T0", 1), ("a", "T0", 2), ("a", "T0", 3), ("a", "T0", 4), ("a", "T1", 1),
    ]  # fmt: skip
    assert len({s.operation_id for s in specs}) == len(specs)
    assert len({s.workspace for s in specs}) == len(specs)
