"""The LlamaIndex adapter with the real llama-index-workflows package against the fake provider:
approvals, resume, retries, factories, the example."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent
from workflows.retry_policy import retry_policy, stop_after_attempt

from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.frameworks.llamaindex import LlamaIndexAdapter, make_agent
from backstay.runtime import RunStatus, Runtime, RuntimeSettings, ToolPolicy

from . import support

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llamaindex"
URL = "http://127.0.0.1:9/v1"


def make(base_url: str) -> LlamaIndexAdapter:
    return LlamaIndexAdapter(base_url=base_url, api_key="test-key")


def test_an_approval_pauses_the_run_and_resume_continues_the_workflow(tmp_path: Path) -> None:
    support.check_approval_then_resume(make, tmp_path)


def test_a_rejected_call_is_not_run_and_the_workflow_goes_on(tmp_path: Path) -> None:
    support.check_rejection_then_resume(make, tmp_path)


def test_an_interrupted_run_resumes(tmp_path: Path) -> None:
    support.check_interrupted_run_resumes(make, tmp_path)


def test_a_rate_limit_is_retried_by_backstay_not_by_llamaindex(tmp_path: Path) -> None:
    support.check_rate_limit_retried_by_backstay_only(make, tmp_path)


def test_make_agent_reads_the_suite_task_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    with FakeProvider(Scenario(reply=Reply(text="Hello."))) as fake:
        adapter = make_agent(
            {"agent": "notes_workflow:build", "base_url": fake.url + "/v1", "api_key_env": "MY_KEY"}
        )
        settings = RuntimeSettings(tools=ToolPolicy(allowed={"write_file"}))
        record = asyncio.run(Runtime(adapter, settings=settings).run("hello"))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert record.results[0].output == {"answer": "Hello.", "tool_calls": 0}
    assert adapter.settings.api_key == "sk-from-env"


def test_an_agent_that_is_not_module_function_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"config\.agent"):
        make_agent({"agent": "no_colon_here"})
    with pytest.raises(ConfigError, match="has no function"):
        make_agent({"agent": "json:no_such_function"})


def test_the_example_runs_against_the_fake_provider(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "run.py"), "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "paused" in done.stdout
    assert "succeeded" in done.stdout
    assert (tmp_path / "workspace" / "note.txt").read_text() == "hi"


def test_a_step_retry_policy_is_removed_so_backstay_is_the_one_retry_loop() -> None:
    attempts: list[int] = []

    class Fails(Workflow):
        @step(retry_policy=retry_policy(stop=stop_after_attempt(5)))
        async def only(self, ev: StartEvent) -> StopEvent:
            attempts.append(1)
            raise ValueError("step failed")

    adapter = LlamaIndexAdapter(agent=lambda kit: Fails(timeout=None), base_url=URL)
    record = asyncio.run(Runtime(adapter).run("go"))
    assert record.status is RunStatus.FAILED
    assert attempts == [1]
