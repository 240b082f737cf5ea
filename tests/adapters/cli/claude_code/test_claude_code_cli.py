"""The real Claude Code, run through ``ClaudeCodeAdapter`` inside a private network
namespace against the fake provider started there: the adapter contract, a multi-turn run
that edits a file, the engine's retries and escalations, and stall kills.

Skipped, with the reason, when Claude Code is not installed (``make agents``) or no
namespace can be made here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from tests.adapters.cli_contract import RealCliContract
from tests.adapters.cli_provider import BASE_ENV, Providers, installed, namespace_providers
from tests.adapters.support import CANARY_KEY

from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.contract import AgentRequest, TierConfig
from backstay.engine.states import TaskState
from backstay.errors import AdapterError
from backstay.taxonomy import FailureKind
from backstay.testing._contract_run import run_task
from backstay.testing._processes import ProcessWatch
from backstay.testing.contract import CONTRACT_POLICY
from backstay.testing.fakeclock import FakeClock

MODEL: Final = "claude-sonnet-4-5"
KEY_ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY}
# Longer than the CLI's start on two busy cores (it prints nothing until then).
STALL_S: Final = 6.0


class TestClaudeCodeContract(RealCliContract):
    cli = "claude-code"
    adapter_class = ClaudeCodeAdapter
    key_env = KEY_ENV
    model: ClassVar[str] = MODEL
    hang_timeout_s: ClassVar[float] = 5.0

    # Claude Code reports a 429 as "Request rejected (429) · <provider message>": the
    # provider's retry-after header never reaches its output (docs/agents/claude-code.md).

    def test_a_rate_limit_failure_carries_its_retry_after(self, tmp_path: Path) -> None:
        failure = self._failure_of("rate_limit_with_wait", tmp_path)
        assert failure.kind is FailureKind.RATE_LIMIT
        assert failure.retry_after_s is None, failure

    def test_a_rate_limit_waits_its_retry_after(
        self, backstay_clock: FakeClock, backstay_state_dir: Path
    ) -> None:
        run = self._run("rate_limit_with_wait", backstay_clock, backstay_state_dir)
        assert run.record.state is TaskState.SUCCEEDED, run.record.reason
        assert [None if f is None else f.kind for f in run.failures] == [
            FailureKind.RATE_LIMIT,
            None,
        ]
        assert run.sleeps == (CONTRACT_POLICY.initial_delay_s,)  # the policy's own backoff


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


@pytest.fixture
def cli() -> None:
    installed("claude-code")


def _config(providers: Providers, url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": url, "launcher": providers.launcher, **extra}


def _logs(folder: Path) -> str:
    return "".join(p.read_text() for p in folder.iterdir() if p.is_file())


@pytest.mark.usefixtures("cli")
def test_a_multi_turn_run_edits_the_workspace_and_reports_the_usage_the_provider_served(
    providers: Providers, tmp_path: Path
) -> None:
    served = providers.serve(
        {
            "reply": {
                "text": "Wrote notes.txt.",
                "tool_call": {
                    "name": "Write",
                    "arguments": {"file_path": "notes.txt", "content": "hello from the fake"},
                },
            }
        }
    )
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write hello into notes.txt.", encoding="utf-8")
    code = ClaudeCodeAdapter().run(
        MODEL,
        prompt,
        workspace,
        out,
        _config(providers, served.url),
        90.0,
        env={**BASE_ENV, **KEY_ENV},
        tier=TierConfig(tier_id="T1", system_prompt="Be brief.", allowed_tools=("Write",)),
    )
    stats = served.stats()
    assert code == 0, (out / "agent.log").read_text()
    assert (workspace / "notes.txt").read_text() == "hello from the fake"
    metrics = json.loads((out / "metrics.json").read_text())
    assert stats["by_status"] == {"200": 2}
    assert (metrics["tokens_input"], metrics["tokens_output"], metrics["api_calls"]) == (
        stats["input_tokens"],
        stats["output_tokens"],
        stats["requests"],
    )
    assert metrics["cost_usd"] > 0  # Claude Code's own estimate
    log = (out / "agent.log").read_text()
    assert "tool call Write:" in log
    assert "assistant: Wrote notes.txt." in log
    assert "--append-system-prompt 'Be brief.' --tools Write --disallowedTools Task" in log
    assert CANARY_KEY not in _logs(out)


@pytest.mark.usefixtures("cli")
def test_a_rate_limit_costs_one_request_per_dispatch_and_the_task_succeeds(
    providers: Providers, backstay_clock: FakeClock, tmp_path: Path
) -> None:
    served = providers.serve({"faults": [{"fault": "rate_limit", "first": 1}]})
    run = run_task(
        ClaudeCodeAdapter(),
        task_id="limited",
        state_dir=tmp_path / "state",
        workspace=tmp_path / "workspace",
        clock=backstay_clock,
        policy=CONTRACT_POLICY,
        model=MODEL,
        timeout_s=90.0,
        config=_config(providers, served.url),
        env={**BASE_ENV, **KEY_ENV},
    )
    assert run.record.state is TaskState.SUCCEEDED, run.record.reason
    assert len(run.attempts) == 2
    # Claude Code's own retries are off: each dispatch is exactly one request.
    assert served.stats()["by_status"] == {"429": 1, "200": 1}


@pytest.mark.usefixtures("cli")
def test_an_invalid_key_fails_the_task_and_escalates_it_after_one_request(
    providers: Providers, backstay_clock: FakeClock, tmp_path: Path
) -> None:
    served = providers.shared("unauthorized", {"faults": [{"fault": "unauthorized"}]})
    run = run_task(
        ClaudeCodeAdapter(),
        task_id="bad-key",
        state_dir=tmp_path / "state",
        workspace=tmp_path / "workspace",
        clock=backstay_clock,
        policy=CONTRACT_POLICY,
        model=MODEL,
        timeout_s=90.0,
        config=_config(providers, served.url),
        env={**BASE_ENV, **KEY_ENV},
    )
    assert run.record.state is TaskState.ESCALATED, run.record.reason
    assert [f.kind if f else None for f in run.failures] == [FailureKind.AUTH]
    assert [e.operation_id for e in run.escalations] == [run.spec.operation_id]
    assert served.stats()["by_fault"] == {"unauthorized": 1}  # not retried by the CLI
    assert CANARY_KEY not in _logs(Path(run.attempts[0].output_dir))


@pytest.mark.usefixtures("cli")
def test_a_stalled_stream_is_killed_as_a_timeout_and_leaves_no_process(
    providers: Providers, tmp_path: Path
) -> None:
    served = providers.shared("stall", {"faults": [{"fault": "stall", "after_events": 3}]})
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    request = AgentRequest(
        model=MODEL,
        workspace=workspace,
        output_dir=tmp_path / "out",
        timeout_s=90.0,
        stall_timeout_s=STALL_S,
        prompt="Say hi.",
        env={**BASE_ENV, **KEY_ENV},
        config=_config(providers, served.url),
    )

    async def go() -> AdapterError:
        with Capture(request.output_dir) as capture:
            try:
                await ClaudeCodeAdapter().dispatch(
                    request, operation_id="op", attempt_id="op/1", capture=capture
                )
            except AdapterError as err:
                return err
        raise AssertionError("a stalled run succeeded")

    with ProcessWatch() as watch:
        error = asyncio.run(go())
    assert (error.failure.kind, error.failure.code) == (FailureKind.TIMEOUT, "ERR_STREAM_STALLED")
    assert served.stats()["by_fault"].get("stall", 0) >= 1
    assert watch.seen
    assert watch.leftovers() == []


@pytest.mark.usefixtures("cli")
def test_a_tier_without_tools_offers_the_model_none(providers: Providers, tmp_path: Path) -> None:
    served = providers.serve(
        {
            "reply": {
                "tool_call": {"name": "Write", "arguments": {"file_path": "x.txt", "content": "x"}}
            }
        }
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write x.txt.", encoding="utf-8")
    code = ClaudeCodeAdapter().run(
        MODEL,
        prompt,
        workspace,
        tmp_path / "out",
        _config(providers, served.url),
        90.0,
        env={**BASE_ENV, **KEY_ENV},
        tier=TierConfig(tier_id="T0", tools_enabled=False),
    )
    assert code == 0
    assert list(workspace.iterdir()) == []  # the fake asks for Write only when it is offered
    assert served.stats()["requests"] == 1
