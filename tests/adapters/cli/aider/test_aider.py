"""The aider adapter against the real Aider, run inside a private network namespace against
the fake provider started in the same namespace: a multi-turn run that edits the
workspace, each failure the engine must treat differently, hangs and stalls, and the
adapter contract suite. Skipped, with the reason, when Aider is not installed
(`make agents`) or no namespace can be made here; an installed Aider that misbehaves fails.

Aider starts in about 4 s, so every run here costs that much: the namespace is shared by
the module, and each test starts its own fake provider (the faults count its requests).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

import pytest
from tests.adapters.aider_support import (
    BACKSTAY,
    CANARY_KEY,
    MODEL,
    NamespacedFake,
    files_under,
    installed_aider,
    litellm_price,
)
from tests.adapters.argv_watch import PromptNotOnArgv

from backstay.adapters.cli.aider import AiderAdapter
from backstay.adapters.contract import TIMEOUT_EXIT_CODE
from backstay.agents import Located
from backstay.engine.states import TaskState
from backstay.policy.retry import RETRY_AFTER_MARGIN_S, RetryPolicy
from backstay.taxonomy import FailureKind
from backstay.testing._contract_run import EngineRun, run_task
from backstay.testing.contract import RETRY_AFTER_S, ContractScenario
from backstay.testing.fakeclock import FakeClock
from backstay.testing.netns import NetworkNamespace, processes_in, unavailable_reason

RUN_TIMEOUT_S: Final = 120.0
STALL_S: Final = 8.0
ENV: Final = {"OPENAI_API_KEY": CANARY_KEY}
POLICY: Final = RetryPolicy(
    name="aider-test",
    max_attempts=3,
    initial_delay_s=1.0,
    multiplier=2.0,
    jitter=0.0,
    max_retry_after_s=60.0,
)
# A whole-file edit of hello.txt, and a Python file whose syntax error Aider's own lint
# finds: it sends the errors back, three times, so one run makes four model calls.
MULTI_TURN_REPLY: Final = (
    "Here they are.\n\nhello.txt\n```\nhello world\n```\n\n"
    "check.py\n```\ndef f(:\n    return 1\n```\n"
)
HELLO_REPLY: Final = "Here it is.\n\nhello.txt\n```\nhello world\n```\n"

StartFake = Callable[..., NamespacedFake]


@pytest.fixture(scope="module")
def aider() -> Located:
    return installed_aider()


@pytest.fixture(scope="module")
def namespace(aider: Located) -> Iterator[NetworkNamespace]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no network namespace here: {reason}")
    with NetworkNamespace() as ns:
        yield ns


@pytest.fixture
def start_fake(namespace: NetworkNamespace, tmp_path: Path) -> Iterator[StartFake]:
    started: list[NamespacedFake] = []

    def start(**kwargs: Any) -> NamespacedFake:
        fake = NamespacedFake(namespace, tmp_path / "fake", **kwargs)
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()


def _engine_run(
    namespace: NetworkNamespace,
    fake: NamespacedFake,
    tmp_path: Path,
    task_id: str,
    **config: Any,
) -> EngineRun:
    state = tmp_path / "state"
    state.mkdir()
    return run_task(
        AiderAdapter(launcher=namespace.launcher),
        task_id=task_id,
        state_dir=state,
        workspace=tmp_path / "workspace",
        clock=FakeClock(),
        policy=POLICY,
        model=MODEL,
        timeout_s=RUN_TIMEOUT_S,
        config={"base_url": fake.url, **config},
        env=ENV,
    )


def _metrics(run: EngineRun, attempt: int) -> dict[str, Any]:
    path = Path(run.attempts[attempt].output_dir) / "metrics.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _harness(
    namespace: NetworkNamespace,
    fake: NamespacedFake,
    tmp_path: Path,
    *,
    timeout_s: float = RUN_TIMEOUT_S,
    stall_timeout_s: float | None = None,
    **config: Any,
) -> tuple[int, Path, Path]:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write hello world into hello.txt.", encoding="utf-8")
    workspace, output = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    code = AiderAdapter(launcher=namespace.launcher).run(
        MODEL,
        prompt,
        workspace,
        output,
        {"base_url": fake.url, **config},
        timeout_s,
        env=ENV,
        stall_timeout_s=stall_timeout_s,
        policy="no_retry",  # what one attempt does and leaves behind
    )
    return code, workspace, output


def _left_in(namespace: NetworkNamespace, fake: NamespacedFake) -> list[int]:
    return sorted(set(processes_in(namespace.net)) - {namespace.holder_pid, fake.proc.pid})


def test_a_multi_turn_run_edits_the_workspace_and_reports_what_the_fake_served(
    aider: Located, namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(reply=MULTI_TURN_REPLY)
    code, workspace, output = _harness(namespace, fake, tmp_path, extra_args=["--auto-lint"])
    served = fake.stats()
    assert code == 0, (output / "agent.log").read_text()
    assert (workspace / "hello.txt").read_text() == "hello world\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["check.py", "hello.txt"]
    metrics = json.loads((output / "metrics.json").read_text())
    assert served["requests"] == 4
    assert metrics["api_calls"] == 4
    assert (metrics["tokens_input"], metrics["tokens_output"]) == (
        served["input_tokens"],
        served["output_tokens"],
    )
    per_input, per_output = litellm_price(aider, "gpt-4o-mini")
    expected = served["input_tokens"] * per_input + served["output_tokens"] * per_output
    assert metrics["cost_usd"] == pytest.approx(expected, rel=1e-9)
    log = (output / "agent.log").read_text()
    assert "aider made 4 API call(s), 4 answered, 0 retries of its own" in log
    assert "#### Write hello world into hello.txt." in log  # the chat transcript
    assert CANARY_KEY not in files_under(output)


def test_a_model_aider_has_no_price_for_is_priced_from_the_prices_setting(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(reply=HELLO_REPLY)
    prices = {"openai/fake-model": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write hello world into hello.txt.", encoding="utf-8")
    code = AiderAdapter(launcher=namespace.launcher).run(
        "openai/fake-model",
        prompt,
        workspace,
        tmp_path / "out",
        {"base_url": fake.url, "prices": prices},
        RUN_TIMEOUT_S,
        env=ENV,
    )
    served = fake.stats()
    assert code == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert (metrics["tokens_input"], metrics["tokens_output"]) == (
        served["input_tokens"],
        served["output_tokens"],
    )
    expected = (served["input_tokens"] * 2.0 + served["output_tokens"] * 10.0) / 1e6
    assert metrics["cost_usd"] == pytest.approx(expected)
    assert (
        "priced from the adapter's prices setting" in (tmp_path / "out" / "agent.log").read_text()
    )


def test_a_rate_limit_is_retried_by_backstay_after_the_provider_s_wait(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(
        faults=[{"fault": "rate_limit", "first": 1, "retry_after_s": RETRY_AFTER_S}],
        reply=HELLO_REPLY,
    )
    run = _engine_run(namespace, fake, tmp_path, "rate-limit")
    served = fake.stats()
    assert run.record.state is TaskState.SUCCEEDED, run.record.reason
    assert [None if f is None else f.kind for f in run.failures] == [FailureKind.RATE_LIMIT, None]
    assert run.sleeps == pytest.approx((RETRY_AFTER_S + RETRY_AFTER_MARGIN_S,))
    # Aider was stopped at its first retry: one call per dispatch, two dispatches.
    assert served["by_status"] == {"429": 1, "200": 1}
    assert [_metrics(run, n)["api_calls"] for n in (0, 1)] == [1, 1]
    assert (tmp_path / "workspace" / "hello.txt").read_text() == "hello world\n"


def test_aider_s_own_retries_are_allowed_when_configured_and_counted_as_calls(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(
        faults=[{"fault": "rate_limit", "first": 1, "retry_after_s": RETRY_AFTER_S}],
        reply=HELLO_REPLY,
    )
    run = _engine_run(namespace, fake, tmp_path, "own-retry", internal_retries=1)
    served = fake.stats()
    assert run.record.state is TaskState.SUCCEEDED, run.record.reason
    assert (len(run.attempts), run.sleeps) == (1, ())
    assert served["by_status"] == {"429": 1, "200": 1}
    assert _metrics(run, 0)["api_calls"] == 2
    log = (Path(run.attempts[0].output_dir) / "agent.log").read_text()
    assert "aider made 2 API call(s), 1 answered, 1 retry of its own" in log


def test_a_context_overflow_fails_the_task_without_a_retry(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(faults=[{"fault": "context_overflow"}])
    run = _engine_run(namespace, fake, tmp_path, "context")
    assert (run.record.state, run.record.reason) == (TaskState.FAILED, "context_limit exceeded")
    assert len(run.attempts) == 1
    assert fake.stats()["by_status"] == {"400": 1}
    metrics = _metrics(run, 0)
    # Aider's own estimate of the refused prompt is not usage the provider counted.
    assert (metrics["tokens_input"], metrics["api_calls"], metrics["cost_usd"]) == (0, 1, None)
    assert str(metrics["error"]).startswith("ERR_LLM_CONTEXT_LENGTH: ")


def test_an_exhausted_quota_pauses_the_task_until_its_reset(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(faults=[{"fault": "quota_exhausted"}])
    run = _engine_run(namespace, fake, tmp_path, "quota")
    assert run.record.state is TaskState.PAUSED, run.record.reason
    (failure,) = run.failures
    assert failure is not None
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED
    # OpenAI's insufficient_quota names no reset: the task waits for a person to resume it.
    assert run.record.next_run_at == failure.resets_at
    assert [e.operation_id for e in run.escalations] == [run.spec.operation_id]
    assert fake.stats()["by_status"] == {"429": 1}


def test_an_invalid_key_fails_and_escalates(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(faults=[{"fault": "unauthorized"}])
    run = _engine_run(namespace, fake, tmp_path, "auth")
    assert run.record.state is TaskState.ESCALATED, run.record.reason
    (failure,) = run.failures
    assert failure is not None
    assert (failure.kind, failure.code) == (FailureKind.AUTH, "ERR_AUTH_INVALID_KEY")
    assert [e.operation_id for e in run.escalations] == [run.spec.operation_id]
    assert fake.stats()["by_status"] == {"401": 1}
    assert CANARY_KEY not in files_under(tmp_path / "state")


def test_a_hung_request_is_killed_at_the_deadline_with_nothing_left(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(faults=[{"fault": "hang"}])
    code, _, output = _harness(namespace, fake, tmp_path, timeout_s=15.0)
    assert code == TIMEOUT_EXIT_CODE
    metrics = json.loads((output / "metrics.json").read_text())
    assert str(metrics["error"]).startswith("ERR_TIMEOUT: ")
    assert metrics["api_calls"] == 1
    assert fake.stats()["by_fault"] == {"hang": 1}
    assert _left_in(namespace, fake) == []


def test_a_stalled_reply_is_killed_by_the_stall_limit_with_nothing_left(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake(faults=[{"fault": "stall"}])
    # Aider is silent while it loads litellm (2-3 s, more on a busy machine): a stall limit
    # must be longer than that, or it fires before the request is sent.
    code, _, output = _harness(namespace, fake, tmp_path, stall_timeout_s=STALL_S)
    assert code == TIMEOUT_EXIT_CODE
    metrics = json.loads((output / "metrics.json").read_text())
    assert str(metrics["error"]).startswith("ERR_STREAM_STALLED: ")
    assert metrics["duration_seconds"] < RUN_TIMEOUT_S / 2
    assert fake.stats()["by_fault"] == {"stall": 1}
    assert _left_in(namespace, fake) == []


def test_a_flag_aider_rejects_is_a_configuration_failure_before_any_request(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    fake = start_fake()
    code, _, output = _harness(namespace, fake, tmp_path, extra_args=["--no-such-flag"])
    assert code == 2  # argparse's exit code, passed on
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["error"] == (
        "ERR_AGENT_CONFIG: aider exited 2 before any request: "
        "aider: error: unrecognized arguments: --no-such-flag"
    )
    assert fake.stats()["requests"] == 0


def test_backstay_run_drives_aider_with_the_key_named_by_api_key_env(
    namespace: NetworkNamespace, start_fake: StartFake, tmp_path: Path
) -> None:
    """The command line end to end: backstay itself runs inside the namespace, Aider as its
    child, the key handed over through ``api_key_env`` and never written out."""
    fake = start_fake(reply=HELLO_REPLY)
    prompt, workspace, output = tmp_path / "prompt.md", tmp_path / "repo", tmp_path / "out"
    prompt.write_text("Write hello world into hello.txt.", encoding="utf-8")
    workspace.mkdir()
    argv = [
        *BACKSTAY,
        "run",
        "--adapter",
        "aider",
        "--model",
        MODEL,
        "--prompt-file",
        str(prompt),
        "--workspace",
        str(workspace),
        "--output-dir",
        str(output),
        "--timeout",
        str(RUN_TIMEOUT_S),
        "--adapter-option",
        f"base_url={fake.url}",
        "--adapter-option",
        "api_key_env=OPENAI_API_KEY",
    ]
    env = {**os.environ, "OPENAI_API_KEY": CANARY_KEY, "UNRELATED_SECRET": CANARY_KEY}
    done = namespace.run(argv, env=env, timeout_s=RUN_TIMEOUT_S + 30)
    assert done.returncode == 0, done.stderr
    assert f"backstay run: aider/{MODEL} succeeded (exit code 0)" in done.stderr
    assert (workspace / "hello.txt").read_text() == "hello world\n"
    assert fake.stats()["by_status"] == {"200": 1}
    assert CANARY_KEY not in done.stdout + done.stderr + files_under(output)


# The contract's scenarios as fake-provider faults (the OpenAI wire Aider speaks).
FAULTS: Final[Mapping[ContractScenario, list[dict[str, Any]]]] = {
    "success": [],
    "network_error": [{"fault": "reset", "first": 2, "after_events": 0}],
    "rate_limit_with_wait": [{"fault": "rate_limit", "first": 1, "retry_after_s": RETRY_AFTER_S}],
    "context_overflow": [{"fault": "context_overflow"}],
    "content_policy": [{"fault": "content_policy"}],
    "quota_exhausted": [{"fault": "quota_exhausted"}],
    "hang": [{"fault": "hang"}],
}


class TestAiderContract(PromptNotOnArgv):
    """The contract suite, with the real Aider in the namespace."""

    model: ClassVar[str] = MODEL
    timeout_s: ClassVar[float] = RUN_TIMEOUT_S
    # Long enough for Aider to start (3-4 s) and, mostly, send its request before the
    # deadline; test_a_hung_request_is_killed_at_the_deadline_with_nothing_left makes sure.
    hang_timeout_s: ClassVar[float] = 6.0
    fakes: dict[ContractScenario, NamespacedFake]

    @pytest.fixture(autouse=True)
    def _setup(self, namespace: NetworkNamespace, start_fake: StartFake) -> None:
        self.namespace = namespace
        self.start_fake = start_fake
        self.fakes = {}

    def _fake(self, scenario: ContractScenario) -> NamespacedFake:
        if scenario not in self.fakes:
            self.fakes[scenario] = self.start_fake(faults=FAULTS[scenario])
        return self.fakes[scenario]

    def make_adapter(self, scenario: ContractScenario) -> AiderAdapter:
        self._fake(scenario)  # started now: not one of the attempt's processes
        return AiderAdapter(launcher=self.namespace.launcher)

    def adapter_config(self, scenario: ContractScenario) -> Mapping[str, Any]:
        return {"base_url": self._fake(scenario).url}

    def adapter_env(self, scenario: ContractScenario) -> Mapping[str, str]:
        return ENV
