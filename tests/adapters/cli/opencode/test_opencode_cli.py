"""The opencode adapter driving the real opencode inside a private network namespace, against
fake providers started in the same namespace: the adapter contract, a multi-turn run that
edits a file, an engine retrying a 429, an invalid key, and a stalled stream.

Skipped, with the reason, when opencode is not installed (`make agents`) or no namespace can
be made here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from tests.adapters.argv_watch import PromptNotOnArgv
from tests.agents.cli_runs import (
    FAULTS,
    KEY_ENV,
    Fakes,
    fakes_fixture,
    faults_seen,
    require_cli,
    workspace,
)
from tests.agents.clis import CANARY_KEY
from tests.agents.fake_pool import FakePool, netns_pool

from backstay.adapters.capture import Capture
from backstay.adapters.cli.opencode import OpencodeAdapter
from backstay.adapters.contract import Adapter, AgentRequest, TierConfig
from backstay.engine.states import TaskState
from backstay.errors import AdapterError, ConfigError
from backstay.policy.retry import RetryPolicy
from backstay.taxonomy import FailureKind
from backstay.testing._contract_run import check_attempt_files, run_task
from backstay.testing._processes import ProcessWatch
from backstay.testing.contract import ContractScenario
from backstay.testing.fakeclock import FakeClock
from backstay.testing.netns import NetworkNamespace

__all__ = ["netns_pool"]

# The stall limit counts from the start: it must outlast the CLI's start-up on busy cores.
STALL_S: Final = 10.0  # opencode is silent while it starts: more than 6 s on a busy machine
MODEL: Final = "gpt-5.4"
POLICY: Final = RetryPolicy(
    name="opencode-test", max_attempts=3, initial_delay_s=1.0, multiplier=2.0, jitter=0.0
)
WRITE_FILE: Final = {
    "text": "Wrote notes.txt.",
    "tool_call": {
        "name": "apply_patch",
        "arguments": {
            "patchText": "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch"
        },
    },
}


@pytest.fixture(scope="module", autouse=True)
def _opencode_installed() -> None:
    require_cli("opencode")


@pytest.fixture
def fakes(
    netns_pool: tuple[NetworkNamespace, FakePool],
) -> Iterator[tuple[NetworkNamespace, Fakes]]:
    yield from fakes_fixture(netns_pool)


def _config(url: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": f"{url}/v1", **extra}


class TestOpencodeContract(PromptNotOnArgv):
    """The contract, each scenario acted out by a fake provider of its own per test."""

    model: ClassVar[str] = MODEL
    hang_timeout_s: ClassVar[float] = 6.0
    urls: dict[ContractScenario, str]

    @pytest.fixture(autouse=True)
    def _fakes(self, fakes: tuple[NetworkNamespace, Fakes]) -> None:
        self.namespace, self.fakes = fakes
        self.urls = {}

    def make_adapter(self, scenario: ContractScenario) -> Adapter:
        return OpencodeAdapter(launcher=self.namespace.launcher)

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        if scenario not in self.urls:
            self.urls[scenario] = self.fakes.start(FAULTS[scenario])
        return _config(self.urls[scenario])

    def adapter_env(self, scenario: ContractScenario) -> Mapping[str, str]:
        return KEY_ENV


def test_a_multi_turn_run_edits_the_workspace_and_reports_what_the_fake_served(
    fakes: tuple[NetworkNamespace, Fakes], tmp_path: Path
) -> None:
    namespace, pool = fakes
    url = pool.start([], reply=WRITE_FILE)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write hello into notes.txt.", encoding="utf-8")
    work, out = workspace(tmp_path), tmp_path / "out"
    prices = {MODEL: {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
    code = OpencodeAdapter(launcher=namespace.launcher).run(
        MODEL, prompt, work, out, _config(url, prices=prices), 60.0, env=KEY_ENV
    )
    stats = pool.pool.stats(url)
    assert code == 0, (out / "agent.log").read_text()
    assert (work / "notes.txt").read_text() == "hello\n"
    metrics = check_attempt_files(out)
    assert stats["by_api"] == {"openai-responses": 2}
    assert (metrics["tokens_input"], metrics["tokens_output"]) == (
        stats["input_tokens"],
        stats["output_tokens"],
    )
    assert metrics["api_calls"] == 2
    assert metrics["cost_usd"] is not None
    agent_log = (out / "agent.log").read_text()
    assert "opencode tool apply_patch: completed" in agent_log
    assert "opencode message: Wrote notes.txt." in agent_log
    for name in ("stdout.log", "stderr.log", "agent.log", "metrics.json"):
        assert CANARY_KEY not in (out / name).read_text()


def test_the_engine_retries_a_429_once_and_the_task_succeeds(
    fakes: tuple[NetworkNamespace, Fakes], tmp_path: Path, backstay_clock: FakeClock
) -> None:
    namespace, pool = fakes
    url = pool.start([{"fault": "rate_limit", "first": 1, "retry_after_s": 2}])
    run = run_task(
        OpencodeAdapter(launcher=namespace.launcher),
        task_id="rate-limited",
        state_dir=tmp_path / "state",
        workspace=workspace(tmp_path),
        clock=backstay_clock,
        policy=POLICY,
        model=MODEL,
        timeout_s=60.0,
        config=_config(url),
        env=KEY_ENV,
    )
    assert run.record.state is TaskState.SUCCEEDED, run.record.reason
    assert len(run.ids) == 2
    assert pool.pool.stats(url)["by_status"] == {"200": 1, "429": 1}


def test_an_invalid_key_fails_the_task_and_escalates_it_without_a_retry(
    fakes: tuple[NetworkNamespace, Fakes], tmp_path: Path, backstay_clock: FakeClock
) -> None:
    namespace, pool = fakes
    url = pool.start([{"fault": "unauthorized"}])
    run = run_task(
        OpencodeAdapter(launcher=namespace.launcher),
        task_id="bad-key",
        state_dir=tmp_path / "state",
        workspace=workspace(tmp_path),
        clock=backstay_clock,
        policy=POLICY,
        model=MODEL,
        timeout_s=60.0,
        config=_config(url),
        env=KEY_ENV,
    )
    assert run.record.state is TaskState.ESCALATED, run.record.reason
    assert [f and f.kind for f in run.failures] == [FailureKind.AUTH]
    assert [e.operation_id for e in run.escalations] == [run.spec.operation_id]
    assert pool.pool.stats(url)["by_status"] == {"401": 1}


def test_a_stalled_stream_is_killed_as_a_timeout_and_nothing_is_left(
    fakes: tuple[NetworkNamespace, Fakes], tmp_path: Path
) -> None:
    namespace, pool = fakes
    url = pool.start([{"fault": "stall", "after_events": 3}])
    request_env = dict(KEY_ENV)
    adapter = OpencodeAdapter(launcher=namespace.launcher)
    with ProcessWatch() as watch:
        request = AgentRequest(
            model=MODEL,
            workspace=workspace(tmp_path),
            output_dir=tmp_path / "out",
            timeout_s=60.0,
            stall_timeout_s=STALL_S,
            prompt="say hi",
            env=request_env | watch.env,
            config=_config(url),
        )
        outcome = _dispatch(adapter, request)
    assert isinstance(outcome, AdapterError), outcome
    assert (outcome.failure.code, outcome.failure.kind) == (
        "ERR_STREAM_STALLED",
        FailureKind.TIMEOUT,
    )
    assert watch.leftovers() == []
    assert faults_seen(pool.pool, url, {"stall": 1}) == {"stall": 1}


def _dispatch(adapter: OpencodeAdapter, request: AgentRequest) -> Any:
    async def go() -> Any:
        with Capture(request.output_dir) as capture:
            try:
                return await adapter.dispatch(
                    request, operation_id="op", attempt_id="op/1", capture=capture
                )
            except AdapterError as err:
                return err

    return asyncio.run(go())


def test_a_tier_without_tools_and_a_turn_limit_is_accepted_by_opencode(
    fakes: tuple[NetworkNamespace, Fakes], tmp_path: Path
) -> None:
    namespace, pool = fakes
    url = pool.start([])
    request = AgentRequest(
        model=MODEL,
        workspace=workspace(tmp_path),
        output_dir=tmp_path / "out",
        timeout_s=60.0,
        prompt="say hi",
        env=KEY_ENV,
        config=_config(url, max_turns=2),
        tier=TierConfig(tier_id="t0", system_prompt='Answer "briefly".', tools_enabled=False),
    )
    outcome = _dispatch(OpencodeAdapter(launcher=namespace.launcher), request)
    assert not isinstance(outcome, AdapterError), outcome.failure
    assert outcome.output.startswith("Fake reply to:")
    assert outcome.usage.api_calls == 1


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"base_url": "ftp://x"}, "config.base_url"),
        ({"max_turns": 0}, "config.max_turns"),
        ({"error_grace_s": -1}, "config.error_grace_s"),
        ({"binary": "/nonexistent/opencode"}, "config.binary"),
    ],
)
def test_bad_settings_name_what_and_where(config: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        OpencodeAdapter().validate_config(config)
    assert info.value.where == where
