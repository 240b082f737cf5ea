"""MockAdapter: a scripted agent in a real subprocess, failing as Claude Code fails."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult, AgentStatus
from backstay.adapters.mock import MockAdapter
from backstay.errors import AdapterError, ConfigError
from backstay.failure import Failure
from backstay.taxonomy import FailureKind


def _request(tmp_path: Path, attempts: list[list[dict[str, Any]]], **changes: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "model": "m",
        "prompt": "the prompt",
        "workspace": tmp_path,
        "output_dir": tmp_path / "out",
        "timeout_s": 10.0,
        "config": {"scenario": {"attempts": attempts}},
    }
    fields.update(changes)
    return AgentRequest(**fields)


def dispatch(
    adapter: MockAdapter, request: AgentRequest, *, operation_id: str = "op"
) -> AgentResult:
    async def main() -> AgentResult:
        with Capture(request.output_dir) as capture:
            return await adapter.dispatch(
                request, operation_id=operation_id, attempt_id=f"{operation_id}/n", capture=capture
            )

    return asyncio.run(main())


def failure_of(tmp_path: Path, step: dict[str, Any]) -> Failure:
    with pytest.raises(AdapterError) as info:
        dispatch(MockAdapter(), _request(tmp_path, [[step]]))
    return info.value.failure


@pytest.mark.parametrize(
    ("error", "code", "kind"),
    [
        ("rate_limit", "ERR_HTTP_429_RATE_LIMITED", FailureKind.RATE_LIMIT),
        ("overloaded", "ERR_HTTP_529_OVERLOADED", FailureKind.SERVER_ERROR),
        ("server_error", "ERR_HTTP_500_INTERNAL", FailureKind.SERVER_ERROR),
        ("context_overflow", "ERR_LLM_CONTEXT_LENGTH", FailureKind.CONTEXT_LIMIT),
        ("quota", "ERR_LLM_USAGE_LIMIT", FailureKind.QUOTA_EXHAUSTED),
        ("credit", "ERR_LLM_CREDIT_BALANCE", FailureKind.QUOTA_EXHAUSTED),
        ("auth", "ERR_AUTH_INVALID_KEY", FailureKind.AUTH),
        ("not_logged_in", "ERR_AUTH_MISSING_CREDENTIALS", FailureKind.AUTH),
        ("content_filter", "ERR_LLM_CONTENT_FILTER", FailureKind.CONTENT_POLICY),
        ("request_timeout", "ERR_TIMEOUT", FailureKind.TIMEOUT),
        ("connection", "ERR_CONNECTION_REFUSED", FailureKind.NETWORK),
        ("max_turns", "ERR_LIMIT_MAX_TURNS", FailureKind.LIMIT_EXCEEDED),
        ("budget", "ERR_LIMIT_BUDGET", FailureKind.LIMIT_EXCEEDED),
    ],
)
def test_each_scripted_error_classifies_as_claude_codes_would(
    tmp_path: Path, error: str, code: str, kind: FailureKind
) -> None:
    failure = failure_of(tmp_path, {"error": error})
    assert (failure.code, failure.kind) == (code, kind)
    assert failure.details["agent"] == "claude-code"


def test_a_rate_limit_with_a_wait_carries_retry_after(tmp_path: Path) -> None:
    failure = failure_of(tmp_path, {"error": "rate_limit", "retry_after_s": 7})
    assert (failure.code, failure.retry_after_s, failure.status) == (
        "ERR_HTTP_429_RATE_LIMITED",
        7.0,
        429,
    )


def test_a_quota_carries_its_reset_time(tmp_path: Path) -> None:
    resets = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(hours=2)
    failure = failure_of(tmp_path, {"error": "quota", "resets_at": resets.isoformat()})
    assert failure.resets_at == resets
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED


def test_a_failed_attempt_keeps_its_partial_output(tmp_path: Path) -> None:
    request = _request(tmp_path, [[{"print": "half done"}, {"error": "server_error"}]])
    with pytest.raises(AdapterError) as info:
        dispatch(MockAdapter(), request)
    assert (info.value.partial_output or "").startswith("half done\n")


def test_a_success_returns_answer_usage_and_artefacts(tmp_path: Path) -> None:
    steps = [
        {"write_file": "src/fix.py", "text": "x = 1\n"},
        {
            "result": "fixed",
            "input_tokens": 10,
            "output_tokens": 4,
            "cache_read_tokens": 100,
            "cache_write_tokens": 20,
            "cost_usd": 0.5,
            "num_turns": 3,
        },
    ]
    result = dispatch(MockAdapter(), _request(tmp_path, [steps]))
    assert (result.status, result.output, result.exit_code) == (AgentStatus.SUCCEEDED, "fixed", 0)
    assert (result.usage.prompt_tokens, result.usage.output_tokens) == (130, 4)
    assert (result.usage.cost_usd, result.usage.api_calls) == (0.5, 3)
    assert result.artefacts == (tmp_path / "src" / "fix.py",)


def test_the_prompt_reaches_the_agent(tmp_path: Path) -> None:
    result = dispatch(MockAdapter(), _request(tmp_path, [[{"echo_prompt": True}]]))
    assert result.output == "the prompt\n"


def test_attempts_follow_the_script_and_the_last_repeats(tmp_path: Path) -> None:
    adapter = MockAdapter()
    request = _request(tmp_path, [[{"error": "overloaded"}], [{"result": "second"}]])
    with pytest.raises(AdapterError):
        dispatch(adapter, request)
    assert dispatch(adapter, request).output == "second"
    assert dispatch(adapter, request).output == "second"
    with pytest.raises(AdapterError):
        dispatch(adapter, request, operation_id="another operation")


def test_a_state_dir_carries_the_attempt_count_to_a_new_adapter(tmp_path: Path) -> None:
    scenario = {"attempts": [[{"error": "overloaded"}], [{"result": "resumed"}]]}
    request = _request(
        tmp_path, [], config={"scenario": scenario, "state_dir": str(tmp_path / "state")}
    )
    with pytest.raises(AdapterError):
        dispatch(MockAdapter(), request)
    assert dispatch(MockAdapter(), request).output == "resumed"


def test_a_task_listed_under_scenarios_acts_out_its_own(tmp_path: Path) -> None:
    scenarios = {"special": {"attempts": [[{"result": "its own"}]]}}
    config = {"scenario": {"attempts": [[{"result": "shared"}]]}, "scenarios": scenarios}
    request = _request(tmp_path, [], config=config)
    adapter = MockAdapter()
    assert dispatch(adapter, request, operation_id="wf:special:T0-run_01").output == "its own"
    assert dispatch(adapter, request, operation_id="wf:other:T0-run_01").output == "shared"
    assert dispatch(adapter, request, operation_id="not a task").output == "shared"


def test_a_scenario_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text("attempts:\n  - - result: from yaml\n", encoding="utf-8")
    request = _request(tmp_path, [], config={"scenario": str(path)})
    assert dispatch(MockAdapter(), request).output == "from yaml"


def test_the_agent_runs_with_nothing_but_the_request_environment(tmp_path: Path) -> None:
    steps = [{"print_env": "HOME"}, {"print_env": "GIVEN"}]
    request = _request(tmp_path, [steps], env={"GIVEN": "yes"})
    assert dispatch(MockAdapter(), request).output == "HOME is unset\nGIVEN=yes\n"


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({}, "config.scenario"),
        ({"scenario": {"attempts": []}}, "config.scenario.attempts"),
        ({"scenario": {"attempts": [[]]}, "other": 1}, "config.other"),
        ({"scenario": {"attempts": [[]]}, "state_dir": ""}, "config.state_dir"),
        ({"scenario": {"attempts": [[]]}, "scenarios": [1]}, "config.scenarios"),
        (
            {"scenario": {"attempts": [[]]}, "scenarios": {"t": {"attempts": []}}},
            "config.scenarios.t.attempts",
        ),
    ],
)
def test_invalid_config_names_the_key(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        MockAdapter().validate_config(config)
    assert info.value.where == where


def test_the_mock_is_an_adapter() -> None:
    assert isinstance(MockAdapter(), Adapter)
    assert MockAdapter.name == "mock"


def test_the_request_launcher_starts_the_agent(tmp_path: Path) -> None:
    request = _request(tmp_path, [[{"result": "ok"}]], launcher=["env", "WRAPPED=1"])
    result = dispatch(MockAdapter(), request)
    assert result.status is AgentStatus.SUCCEEDED
    log = (tmp_path / "out" / "agent.log").read_text()
    assert "env WRAPPED=1 " in log
