"""``SuiteBatch``: a suite's runs as task specs of one state directory, named the same way
every time the suite runs there, each in its own workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.engine.support import clock

from backstay.adapters.contract import TierConfig
from backstay.config import AdapterOptions, Suite, SuiteTask
from backstay.engine import BATCH_FILE, SuiteBatch, read_identity, suite_adapters
from backstay.errors import ConfigError
from backstay.fallback import Candidate

SCENARIO = {"attempts": [[{"result": "done"}]]}


def _suite(*, name: str = "nightly", workspace: Path | None = None) -> Suite:
    tiers = (TierConfig(tier_id="T0"), TierConfig(tier_id="T1"))
    task = SuiteTask(
        id="hello", adapter="mock", model="m", prompt="hi", workspace=workspace, tiers=tiers, runs=2
    )
    options = AdapterOptions(
        adapter="mock", config={"scenario": SCENARIO}, api_key_env="MOCK_KEY", pass_env=("LANG",)
    )
    return Suite(name=name, tasks=(task,), adapters={"mock": options})


ENV = {"MOCK_KEY": "k-123", "LANG": "C", "HOME": "/root"}


def test_each_run_is_a_spec_with_its_adapter_settings_environment_and_workspace(
    tmp_path: Path,
) -> None:
    batch = SuiteBatch.open(_suite(), tmp_path, environ=ENV, clock=clock())
    specs = batch.specs
    assert [s.task_run_id for s in specs] == ["T0-run_01", "T0-run_02", "T1-run_01", "T1-run_02"]
    first = specs[0]
    assert first.operation_id == f"{batch.workflow_id}:hello:T0-run_01"
    assert batch.workflow_id.startswith("nightly-20260301T120000Z-")
    assert dict(first.env) == {"MOCK_KEY": "k-123", "LANG": "C"}
    assert first.config["scenario"]["attempts"][0][0] == {"result": "done"}
    assert first.workspace == tmp_path / "runs" / "hello" / "T0" / "run_01" / "workspace"


def test_the_same_suite_on_the_same_directory_keeps_its_workflow_id(tmp_path: Path) -> None:
    first = SuiteBatch.open(_suite(), tmp_path, environ=ENV)
    again = SuiteBatch.open(_suite(), tmp_path, environ=ENV)
    assert again.workflow_id == first.workflow_id
    assert [s.operation_id for s in again.specs] == [s.operation_id for s in first.specs]
    kept = read_identity(tmp_path)
    assert kept is not None
    assert kept.workflow_id == first.workflow_id


def test_another_suite_on_the_directory_is_refused(tmp_path: Path) -> None:
    SuiteBatch.open(_suite(), tmp_path, environ=ENV)
    with pytest.raises(ConfigError, match="holds the batch of suite 'nightly'"):
        SuiteBatch.open(_suite(name="other"), tmp_path, environ=ENV)


def test_a_damaged_batch_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / BATCH_FILE).write_text(json.dumps({"format": 99}), encoding="utf-8")
    with pytest.raises(ConfigError, match="is damaged"):
        SuiteBatch.open(_suite(), tmp_path, environ=ENV)


def test_an_unset_key_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MOCK_KEY is not set"):
        SuiteBatch.open(_suite(), tmp_path / "state", environ={})
    assert not (tmp_path / "state").exists()


def test_workspaces_are_copied_once_and_then_left_as_the_agent_left_them(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / "src").mkdir(parents=True)
    (template / "src" / "main.py").write_text("print(1)", encoding="utf-8")
    batch = SuiteBatch.open(_suite(workspace=template), tmp_path / "state", environ=ENV)
    assert batch.prepare() == 4
    workspace = batch.specs[0].workspace
    assert (workspace / "src" / "main.py").read_text(encoding="utf-8") == "print(1)"
    (workspace / "src" / "main.py").write_text("edited", encoding="utf-8")
    assert batch.prepare() == 0
    assert (workspace / "src" / "main.py").read_text(encoding="utf-8") == "edited"


def test_a_copy_cut_short_is_made_again(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    (template / "a.txt").write_text("a", encoding="utf-8")
    batch = SuiteBatch.open(_suite(workspace=template), tmp_path / "state", environ=ENV)
    run_dir = batch.specs[0].workspace.parent
    (run_dir / ".workspace.partial").mkdir(parents=True)
    (run_dir / ".workspace.partial" / "half").write_text("", encoding="utf-8")
    batch.prepare()
    assert sorted(p.name for p in batch.specs[0].workspace.iterdir()) == ["a.txt"]
    assert not (run_dir / ".workspace.partial").exists()


def test_without_a_template_a_run_starts_in_an_empty_workspace(tmp_path: Path) -> None:
    batch = SuiteBatch.open(_suite(), tmp_path, environ=ENV)
    batch.prepare()
    assert list(batch.specs[0].workspace.iterdir()) == []


def test_the_suite_adapters_are_made_from_the_registry() -> None:
    assert list(suite_adapters(_suite())) == ["mock"]


def test_a_tasks_limits_are_written_into_its_adapter_settings(tmp_path: Path) -> None:
    task = SuiteTask(
        id="ask", adapter="anthropic-api", model="m", prompt="hi", limits={"max_output_tokens": 32}
    )
    options = AdapterOptions(adapter="anthropic-api", config={"max_tokens": 4096})
    suite = Suite(name="capped", tasks=(task,), adapters={"anthropic-api": options})
    batch = SuiteBatch.open(suite, tmp_path, environ={}, clock=clock())
    assert batch.specs[0].config["max_tokens"] == 32


@pytest.mark.parametrize(
    ("spare_inherits", "isolated", "inherits"),
    [(True, False, True), (False, False, False), (True, True, False)],
    ids=["both-inherit", "fallback-adapter-isolated", "isolated-env"],
)
def test_a_task_inherits_only_when_every_adapter_of_its_chain_does(
    spare_inherits: bool, isolated: bool, inherits: bool, tmp_path: Path
) -> None:
    spare = Candidate(adapter="openai-api", model="gpt-5-mini")
    task = SuiteTask(id="hello", adapter="mock", model="m", prompt="hi", fallbacks=(spare,))
    adapters = {
        "mock": AdapterOptions(adapter="mock", config={"scenario": SCENARIO}),
        "openai-api": AdapterOptions(adapter="openai-api", inherit_env=spare_inherits),
    }
    suite = Suite(name="nightly", tasks=(task,), adapters=adapters)
    batch = SuiteBatch.open(suite, tmp_path, environ=ENV, inherit_env=not isolated)
    assert [s.inherit_env for s in batch.specs] == [inherits]
