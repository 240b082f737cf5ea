"""``SuiteRuns.workspaces``: the workspaces and templates of a range of runs, without
their specs, equal those of the runs' ``BatchRun``s; ``SuiteBatch.prepare_range`` makes
them as ``BatchRun.prepare`` does."""

from __future__ import annotations

from pathlib import Path

from tests.engine.support import clock

from backstay.adapters.contract import TierConfig
from backstay.config import AdapterOptions, Suite, SuiteTask
from backstay.engine import SuiteBatch

ENV = {"MOCK_KEY": "k-123"}


def _suite(template: Path) -> Suite:
    tiers = (TierConfig(tier_id="T0"), TierConfig(tier_id="T1"))
    tasks = (
        SuiteTask(id="a", adapter="mock", model="m", prompt="hi", tiers=tiers, runs=12),
        SuiteTask(id="b", adapter="mock", model="m2", prompt="yo", runs=1, workspace=template),
        SuiteTask(id="c", adapter="mock", model="m", prompt="x", runs=105, workspace=template),
    )
    options = AdapterOptions(adapter="mock", config={"k": 1}, api_key_env="MOCK_KEY")
    return Suite(name="ws", tasks=tasks, adapters={"mock": options})


def test_the_workspaces_of_any_range_equal_those_of_its_runs(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    batch = SuiteBatch.open(_suite(template), tmp_path / "state", environ=ENV, clock=clock())
    runs = batch.runs
    total = len(runs)
    assert total == 12 * 2 + 1 + 105
    bounds = [0, 1, 2, 11, 12, 13, 23, 24, 25, 26, 99, total - 1, total, total + 5, -1, -7]
    for start in bounds:
        for stop in bounds:
            expected = [(run.spec.workspace, run.template) for run in runs[start:stop]]
            assert list(runs.workspaces(start, stop)) == expected, (start, stop)


def test_a_range_is_prepared_as_its_runs_are(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / "src").mkdir(parents=True)
    (template / "src" / "main.py").write_text("print(1)\n")
    one = SuiteBatch.open(_suite(template), tmp_path / "one", environ=ENV, clock=clock())
    two = SuiteBatch.open(_suite(template), tmp_path / "two", environ=ENV, clock=clock())
    one.prepare_range(20, 40)
    for run in two.runs[20:40]:
        run.prepare()

    def tree(root: Path) -> list[tuple[str, int]]:
        return sorted(
            (str(p.relative_to(root)), p.stat().st_mode)
            for p in root.rglob("*")
            if p.relative_to(root).parts[0] == "runs"
        )

    assert tree(tmp_path / "one") == tree(tmp_path / "two")
    made = [spec.workspace.is_dir() for spec in one.specs]
    assert made == [20 <= i < 40 for i in range(len(made))]
