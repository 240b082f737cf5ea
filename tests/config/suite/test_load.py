"""load_suite: a suite file becomes frozen objects, or one error listing every problem."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.config.suite_helpers import SCENARIO, load, one_task, problems, write

from backstay import ConfigError
from backstay.adapters.contract import TierConfig
from backstay.config import AdapterOptions, Suite, SuiteTask, load_suite
from backstay.policy.builtin import AGENT_DISPATCH

EXAMPLE = f"""\
suite: nightly
description: every night
defaults:
  adapter: mock
  model: claude-sonnet-4-5
  timeout_s: 600
  policy: agent_dispatch
adapters:
  mock: {{scenario: {SCENARIO}}}
tasks:
  - id: hello
    prompt: "Say hello"
    runs: 3
  - id: justfile-to-makefile
    prompt_file: prompts/justfile.md
    workspace: fixtures/justfile-repo
    tiers:
      - {{tier_id: T0, tier_name: Vanilla}}
      - tier_id: T1
        tier_name: Prompted
        tier_prompt: "Think step by step."
        tools_enabled: false
"""


@pytest.fixture
def example(tmp_path: Path) -> Suite:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "justfile.md").write_text("Convert the justfile.", encoding="utf-8")
    (tmp_path / "fixtures" / "justfile-repo").mkdir(parents=True)
    return load(tmp_path, EXAMPLE)


def test_the_example_loads_into_a_suite(example: Suite) -> None:
    assert (example.name, example.description) == ("nightly", "every night")
    assert [task.id for task in example.tasks] == ["hello", "justfile-to-makefile"]
    assert example.defaults.model == "claude-sonnet-4-5"
    assert example.defaults.policy is AGENT_DISPATCH


def test_a_task_carries_its_effective_settings(example: Suite, tmp_path: Path) -> None:
    hello, justfile = example.tasks
    assert hello == SuiteTask(
        id="hello",
        adapter="mock",
        model="claude-sonnet-4-5",
        prompt="Say hello",
        timeout_s=600.0,
        policy=AGENT_DISPATCH,
        runs=3,
    )
    assert justfile.prompt_file == (tmp_path / "prompts" / "justfile.md").resolve()
    assert justfile.workspace == (tmp_path / "fixtures" / "justfile-repo").resolve()
    assert justfile.tiers[1] == TierConfig(
        tier_id="T1", tier_name="Prompted", system_prompt="Think step by step.", tools_enabled=False
    )


def test_adapter_settings_are_kept_per_adapter(example: Suite) -> None:
    options = example.adapters["mock"]
    assert isinstance(options, AdapterOptions)
    assert options.config["scenario"]["attempts"][0][0]["result"] == "done"


def test_the_suite_and_its_parts_are_frozen(example: Suite) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        example.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        example.adapters["mock"] = AdapterOptions(adapter="mock")  # type: ignore[index]
    with pytest.raises(TypeError):
        example.adapters["mock"].config["scenario"] = {}  # type: ignore[index]


def test_the_suite_remembers_its_file(tmp_path: Path) -> None:
    path = write(tmp_path, one_task())
    assert load_suite(path).file == path


def test_every_problem_is_listed_at_once_with_line_and_key_path(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        suite: s
        defaults: {adapter: mock, model: m, runs: 0}
        tasks:
          - id: a
            promt: hi
        """,
    )
    assert found == [
        "2: defaults.runs: must be >= 1, got 0",
        "2: defaults.adapter: adapter 'mock' needs settings under adapters.mock: "
        "scenario: is required",
        "4: tasks[0]: give prompt (the text) or prompt_file (a file holding it)",
        "5: tasks[0].promt: unknown key (did you mean 'prompt'?); known: id, description, "
        "prompt, prompt_file, workspace, limits, adapter, model, timeout_s, stall_timeout_s, "
        "runs, tenant, context_window, policy, tiers, budget, fallbacks",
    ]


def test_problems_are_listed_in_line_order(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\nruns: 0\ntimeout_s: -1"))
    assert [line.split(":")[0] for line in found] == ["8", "9"]


def test_an_unknown_top_level_key_gets_a_suggestion(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task() + "defualts: {}\n")
    assert found == [
        "8: defualts: unknown key (did you mean 'defaults'?); known: suite, description, "
        "defaults, adapters, tasks, budget, tenants, storage, gateway"
    ]


def test_the_suite_name_is_required(tmp_path: Path) -> None:
    text = one_task().replace("suite: s\n", "")
    assert problems(tmp_path, text) == ["suite: is required: the suite's name, e.g. suite: nightly"]


def test_the_suite_name_must_be_usable_in_ids(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task().replace("suite: s", "suite: 'a:b'"))
    assert found == [
        "1: suite: must be a letter or digit, then letters, digits, '_', '.' or '-', got 'a:b'"
    ]


def test_tasks_are_required(tmp_path: Path) -> None:
    assert problems(tmp_path, "suite: s\n") == ["tasks: is required: the list of tasks"]


def test_an_empty_task_list_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, "suite: s\ntasks: []\n")
    assert found == ["2: tasks: must be a list of at least one task, got an empty list"]


def test_tasks_must_be_a_list(tmp_path: Path) -> None:
    found = problems(tmp_path, "suite: s\ntasks: {id: a}\n")
    assert found == ["2: tasks: must be a list of at least one task, got a mapping"]


def test_a_task_must_be_a_mapping(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task() + "  - just text\n")
    assert found == [
        "8: tasks[1]: must be a mapping with id and prompt or prompt_file, got 'just text'"
    ]


def test_a_missing_file_is_one_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_suite(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: no such file"


def test_an_empty_file_is_a_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, "") == ["must be a mapping with suite and tasks, got an empty file"]


def test_a_file_that_is_not_a_mapping_is_a_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, "- a\n") == ["must be a mapping with suite and tasks, got a list"]


def test_invalid_yaml_names_its_line(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, "suite: s\ntasks: [\n")
    assert found.startswith("3: invalid YAML")


def test_a_key_given_twice_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task() + "suite: again\n")
    assert found == ["8: suite: is given twice (first on line 1)"]
