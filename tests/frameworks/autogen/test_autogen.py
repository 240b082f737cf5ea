"""The AutoGen adapter with the real autogen-agentchat package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.frameworks import support

from backstay.frameworks.autogen import AutoGenAdapter, make_agent

EXAMPLE = support.EXAMPLES / "autogen"


def make(base_url: str) -> AutoGenAdapter:
    return AutoGenAdapter(base_url=base_url, api_key="test-key")


def test_an_approval_pauses_the_run_and_resume_continues_the_agent(tmp_path: Path) -> None:
    # AutoGen asks the model again for its pending tool call after load_state.
    support.check_approval_then_resume(make, tmp_path, requests_in_all=3)


def test_a_rejected_call_is_not_run_and_the_agent_goes_on(tmp_path: Path) -> None:
    support.check_rejection_then_resume(make, tmp_path)


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    support.check_interrupted_run_resumes(make, tmp_path)


def test_a_rate_limit_is_retried_by_backstay_not_by_autogen(tmp_path: Path) -> None:
    support.check_rate_limit_retried_by_backstay_only(make, tmp_path)


def test_make_agent_reads_the_suite_task_config(monkeypatch: pytest.MonkeyPatch) -> None:
    support.check_make_agent_reads_the_config(
        make_agent, EXAMPLE, "notes_assistant:build", monkeypatch
    )


def test_an_agent_that_is_not_module_function_is_a_config_error() -> None:
    support.check_agent_not_module_function_is_a_config_error(make_agent)


def test_the_example_runs_against_the_fake_provider(tmp_path: Path) -> None:
    support.check_example_runs(EXAMPLE, tmp_path)
