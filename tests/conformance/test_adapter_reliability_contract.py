"""T015 Adapter Reliability Contract, specification 000, taken as printed.

Each test quotes the example it takes, with its section (docs/conformance.md has a row per
example). The engine runs the scripted adapter (``backstay.testing.ScriptedAdapter``) and,
where the scenario names an agent, backstay's mock agent: a real subprocess acting out a
script. Waits run on a fake clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.engine.support import OK, engine, spec

from backstay import AgentRequest, AgentResult, Failure, FailureKind
from backstay.adapters.capture import Capture
from backstay.adapters.mock import MockAdapter
from backstay.adapters.reliability import CONTRACT_ERROR_TYPES, AdapterError
from backstay.config import load_config
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.errors import ConfigError
from backstay.idempotency import IdempotencyGuard
from backstay.idempotency.ids import attempt_id, operation_id
from backstay.policy import AGENT_DISPATCH
from backstay.policy.retry import decide
from backstay.testing import ScriptedAdapter, capture_events, testing_mode

S = TaskState
DONE = [{"print": "done"}, {"result": "done"}]
NETWORK = Failure(code="ERR_CONNECTION_RESET", message="connection reset by peer")


def _contract_task(tmp_path: Path, script: list[Any], **changes: Any) -> tuple[Any, Any, Any]:
    """A task under the contract's default policy (``agent_dispatch``), run to its end by
    the engine on a fake clock: the task record, the events, the scripted adapter."""
    adapter = _Scripted({"t1": script})
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    task = spec(workspace, adapter=adapter.name, policy=AGENT_DISPATCH, **changes)
    with engine(tmp_path / "state", adapter) as eng, capture_events() as events:
        eng.run_sync([task])
        record = eng.store.task(task.operation_id)
        escalations = eng.escalations.list()
    return record, events, (adapter, escalations)


class _Scripted(ScriptedAdapter):
    """The scripted adapter, noting the timeout each attempt was given."""

    name = "fake"

    def __init__(self, script: dict[str, list[Any]]) -> None:
        super().__init__(script)
        self.timeouts: list[float] = []

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        self.timeouts.append(request.timeout_s)
        return await super().dispatch(
            request, operation_id=operation_id, attempt_id=attempt_id, capture=capture
        )


# -- Acceptance Criteria ---------------------------------------------------------------


def test_scenario_network_error_triggers_retry_with_backoff(tmp_path: Path) -> None:
    # "Scenario: Network error triggers retry with backoff": max_retries=3 and
    # initial_backoff=2s; "retries up to 3 times", "waits 2s, 4s, 8s", "emits a
    # task.retrying observability event for each attempt"
    record, events, _ = _contract_task(tmp_path, [NETWORK, NETWORK, NETWORK, OK])
    assert (record.state, record.attempts_used) == (S.SUCCEEDED, 4)
    retrying = events.named("task.retrying")
    assert [e.to_dict()["delay_s"] for e in retrying] == [2.0, 4.0, 8.0]


def test_scenario_rate_limit_triggers_retry_after_wait(tmp_path: Path) -> None:
    # "Scenario: Rate limit triggers retry after wait": HTTP 429 with Retry-After: 30s;
    # "waits the Retry-After duration", "emits a adapter.rate_limited event with
    # wait_duration"
    limited = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=30.0)
    record, events, _ = _contract_task(tmp_path, [limited, OK])
    assert record.state is S.SUCCEEDED
    (waited,) = events.named("adapter.rate_limited")
    assert 30.0 <= waited.to_dict()["wait_duration"] < 31.0  # never sooner


def test_scenario_context_limit_error_is_not_retried(tmp_path: Path) -> None:
    # "Scenario: Context limit error is NOT retried": "returns error_type=context_limit",
    # "the engine marks the task FAILED with reason 'context_limit exceeded'"
    overflow = Failure(code="ERR_LLM_CONTEXT_LENGTH", message="input too long")
    assert AdapterError.from_failure(overflow).error_type == "context_limit"
    record, _, _ = _contract_task(tmp_path, [overflow, OK])
    assert (record.state, record.reason, record.attempts_used) == (
        S.FAILED,
        "context_limit exceeded",
        1,
    )


def test_scenario_content_policy_violation_is_not_retried_and_escalates(tmp_path: Path) -> None:
    # "Scenario: Content policy violation is NOT retried": "escalates to HIL with error
    # context (for operator review)"; the table: "FAILED + HIL escalation"
    refused = Failure(code="ERR_LLM_CONTENT_FILTER", message="blocked by the content filter")
    record, events, (_, escalations) = _contract_task(tmp_path, [refused, OK])
    assert (record.state, record.attempts_used) == (S.FAILED, 1)
    (escalation,) = escalations
    assert escalation.failure.kind is FailureKind.CONTENT_POLICY
    assert escalation.context  # the error context an operator reviews
    assert [n for n in events.names if n.startswith("task.")][-2:] == [
        "task.failed",
        "task.escalated",
    ]


def test_scenario_max_retries_exhausted_fails_the_task(tmp_path: Path) -> None:
    # "Scenario: Max retries exhausted → task FAILED": "max_retries=3 and all 3 attempts
    # fail with network error". max_retries counts retries (the first scenario: "retries
    # up to 3 times", three waits), so the attempts are 4 (docs/conformance.md).
    record, events, (adapter, _) = _contract_task(tmp_path, [NETWORK] * 5)
    assert (record.state, record.attempts_used) == (S.FAILED, 4)
    assert len(adapter.calls) == 4
    ended = [e.to_dict() for e in events.named("attempt.ended")]
    assert [e["attempt"] for e in ended] == [1, 2, 3, 4]  # every attempt observed
    with Engine(tmp_path / "state") as reopened:  # the state file holds the end
        stored = reopened.store.task(record.operation_id)
        assert stored is not None
        assert stored.state is S.FAILED


def test_scenario_operation_id_is_stable_across_retries(tmp_path: Path) -> None:
    # "Scenario: operation_id is stable across retries": operation_id=
    # "workflow-xyz:task-design-l1:run-uuid"; "the same operation_id is reused on retry"
    record, _, (adapter, _) = _contract_task(
        tmp_path,
        [NETWORK, OK],
        workflow_id="workflow-xyz",
        task_id="task-design-l1",
    )
    # backstay's task_run_id is the run number (and tier): run_01 for the first run
    assert record.operation_id == "workflow-xyz:task-design-l1:run_01"
    assert {c.operation_id for c in adapter.calls} == {record.operation_id}


def test_scenario_attempt_id_changes_per_retry(tmp_path: Path) -> None:
    # "Scenario: attempt_id changes per retry": "attempt_id = operation_id + ':attempt_2'",
    # "both operation_id and attempt_id are logged in observability"
    record, events, (adapter, _) = _contract_task(tmp_path, [NETWORK, OK])
    op = record.operation_id
    assert [c.attempt_id for c in adapter.calls] == [f"{op}:attempt_1", f"{op}:attempt_2"]
    second = events.named("attempt.ended")[-1].to_dict()
    assert (second["operation"], second["attempt_id"]) == (op, f"{op}:attempt_2")


def test_scenario_mock_and_real_adapter_conform_to_the_same_contract() -> None:
    # "Scenario: Mock and real adapter conform to same contract": the contract suite
    # (backstay.testing.contract.AdapterContract) runs against the mock agent
    # (tests/testing/test_contract_mock.py) and the real Claude Code CLI
    # (tests/adapters/cli/claude_code/test_claude_code_cli.py, via RealCliContract)
    from tests.adapters.cli.claude_code.test_claude_code_cli import (  # noqa: PLC0415
        TestClaudeCodeContract,
    )
    from tests.testing.test_contract_mock import TestMockAdapter  # noqa: PLC0415

    from backstay.testing.contract import AdapterContract  # noqa: PLC0415

    assert issubclass(TestMockAdapter, AdapterContract)
    assert issubclass(TestClaudeCodeContract, AdapterContract)


# -- Error Taxonomy ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "error_type", "state", "attempts"),
    [
        ("ERR_CONNECTION_RESET", "network", S.FAILED, 4),  # Retry with backoff
        ("ERR_HTTP_429_RATE_LIMITED", "rate_limit", S.FAILED, 4),  # Wait Retry-After, retry
        ("ERR_TIMEOUT", "timeout", S.FAILED, 4),  # Retry with longer timeout
        ("ERR_LLM_CONTEXT_LENGTH", "context_limit", S.FAILED, 1),  # FAILED (context_limit)
        ("ERR_LLM_CONTENT_FILTER", "content_policy", S.FAILED, 1),  # FAILED + HIL escalation
        ("ERR_LLM_QUOTA_EXHAUSTED", "quota_exhausted", S.PAUSED, 1),  # PAUSED + HIL escalation
        ("ERR_UNKNOWN", "unknown", S.FAILED, 2),  # Retry once, then FAILED
    ],
)
def test_each_row_of_the_error_taxonomy(
    tmp_path: Path, code: str, error_type: str, state: TaskState, attempts: int
) -> None:
    # "## Error Taxonomy": | Error Type | Retry? | Engine Action |
    failure = Failure(code=code)
    assert AdapterError.from_failure(failure).error_type == error_type
    record, _, (_, escalations) = _contract_task(tmp_path, [failure] * 5)
    assert (record.state, record.attempts_used) == (state, attempts)
    escalated = error_type in ("content_policy", "quota_exhausted")
    assert bool(escalations) is escalated


def test_a_timeout_is_retried_with_a_longer_timeout_by_default(tmp_path: Path) -> None:
    # "| `timeout` | Yes | Retry with longer timeout | Configurable per-adapter |"
    timeout = Failure(code="ERR_TIMEOUT")
    _, _, (adapter, _) = _contract_task(tmp_path, [timeout, timeout, OK], timeout_s=10.0)
    assert adapter.timeouts == [10.0, 20.0, 40.0]


# -- Adapter Contract Interface ----------------------------------------------------------


def test_the_printed_adapter_error_dataclass_is_accepted() -> None:
    # "## Adapter Contract Interface": @dataclass class AdapterError: error_type: Literal[...];
    # message: str; retry_after_seconds: Optional[int] = None; raw_error: Optional[str]
    error = AdapterError("rate_limit", "429 Too Many Requests", 30, '{"error": "slow down"}')
    failure = Failure.from_adapter_error(error)
    assert (failure.kind, failure.retry_after_s) == (FailureKind.RATE_LIMIT, 30.0)
    assert failure.message == "429 Too Many Requests"
    assert error.to_failure() == failure
    assert set(CONTRACT_ERROR_TYPES) == {
        "network",
        "rate_limit",
        "timeout",
        "context_limit",
        "content_policy",
        "quota_exhausted",
        "unknown",
    }
    for kind in CONTRACT_ERROR_TYPES:
        assert AdapterError(kind, "m").to_failure().kind.value == kind
    with pytest.raises(ConfigError, match=r"AdapterError\.error_type"):
        AdapterError("disk_full", "m")  # type: ignore[arg-type]


def test_backstays_adapter_error_has_the_printed_field_types() -> None:
    # "retry_after_seconds: Optional[int] = None", "raw_error: Optional[str] = None"
    failure = Failure(code="ERR_HTTP_429_RATE_LIMITED", message="slow down", retry_after_s=7.5)
    printed = failure.to_adapter_error()
    assert set(printed) == {"error_type", "message", "retry_after_seconds", "raw_error"}
    assert (printed["error_type"], printed["retry_after_seconds"]) == ("rate_limit", 8)
    assert isinstance(printed["raw_error"], str)
    assert Failure.from_adapter_error(printed) == failure  # nothing lost: raw_error holds it
    assert AdapterError(**printed).to_failure() == failure


def test_operation_id_and_attempt_id_as_printed() -> None:
    # "def operation_id(self, workflow_id, task_id, task_run_id) -> str: return
    # f'{workflow_id}:{task_id}:{task_run_id}'", "def attempt_id(self, workflow_id,
    # task_id, task_run_id, attempt: int) -> str: return
    # f'{workflow_id}:{task_id}:{task_run_id}:attempt_{attempt}'"
    assert operation_id("wf", "design", "run-1") == "wf:design:run-1"
    assert attempt_id("wf", "design", "run-1", 2) == "wf:design:run-1:attempt_2"
    assert attempt_id(operation_id("wf", "design", "run-1"), 2) == "wf:design:run-1:attempt_2"


def test_backstay_run_uses_the_printed_id_format(tmp_path: Path) -> None:
    # "attempt_id ... Used for attempt-level observability": backstay run's attempts
    (tmp_path / "ws").mkdir()
    code = MockAdapter().run(
        "mock-model",
        None,
        tmp_path / "ws",
        tmp_path / "out",
        {"task_description": "hi", "scenario": {"attempts": [DONE]}},
        20.0,
    )
    assert code == 0
    log = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "out").rglob("*.log"))
    assert ":attempt_1" in log
    first = next(line for line in log.splitlines() if ":attempt_1" in line)
    op = first.split("attempt ", 1)[1].split(":attempt_1")[0]
    assert op.startswith("run:mock:")
    assert len(op.split(":")) == 3


# -- Retry/Backoff Defaults ----------------------------------------------------------------

DEFAULTS_YAML = """\
# config/defaults.yaml
adapter:
  max_retries: 3
  initial_backoff_seconds: 2.0
  backoff_multiplier: 2.0
  max_backoff_seconds: 60.0
  retry_on: [network, rate_limit, timeout]
  no_retry_on: [context_limit, content_policy, quota_exhausted]
