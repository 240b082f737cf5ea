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
from typing import Any, Final

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
    # "Each attempt MUST be logged" (FR-041-31): backstay run says each failed attempt on
    # stderr (a readable line, as batch prints it), redacted
    monkeypatch.chdir(tmp_path)
    # As a shell runs the CLI: no handler on the root logger (pytest adds its own).
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    result = _run_failing_twice(tmp_path)
    assert result.exit_code == 0, result.output
    failures = [line for line in result.stderr.splitlines() if "failed on mock/m" in line]
    assert [line.split("run: ", 1)[1].split(" failed")[0] for line in failures] == [
        "attempt 1",
        "attempt 2",
    ]
    assert CANARY not in result.stderr + result.stdout


def test_configured_logging_gets_each_attempt_as_a_structured_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Structured logging | JSON" (NFR-041-28): an application that configures logging
    # gets every failed attempt as a JSON record of the backstay logger, redacted
    monkeypatch.chdir(tmp_path)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(level=logging.DEBUG)
    monkeypatch.setattr(logging.getLogger(), "handlers", [keep])
    result = _run_failing_twice(tmp_path)
    assert result.exit_code == 0, result.output
    failed = [r for r in records if getattr(r, EVENT_NAME_ATTR, None) == "retry.attempt_failed"]
    assert len(failed) == 2
    assert all(r.getMessage().startswith("{") for r in failed)
    assert all(CANARY not in r.getMessage() for r in records)


# -- the specification's own "Configuration Schema", as printed ---------------------------

PRINTED_CONFIG = """\
retry:
  defaultPolicy: standard
  policies:
    standard:
      maxAttempts: 3
      backoff: exponential
      initialDelayMs: 100
      maxDelayMs: 5000
      factor: 2.0
      jitterPercent: 10
    aggressive:
      maxAttempts: 5
      backoff: exponential
      initialDelayMs: 50
      maxDelayMs: 30000
      factor: 2.0
      jitterPercent: 20
    noRetry:
      maxAttempts: 1

  operationPolicies:
    network: aggressive
    file: standard
    permission: noRetry

  circuitBreaker:
    enabled: true
    failureThreshold: 5
    openDurationMs: 30000
    halfOpenProbes: 1
"""
RETRYABLE_KINDS = {
    "server_error": "ERR_HTTP_503_UNAVAILABLE",
    "timeout": "ERR_TIMEOUT",
    "network": "ERR_CONNECTION_RESET",
    "rate_limit": "ERR_HTTP_429_RATE_LIMITED",
}  # "unknown" is retried once by the taxonomy whatever a policy says (docs/conformance.md)


@pytest.fixture
def printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "config.yml").write_text(PRINTED_CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _decide_code(policy: RetryPolicy, code: str, attempt: int) -> Any:
    failure = Failure(code=code)
    return decide(policy, failure, attempt=attempt, elapsed_s=0.0, previous_delay_s=None, draw=0.5)


def test_the_printed_configuration_schema_is_read_from_agent_config_yml(printed: Path) -> None:
    # "### Configuration Schema" (FR-041-66 "Config MUST be in agent/config.yml")
    config = load_config(environ={})
    assert config.problems == ()
    assert config.default_policy == "standard"
    ops = config.operation_policies
    assert (ops["network"], ops["file"], ops["permission"]) == ("aggressive", "standard", "noRetry")
    assert config.policy("noRetry").max_attempts == 1
    breaker = config.breaker_settings()
    assert (breaker.failure_threshold, breaker.open_duration_s, breaker.half_open_max_probes) == (
        5,
        30.0,
        1,
    )


@pytest.mark.parametrize("kind", sorted(RETRYABLE_KINDS))
def test_a_policy_named_like_a_built_in_means_exactly_what_is_printed(
    printed: Path, kind: str
) -> None:
    # "aggressive: maxAttempts: 5" → 5 attempts, "standard: initialDelayMs: 100" → 100 ms,
    # for every retryable kind: no per-kind limits of the built-ins come along unseen
    config = load_config(environ={})
    aggressive, standard = config.policy("aggressive"), config.policy("standard")
    code = RETRYABLE_KINDS[kind]
    assert _decide_code(aggressive, code, 4).retry is True
    assert _decide_code(aggressive, code, 5).retry is False
    assert _decide_code(standard, code, 2).retry is True
    assert _decide_code(standard, code, 3).retry is False
    assert _decide_code(standard, code, 1).delay_s == pytest.approx(0.1)  # draw 0.5: no jitter


def test_the_configured_circuit_breaker_applies_to_call_with_an_operation(printed: Path) -> None:
    # "circuitBreaker: failureThreshold: 5" and the RetryExecutor's "if
    # (_circuitBreaker?.IsOpen(operationType) == true) throw new CircuitOpenException":
    # Scenario 4 "Circuit Breaker Opens" through call(operation=…)
    from backstay.errors import CircuitOpen  # noqa: PLC0415
    from backstay.policy.registry import DEFAULT_REGISTRY, use_breakers, use_registry  # noqa: PLC0415

    calls: list[int] = []

    def down() -> None:
        calls.append(1)
        raise ConnectionResetError("connection reset by peer")

    backstay.configure()
    try:
        for _ in range(5):  # one attempt a call (noRetry), five failures of "network"
            with pytest.raises(ConnectionResetError):
                backstay.call(down, policy="noRetry", operation="network")
        with pytest.raises(CircuitOpen):  # fails fast: down() is not called
            backstay.call(down, policy="noRetry", operation="network")
        assert len(calls) == 5
        assert backstay.call(lambda: "ok", operation="file") == "ok"  # one circuit per type
    finally:
        use_registry(DEFAULT_REGISTRY)
        use_breakers(None)


def test_scenario_5_circuit_recovery(printed: Path) -> None:
    # "Scenario 5: Circuit Recovery": timeout expires, half-open, probe succeeds, closes
    # (openDurationMs set to 50 with --set's form, so that the test waits 50 ms, not 30 s)
    import time  # noqa: PLC0415

    from backstay.errors import CircuitOpen  # noqa: PLC0415
    from backstay.policy.registry import (  # noqa: PLC0415
        DEFAULT_REGISTRY,
        configured_breaker,
        use_breakers,
        use_registry,
    )

    def down() -> None:
        raise ConnectionResetError("connection reset by peer")

    backstay.configure(overrides=["retry.circuitBreaker.openDurationMs=50"])
    try:
        for _ in range(5):
            with pytest.raises(ConnectionResetError):
                backstay.call(down, policy="noRetry", operation="network")
        with pytest.raises(CircuitOpen):
            backstay.call(down, policy="noRetry", operation="network")
        time.sleep(0.06)
        assert backstay.call(lambda: "probe", operation="network") == "probe"
        breaker = configured_breaker("network")
        assert breaker is not None
        assert str(breaker.snapshot().state) == "closed"
    finally:
        use_registry(DEFAULT_REGISTRY)
        use_breakers(None)


def test_scenario_6_cancellation_stops_a_retry_at_once() -> None:
    # "Scenario 6: Cancellation": a retry waiting out its backoff is cancelled immediately
    import asyncio  # noqa: PLC0415

    attempts: list[int] = []

    async def flaky() -> None:
        attempts.append(1)
        raise ConnectionResetError("connection reset by peer")

    async def scenario() -> None:
        slow = RetryPolicy(name="slow", max_attempts=5, initial_delay_s=30.0, max_delay_s=30.0)
        task = asyncio.ensure_future(backstay.acall(flaky, policy=slow))
        while not attempts:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5.0)

    asyncio.run(scenario())
    assert attempts == [1]
