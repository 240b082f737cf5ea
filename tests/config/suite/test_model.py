"""The suite objects check their own fields when built in code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backstay import ConfigError
from backstay.adapters.contract import TierConfig
from backstay.config import AdapterOptions, Suite, SuiteDefaults, SuiteTask
from backstay.policy.builtin import AGENT_DISPATCH


def _task(**changes: Any) -> SuiteTask:
    fields: dict[str, Any] = {"id": "t", "adapter": "mock", "model": "m", "prompt": "hi"}
    fields.update(changes)
    return SuiteTask(**fields)


def test_a_task_has_documented_defaults() -> None:
    task = _task()
    assert (task.tiers, task.timeout_s, task.policy, task.runs, task.workspace) == (
        (TierConfig(tier_id="T0"),),
        600.0,
        AGENT_DISPATCH,
        1,
        None,
    )


def test_a_task_with_both_prompts_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of prompt and prompt_file"):
        _task(prompt_file=tmp_path / "p.md")


def test_a_task_without_a_prompt_is_refused() -> None:
    with pytest.raises(ConfigError, match="exactly one of prompt and prompt_file"):
        _task(prompt=None)


def test_a_prompt_file_given_as_text_becomes_a_path() -> None:
    assert _task(prompt=None, prompt_file="p.md").prompt_file == Path("p.md")


@pytest.mark.parametrize("runs", [0, 1.5, True, 1001])
def test_a_task_refuses_bad_runs(runs: object) -> None:
    with pytest.raises(ConfigError, match=r"task\.runs"):
        _task(runs=runs)


def test_a_task_refuses_an_empty_tier_list() -> None:
    with pytest.raises(ConfigError, match="at least one tier"):
        _task(tiers=())


def test_a_task_refuses_a_tier_id_given_twice() -> None:
    with pytest.raises(ConfigError, match="tier 'A' is given twice"):
        _task(tiers=(TierConfig(tier_id="A"), TierConfig(tier_id="A")))


def test_a_task_refuses_a_policy_that_is_not_a_retry_policy() -> None:
    with pytest.raises(ConfigError, match=r"task\.policy"):
        _task(policy="standard")


def test_a_suite_refuses_a_task_id_given_twice() -> None:
    with pytest.raises(ConfigError, match="task ids given twice: t"):
        Suite(name="s", tasks=(_task(), _task()))


def test_a_suite_refuses_options_filed_under_another_adapter() -> None:
    with pytest.raises(ConfigError):
        Suite(name="s", tasks=(_task(),), adapters={"mock": AdapterOptions(adapter="x")})


def test_options_for_an_adapter_without_any_are_empty() -> None:
    suite = Suite(name="s", tasks=(_task(),))
    assert suite.options_for("mock") == AdapterOptions(adapter="mock")


def test_defaults_refuse_a_timeout_of_zero() -> None:
    with pytest.raises(ConfigError, match=r"defaults\.timeout_s"):
        SuiteDefaults(timeout_s=0)


def test_adapter_options_freeze_nested_settings() -> None:
    options = AdapterOptions(adapter="mock", config={"scenario": {"attempts": [[{"a": 1}]]}})
    assert isinstance(options.config["scenario"]["attempts"][0], tuple)
    with pytest.raises(TypeError):
        options.config["scenario"]["attempts"][0][0]["a"] = 2


def test_adapter_options_refuse_pass_env_given_as_text() -> None:
    with pytest.raises(ConfigError, match="pass_env"):
        AdapterOptions(adapter="x", pass_env="HOME")  # type: ignore[arg-type]
