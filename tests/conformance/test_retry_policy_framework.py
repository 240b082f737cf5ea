"""The retry policy framework: its ``retry:`` section in ``agent/config.yml``.

Its keys are camelCase with delays in milliseconds and jitter in percent; backstay reads
them as its own snake_case keys (``backstay.config._dialect``). Scenarios take the
Given / When / Then form, one test each.

The framework's own text was not found in the public indexes searched (docs/conformance.md,
"Sources"): the configuration and scenarios here are composed from the keys, numbers and
scenario names issue 17 quotes, not copied from the specification.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import spec
from typer.testing import CliRunner, Result

import backstay
from backstay import Failure, RetryPolicy, classify
from backstay.cli import app
from backstay.config import load_config
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.errors import ConfigError
from backstay.events.bus import EVENT_NAME_ATTR
from backstay.policy import JitterMode
from backstay.policy.retry import GiveUpReason, decide
from backstay.testing import FakeClock, ScriptedAdapter, testing_mode

AGENT_CONFIG = """\
agent:
  name: reviewer
  model: claude-sonnet
retry:
  defaultPolicy: standard
  policies:
    standard:
      maxAttempts: 3
      backoff: exponential
      initialDelayMs: 1000
      maxDelayMs: 30000
      factor: 2
      jitterPercent: 20
    fast:
      maxAttempts: 2
      backoff: fixed
      initialDelayMs: 500
      maxDelayMs: 500
      factor: 1
      jitterPercent: 0
  operationPolicies:
    llm: standard
    network: fast
  circuitBreaker:
    enabled: true
    failureThreshold: 5
    openDurationMs: 60000
    halfOpenProbes: 1
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "config.yml").write_text(AGENT_CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_framework_config_is_found_at_agent_config_yml(project: Path) -> None:
    config = load_config(environ={})
    assert config.file == Path("agent/config.yml")
    assert config.default_policy == "standard"


def test_each_policy_key_is_mapped(project: Path) -> None:
    standard = load_config(environ={}).policy("standard")
    assert (standard.max_attempts, str(standard.backoff)) == (3, "exponential")
    assert (standard.initial_delay_s, standard.max_delay_s) == (1.0, 30.0)
    assert (standard.multiplier, standard.jitter) == (2, 0.2)


def test_fixed_backoff_is_constant(project: Path) -> None:
    fast = load_config(environ={}).policy("fast")
    assert (str(fast.backoff), fast.initial_delay_s, fast.jitter) == ("constant", 0.5, 0.0)


def test_operation_policies_are_mapped(project: Path) -> None:
    ops = load_config(environ={}).operation_policies
    assert (ops["llm"], ops["network"]) == ("standard", "fast")


def test_the_circuit_breaker_keys_are_mapped(project: Path) -> None:
    breaker = load_config(environ={}).breaker_settings()
    assert (breaker.failure_threshold, breaker.open_duration_s) == (5, 60.0)
    assert breaker.half_open_max_probes == 1


def test_a_disabled_circuit_breaker_never_opens(tmp_path: Path) -> None:
    file = tmp_path / "agent" / "config.yml"
    file.parent.mkdir()
    file.write_text("retry:\n  circuitBreaker:\n    enabled: false\n", encoding="utf-8")
    assert load_config(file, environ={}).engine_breaker() is None


def test_the_agents_other_sections_are_left_alone(project: Path) -> None:
    assert load_config(environ={}).problems == ()


def test_a_wrong_value_names_backstays_key_at_the_framework_keys_line(tmp_path: Path) -> None:
    file = tmp_path / "agent" / "config.yml"
    file.parent.mkdir()
    file.write_text(AGENT_CONFIG.replace("maxAttempts: 3", "maxAttempts: 0"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config.yml:8: retry.policies.standard.max_attempts"):
        load_config(file, environ={})


def test_set_overrides_a_framework_key(project: Path) -> None:
    config = load_config(environ={}, overrides=["retry.policies.fast.maxDelayMs=800"])
    assert config.policy("fast").max_delay_s == 0.8
    assert str(config.source_of("retry.policies.fast.max_delay_s")) == "--set"


@pytest.mark.parametrize("command", [["batch", "--state-dir", "s"], ["suite", "check"]])
def test_set_works_on_commands_that_load_configuration(project: Path, command: list[str]) -> None:
    suite = project / "suite.yaml"
    suite.write_text(
        "suite: s\ndefaults: {adapter: mock, model: m}\ntasks: [{id: t, prompt: hi}]\n",
        encoding="utf-8",
    )
    args = [command[0], *command[1:], str(suite), "--set", "retry.policies.fast.maxAttempts=0"]
    if command[0] == "batch":
        args = [command[0], str(suite), *command[1:], "--set", "retry.policies.fast.maxAttempts=0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "--set: retry.policies.fast.max_attempts" in result.output


def test_scenario_permission_error_is_a_permanent_failure(project: Path) -> None:
    """Given an operation that raises PermissionError
    When the retry policy decides
    Then it is not retried."""
    policy = load_config(environ={}).policy("standard")
    failure = classify(PermissionError(13, "Permission denied"))
    decision = decide(policy, failure, attempt=1, elapsed_s=0.0, previous_delay_s=None, draw=0.5)
    assert (decision.retry, decision.reason) == (False, GiveUpReason.NOT_RETRYABLE)


def test_scenario_max_retries_exceeded_stops(project: Path) -> None:
    """Given a policy with maxAttempts 3
    When the third attempt fails with a transient error
    Then no further retry is scheduled (attempts exhausted)."""
    policy = load_config(environ={}).policy("standard").derive(per_kind={})
    failure = classify(ConnectionResetError(104, "Connection reset by peer"))
    decisions = [
        decide(policy, failure, attempt=n, elapsed_s=0.0, previous_delay_s=None, draw=0.5)
        for n in (1, 2, 3)
    ]
    assert [d.retry for d in decisions] == [True, True, False]
    assert decisions[2].reason == GiveUpReason.ATTEMPTS_EXHAUSTED


def test_scenario_exponential_backoff_grows_by_the_factor(project: Path) -> None:
    """Given initialDelayMs 1000, factor 2, jitterPercent 0
    When two retries are scheduled
    Then they wait 1000 ms and 2000 ms."""
    policy = load_config(environ={}).policy("standard").derive(jitter=0.0, per_kind={})
    failure = classify(ConnectionResetError(104, "Connection reset by peer"))
    delays = [
        decide(policy, failure, attempt=n, elapsed_s=0.0, previous_delay_s=None, draw=0.5).delay_s
        for n in (1, 2)
    ]
    assert delays == [1.0, 2.0]


def test_scenario_max_retries_exceeded_triggers_escalation(tmp_path: Path) -> None:
    """Given a policy with maxAttempts 2 and escalateOnExhaustion
    When every attempt of a task fails with a server error
    Then the task is escalated to a human, not failed."""
    file = tmp_path / "agent" / "config.yml"
    file.parent.mkdir()
    file.write_text(
        "retry:\n  policies:\n    p:\n      maxAttempts: 2\n      initialDelayMs: 10\n"
        "      escalateOnExhaustion: true\n",
        encoding="utf-8",
    )
    policy = load_config(file, environ={}).policy("p")
    server = Failure(code="ERR_HTTP_500_INTERNAL")
    adapter = ScriptedAdapter({"t1": [server, server]})
    (tmp_path / "ws").mkdir()
    task = spec(tmp_path / "ws", adapter=adapter.name, prompt="hi", timeout_s=10.0, policy=policy)
    with testing_mode(), Engine(tmp_path / "state", adapters={adapter.name: adapter}) as engine:
        engine.run_sync([task])
        (record,) = engine.store.tasks()
        assert record.state is TaskState.ESCALATED
        assert len(engine.escalations.list()) == 1


# The retry policy framework's logging levels, per event backstay logs through ``logging``.
QUICK: Final = RetryPolicy(
    name="quick", max_attempts=3, initial_delay_s=1.0, jitter_mode=JitterMode.NONE
)
CANARY: Final = "sk-ant-api03-LoggingCanaryLoggingCanary0123456789"


class _Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures

    def __call__(self) -> str:
        if self.failures:
            self.failures -= 1
            raise ConnectionResetError(f"reset by peer (key {CANARY})")
        return "ok"


def _levels(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    return {getattr(r, EVENT_NAME_ATTR): r.levelno for r in caplog.records if r.name == "backstay"}


def test_each_attempt_failure_is_logged_at_warning_and_success_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="backstay")
    assert backstay.call(_Flaky(2), policy=QUICK, clock=FakeClock()) == "ok"
    failed = [
        r for r in caplog.records if getattr(r, EVENT_NAME_ATTR, None) == "retry.attempt_failed"
    ]
    assert [r.levelno for r in failed] == [logging.WARNING, logging.WARNING]
    assert _levels(caplog)["retry.succeeded"] == logging.INFO
    assert CANARY not in caplog.text


def test_the_final_failure_is_logged_at_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="backstay")
    with pytest.raises(ConnectionResetError):
        backstay.call(_Flaky(5), policy=QUICK, clock=FakeClock())
    assert _levels(caplog)["retry.gave_up"] == logging.ERROR
    assert CANARY not in caplog.text


def test_an_engine_tasks_attempt_failure_and_final_failure_are_logged_at_their_levels(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="backstay")
    server = Failure(code="ERR_HTTP_500_INTERNAL")
    adapter = ScriptedAdapter({"t1": [server, server]})
    (tmp_path / "ws").mkdir()
    task = spec(
        tmp_path / "ws",
        adapter=adapter.name,
        prompt="hi",
        timeout_s=10.0,
        policy=RetryPolicy(name="two", max_attempts=2, initial_delay_s=0.01),
    )
    with testing_mode(), Engine(tmp_path / "state", adapters={adapter.name: adapter}) as engine:
        engine.run_sync([task])
    ended = [
        r.levelno for r in caplog.records if getattr(r, EVENT_NAME_ATTR, None) == "attempt.ended"
    ]
    assert ended == [logging.WARNING, logging.WARNING]
    assert _levels(caplog)["task.failed"] == logging.ERROR


def test_an_engine_tasks_success_is_logged_at_info(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="backstay")
    adapter = ScriptedAdapter()
    (tmp_path / "ws").mkdir()
    task = TaskSpec(
        workflow_id="wf",
        task_id="t1",
        adapter=adapter.name,
        model="m",
        workspace=tmp_path / "ws",
        prompt="hi",
        timeout_s=10.0,
    )
    with testing_mode(), Engine(tmp_path / "state", adapters={adapter.name: adapter}) as engine:
        engine.run_sync([task])
    levels = _levels(caplog)
    assert (levels["attempt.ended"], levels["task.succeeded"]) == (logging.INFO, logging.INFO)


def _run_failing_twice(tmp_path: Path) -> Result:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "attempts:\n"
        f"  - - error: server_error\n      message: 'upstream broke, key {CANARY}'\n"
        f"  - - error: server_error\n      message: 'upstream broke, key {CANARY}'\n"
        "  - - result: done\n",
        encoding="utf-8",
    )
    (tmp_path / "prompt.md").write_text("hi", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    args = ["run", "--adapter", "mock", "--model", "m", "--prompt-file", "prompt.md"]
    args += ["--workspace", "ws", "--output-dir", "out", "--timeout", "30"]
    args += ["--adapter-option", f"scenario={scenario}"]
    args += ["--policy", "{extends: agent_dispatch, initial_delay_s: 0.01, max_delay_s: 0.01}"]
    return CliRunner().invoke(app, args)


def test_a_cli_user_who_configures_nothing_sees_each_failure_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # As a shell runs the CLI: no handler on the root logger (pytest adds its own).
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    result = _run_failing_twice(tmp_path)
    assert result.exit_code == 0, result.output
    failures = [line for line in result.stderr.splitlines() if "retry.attempt_failed" in line]
    assert len(failures) == 2
    assert all(line.startswith("backstay: WARNING: ") for line in failures)
    assert CANARY not in result.stderr + result.stdout


def test_configured_logging_is_left_to_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(logging.getLogger(), "handlers", [logging.NullHandler()])
    result = _run_failing_twice(tmp_path)
    assert result.exit_code == 0, result.output
    assert "retry.attempt_failed" not in result.stderr