"""


def _decide(policy: Any, code: str, attempt: int) -> Any:
    return decide(
        policy, Failure(code=code), attempt=attempt, elapsed_s=0, previous_delay_s=None, draw=0
    )


def test_the_printed_defaults_yaml_is_found_at_its_path_and_is_the_agent_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "## Retry/Backoff Defaults": # config/defaults.yaml, adapter: max_retries: 3 …
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "defaults.yaml").write_text(DEFAULTS_YAML, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = load_config(environ={})
    policy = config.registry.for_operation("agent")
    assert (policy.name, policy.max_attempts, policy.initial_delay_s) == ("adapter", 4, 2.0)
    assert (policy.multiplier, policy.max_delay_s) == (2.0, 60.0)
    assert [_decide(policy, "ERR_CONNECTION_RESET", n).delay_s for n in (1, 2, 3)] == [2, 4, 8]
    assert _decide(policy, "ERR_CONNECTION_RESET", 4).retry is False
    for code in ("ERR_LLM_CONTEXT_LENGTH", "ERR_LLM_CONTENT_FILTER", "ERR_LLM_QUOTA_EXHAUSTED"):
        assert _decide(policy, code, 1).retry is False


def test_with_the_printed_defaults_unknown_is_still_retried_once(tmp_path: Path) -> None:
    # "| `unknown` | Yes (1x) | Retry once, then FAILED | Catch-all |" beside the printed
    # retry_on: [network, rate_limit, timeout]
    file = tmp_path / "defaults.yaml"
    file.write_text(DEFAULTS_YAML, encoding="utf-8")
    policy = load_config(file, environ={}).registry.for_operation("agent")
    assert (_decide(policy, "ERR_UNKNOWN", 1).retry, _decide(policy, "ERR_UNKNOWN", 2).retry) == (
        True,
        False,
    )


def test_a_wrong_adapter_setting_is_named_at_its_line(tmp_path: Path) -> None:
    file = tmp_path / "defaults.yaml"
    file.write_text(DEFAULTS_YAML.replace("max_retries: 3", "max_retries: -1"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"defaults.yaml:3: retry.policies.adapter.max_attempts"):
        load_config(file, environ={})


# -- Contract Test Suite, Test Strategy, Rollback/Fallback --------------------------------


def test_the_contract_test_suite_has_the_printed_tests() -> None:
    # "class AdapterContractTests": test_network_error_triggers_retry,
    # test_rate_limit_waits_retry_after, test_context_limit_not_retried,
    # test_content_policy_escalates_to_hil, test_idempotency_key_format,
    # test_error_taxonomy_completeness → backstay.testing.contract.AdapterContract
    from backstay.testing.contract import AdapterContract  # noqa: PLC0415

    checks = {n for n in dir(AdapterContract) if n.startswith("test_")}
    for word in ("network", "rate_limit", "context", "content_policy", "attempt_id"):
        assert any(word in n for n in checks), word


def test_integration_mock_adapter_429_then_success(tmp_path: Path) -> None:
    # "Integration test: end-to-end run with simulated rate limit (mock adapter returns 429
    # on attempt 1, succeeds on attempt 2)"
    (tmp_path / "ws").mkdir()
    task = TaskSpec(
        workflow_id="wf",
        task_id="t1",
        adapter="mock",
        model="m",
        workspace=tmp_path / "ws",
        prompt="hi",
        config={
            "scenario": {"attempts": [[{"stderr": "429 rate limit exceeded"}, {"exit": 1}], DONE]},
            "state_dir": str(tmp_path / "mock"),
        },
        policy=AGENT_DISPATCH.derive(initial_delay_s=0.01, max_delay_s=0.01),
        timeout_s=20.0,
    )
    with (
        testing_mode(),
        Engine(tmp_path / "state", adapters={"mock": MockAdapter()}) as eng,
        capture_events() as events,
    ):
        eng.run_sync([task])
        record = eng.store.task(task.operation_id)
    assert record is not None
    assert (record.state, record.attempts_used) == (S.SUCCEEDED, 2)
    (retrying,) = events.named("task.retrying")
    (waited,) = events.named("adapter.rate_limited")
    assert waited.to_dict()["wait_duration"] == retrying.to_dict()["delay_s"] > 0.0


def test_an_adapter_error_without_error_type_is_unknown() -> None:
    # "If adapter does not conform to contract (missing error_type), treat as unknown"
    failure = Failure.from_adapter_error({"message": "it broke", "raw_error": "trace"})
    assert (failure.kind, failure.message) == (FailureKind.UNKNOWN, "it broke")


def test_a_duplicate_call_returns_the_cached_result(tmp_path: Path) -> None:
    # "If idempotency key conflicts (duplicate call detected), return cached result if
    # available, else proceed with new call"
    from backstay.idempotency.memory import MemoryOperationStore  # noqa: PLC0415

    guard = IdempotencyGuard(MemoryOperationStore())
    calls: list[int] = []

    async def work() -> dict[str, int]:
        calls.append(1)
        return {"answer": 42}

    key = operation_id("wf", "t1", "run-1")
    first = asyncio.run(guard.run(key, work))
    second = asyncio.run(guard.run(key, work))
    assert first == second == {"answer": 42}
    assert calls == [1]


@pytest.mark.parametrize(
    ("code", "error_type"),
    [("ERR_HTTP_401_UNAUTHORIZED", "auth"), ("ERR_HTTP_400_BAD_REQUEST", "invalid_request")],
)
def test_auth_and_invalid_request_are_never_unknown(code: str, error_type: str) -> None:
    # backstay's two types beyond the printed seven (docs/conformance.md): a failure that
    # retrying cannot fix must never reach the contract as the retried-once "unknown"
    printed = Failure(code=code).to_adapter_error()
    assert printed["error_type"] == error_type
    assert AdapterError(**printed).to_failure().retryable is False
