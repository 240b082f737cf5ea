"""harness_run: the flags of ``backstay run`` become a HarnessRun, or one error naming each
flag that is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.adapters.support import PLANNED_WHAT, plan_an_adapter

from backstay import ConfigError
from backstay.adapters.contract import TierConfig
from backstay.config import HarnessRun, harness_run
from backstay.policy.builtin import AGENT_DISPATCH, STANDARD
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget

SCENARIO = "scenario={attempts: [[{result: done}]]}"
KEY = "sk-ant-api03-HarnessCanaryHarness0123456789"


@pytest.fixture
def flags(tmp_path: Path) -> dict[str, Any]:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("hi", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    return {
        "adapter": "mock",
        "model": "m",
        "prompt_file": prompt,
        "workspace": tmp_path / "ws",
        "output_dir": tmp_path / "out",
        "adapter_options": [SCENARIO],
        "registry": PolicyRegistry(),
        "environ": {},
    }


def _run(flags: dict[str, Any], **changes: Any) -> HarnessRun:
    return harness_run(**{**flags, **changes})


def _error(flags: dict[str, Any], **changes: Any) -> str:
    with pytest.raises(ConfigError) as info:
        _run(flags, **changes)
    return str(info.value)


def test_good_flags_make_a_harness_run(flags: dict[str, Any]) -> None:
    run = _run(flags)
    assert (run.adapter, run.model, run.timeout_s, run.tier, run.run_number) == (
        "mock",
        "m",
        600.0,
        None,
        None,
    )
    assert run.prompt_file == flags["prompt_file"].resolve()
    assert run.options.config["scenario"]["attempts"][0][0]["result"] == "done"


def test_a_tier_flag_alone_makes_tier_t0(flags: dict[str, Any]) -> None:
    assert _run(flags, tools_enabled=False).tier == TierConfig(tier_id="T0", tools_enabled=False)


def test_tier_flags_make_a_tier(flags: dict[str, Any]) -> None:
    run = _run(flags, tier_id="T1", tier_name="Prompted", tier_prompt="Think.")
    assert run.tier == TierConfig(tier_id="T1", tier_name="Prompted", system_prompt="Think.")


def test_without_a_policy_the_run_retries_under_the_agent_policy(flags: dict[str, Any]) -> None:
    assert _run(flags).policy is AGENT_DISPATCH


def test_the_agent_policy_of_the_configuration_is_the_default(flags: dict[str, Any]) -> None:
    fast = RetryPolicy(name="fast", max_attempts=2)
    registry = PolicyRegistry([fast], operation_policies={"agent": "fast"})
    assert _run(flags, registry=registry).policy is fast


@pytest.mark.parametrize("changes", [{"policy": "none"}, {"no_retry": True}])
def test_policy_none_and_no_retry_make_one_attempt(
    flags: dict[str, Any], changes: dict[str, Any]
) -> None:
    assert _run(flags, **changes).policy is None


@pytest.mark.parametrize("changes", [{}, {"no_retry": True}])
def test_fallbacks_keep_the_runs_own_policy(flags: dict[str, Any], changes: dict[str, Any]) -> None:
    run = _run(flags, fallbacks=["mock:spare"], **changes)
    assert [c.name for c in run.fallbacks] == ["mock/spare"]
    assert run.policy is (None if changes else AGENT_DISPATCH)


def test_a_fallback_on_the_model_from_the_harness_variable_is_already_in_the_chain(
    flags: dict[str, Any],
) -> None:
    message = _error(flags, model=None, environ={"MODEL": "claude-x"}, fallbacks=["mock:claude-x"])
    assert message == "--fallback: mock/claude-x is already in the chain"


def test_no_retry_with_another_policy_is_a_problem(flags: dict[str, Any]) -> None:
    message = _error(flags, policy="standard", no_retry=True)
    assert message == "--policy: --no-retry makes one attempt; give one of the two"


def test_model_and_tier_come_from_the_harness_variables_when_not_given(
    flags: dict[str, Any],
) -> None:
    run = _run(flags, model=None, environ={"MODEL": "claude-x", "TIER": "T2", "RUN_NUMBER": "3"})
    assert (run.model, run.tier, run.run_number) == ("claude-x", TierConfig(tier_id="T2"), 3)


def test_the_flags_win_over_the_harness_variables(flags: dict[str, Any]) -> None:
    run = _run(flags, tier_id="T1", environ={"MODEL": "other", "TIER": "T2"})
    assert (run.model, run.tier) == ("m", TierConfig(tier_id="T1"))


def test_an_empty_harness_variable_counts_as_unset(flags: dict[str, Any]) -> None:
    run = _run(flags, environ={"TIER": "", "RUN_NUMBER": ""})
    assert (run.tier, run.run_number) == (None, None)


def test_no_model_anywhere_is_a_problem(flags: dict[str, Any]) -> None:
    assert _error(flags, model=None) == "--model: no model: give --model or set MODEL"


def test_a_bad_harness_variable_is_named_by_the_variable(flags: dict[str, Any]) -> None:
    message = _error(flags, model=None, environ={"MODEL": "a b", "TIER": "a:b", "RUN_NUMBER": "x"})
    lines = message.splitlines()
    assert lines[0] == "command line: 3 problems:"
    assert sorted(line.strip().split(":")[0] for line in lines[1:]) == [
        "MODEL",
        "RUN_NUMBER",
        "TIER",
    ]
    assert "RUN_NUMBER: must be a whole number (0 or more), got 'x'" in message


def test_a_named_policy_is_looked_up_in_the_registry(flags: dict[str, Any]) -> None:
    assert _run(flags, policy="standard").policy is STANDARD


def test_an_inline_policy_starts_from_the_agent_policy(flags: dict[str, Any]) -> None:
    run = _run(flags, policy="{max_attempts: 2}")
    assert run.policy == AGENT_DISPATCH.derive(name="run", max_attempts=2)


def test_a_policy_of_the_configuration_can_be_named(flags: dict[str, Any]) -> None:
    fast = RetryPolicy(name="fast", max_attempts=2)
    assert _run(flags, policy="fast", registry=PolicyRegistry([fast])).policy is fast


def test_a_dotted_option_sets_a_nested_setting(flags: dict[str, Any]) -> None:
    run = _run(flags, adapter_options=["scenario.attempts=[[{result: ok}]]"])
    assert run.options.config["scenario"]["attempts"][0][0]["result"] == "ok"


def test_the_key_comes_from_the_variable_api_key_env_names(flags: dict[str, Any]) -> None:
    run = _run(
        flags,
        adapter_options=[SCENARIO, "api_key_env=MY_KEY", "pass_env=[HOME]"],
        environ={"MY_KEY": KEY, "HOME": "/h", "PATH": "/bin"},
    )
    assert dict(run.env) == {"MY_KEY": KEY, "HOME": "/h"}
    assert KEY not in repr(run)


def test_an_unset_key_variable_is_named(flags: dict[str, Any]) -> None:
    message = _error(flags, adapter_options=[SCENARIO, "api_key_env=MY_KEY"])
    assert message == (
        "--adapter-option: api_key_env: the environment variable MY_KEY is not set "
        "(adapter 'mock' reads its API key from it)"
    )


def test_an_inline_key_is_refused_without_showing_it(flags: dict[str, Any]) -> None:
    message = _error(flags, adapter_options=[SCENARIO, f"api_key={KEY}"])
    assert message.startswith("--adapter-option: api_key: an API key is never given inline")
    assert KEY not in message


def test_an_option_without_a_value_is_refused_without_showing_it(flags: dict[str, Any]) -> None:
    message = _error(flags, adapter_options=[SCENARIO, KEY])
    assert message == "--adapter-option: expected KEY=VALUE, e.g. scenario=scenario.yaml"


def test_the_adapter_checks_its_own_options(flags: dict[str, Any]) -> None:
    assert _error(flags, adapter_options=[]) == "--adapter-option: scenario: is required"


def test_an_adapter_not_available_yet_is_a_problem(
    flags: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = plan_an_adapter(monkeypatch)
    message = _error(flags, adapter=name, adapter_options=[])
    assert message.startswith(f"--adapter: adapter {name!r} for {PLANNED_WHAT}")
    assert "is not available yet" in message


def test_every_wrong_flag_is_listed_by_its_flag(flags: dict[str, Any], tmp_path: Path) -> None:
    message = _error(
        flags,
        adapter="mok",
        model="a b",
        prompt_file=tmp_path / "nope.md",
        workspace=tmp_path / "nope",
        timeout_s=0,
        tier_id="a:b",
        policy="ghost",
    )
    lines = message.splitlines()
    assert lines[0] == "command line: 7 problems:"
    assert [line.strip().split(":")[0] for line in lines[1:]] == [
        "--adapter",
        "--prompt-file",
        "--workspace",
        "--model",
        "--timeout",
        "--tier-id",
        "--policy",
    ]


def test_an_output_dir_that_is_a_file_is_a_problem(flags: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "f").write_text("", encoding="utf-8")
    assert (
        _error(flags, output_dir=tmp_path / "f")
        == f"--output-dir: is not a folder: {tmp_path / 'f'}"
    )


def test_relative_paths_are_relative_to_the_working_directory(
    flags: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = _run(flags, prompt_file="prompt.md", workspace="ws")
    assert (run.prompt_file, run.workspace) == (
        (tmp_path / "prompt.md").resolve(),
        (tmp_path / "ws").resolve(),
    )


def test_budget_flags_become_the_runs_spending_budget(tmp_path: Path) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text("hi", encoding="utf-8")
    spec = harness_run(
        adapter="mock",
        model="m",
        prompt_file=prompt,
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        adapter_options=["scenario={attempts: [[{result: ok}]]}"],
        environ={},
        budget_usd=0.5,
        budget_tokens=1000,
    )
    assert spec.budget == SpendBudget(usd=0.5, tokens=1000)


def test_a_negative_budget_is_a_problem_named_by_its_flag(tmp_path: Path) -> None:
    prompt = tmp_path / "p.md"
    prompt.write_text("hi", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"--budget-tokens.*must be >= 0"):
        harness_run(
            adapter="mock",
            model="m",
            prompt_file=prompt,
            workspace=tmp_path,
            output_dir=tmp_path / "out",
            adapter_options=["scenario={attempts: [[{result: ok}]]}"],
            environ={},
            budget_tokens=-1,
        )
