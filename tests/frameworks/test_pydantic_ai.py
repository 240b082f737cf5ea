"""The Pydantic-AI adapter with the real pydantic-ai package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent

from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.frameworks.pydantic_ai import PydanticAIAdapter, make_agent
from backstay.runtime import RunStatus, Runtime

from . import support

EXAMPLE = support.EXAMPLES / "pydantic-ai"


def make(base_url: str) -> PydanticAIAdapter:
    return PydanticAIAdapter(base_url=base_url, api_key="test-key")


def test_an_approval_pauses_the_run_and_resume_continues_the_agent(tmp_path: Path) -> None:
    support.check_approval_then_resume(make, tmp_path)


def test_a_rejected_call_is_not_run_and_the_agent_goes_on(tmp_path: Path) -> None:
    support.check_rejection_then_resume(make, tmp_path)


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    support.check_interrupted_run_resumes(make, tmp_path)


def test_a_rate_limit_is_retried_by_backstay_not_by_pydantic_ai(tmp_path: Path) -> None:
    support.check_rate_limit_retried_by_backstay_only(make, tmp_path)


def test_make_agent_reads_the_suite_task_config(monkeypatch: pytest.MonkeyPatch) -> None:
    support.check_make_agent_reads_the_config(make_agent, EXAMPLE, "pai_agent:build", monkeypatch)


def test_an_agent_that_is_not_module_function_is_a_config_error() -> None:
    support.check_agent_not_module_function_is_a_config_error(make_agent)


def test_the_example_runs_against_the_fake_provider(tmp_path: Path) -> None:
    support.check_example_runs(EXAMPLE, tmp_path)


def test_an_agent_built_with_another_model_still_calls_through_the_gate() -> None:
    def build(kit: Any) -> Any:
        return Agent("test", toolsets=[kit.toolset])  # pydantic-ai's offline test model

    with FakeProvider(Scenario(reply=Reply(text="From the gate."))) as fake:
        adapter = PydanticAIAdapter(agent=build, base_url=fake.url + "/v1", api_key="k")
        record = asyncio.run(Runtime(adapter).run("hello"))
        assert fake.stats().requests == 1
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert record.results[0].output["answer"] == "From the gate."
    assert record.usage.api_calls == 1
