"""The adapter reliability contract: its error shape and its retry defaults.

That contract's adapter error is ``{error_type, message, retry_after_seconds, raw_error}``
and it retries an ``unknown`` error once; an authentication or invalid-request failure
must therefore never reach it as ``unknown``.

The contract's own text was not found in the public indexes searched (docs/conformance.md,
"Sources"): its ``adapter:`` section and numbers here are composed from what issue 17
quotes, not copied from the specification.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.support import spec

from backstay import CODES, AgentRequest, AgentResult, Failure, FailureKind, Usage
from backstay.adapters.capture import Capture
from backstay.adapters.mock import MockAdapter
from backstay.config import load_config
from backstay.engine import Engine, TaskSpec
from backstay.errors import ConfigError
from backstay.policy import AGENT_DISPATCH
from backstay.policy.retry import decide
from backstay.testing import ScriptedAdapter, capture_events, testing_mode

DONE = [{"print": "done"}, {"result": "done"}]

CONTRACT_TYPES = {
    "network",
    "rate_limit",
    "timeout",
    "context_limit",
    "content_policy",
    "quota_exhausted",
    "unknown",
}
NEVER_UNKNOWN = (FailureKind.AUTH, FailureKind.INVALID_REQUEST)


@pytest.mark.parametrize(
    "code", sorted(c for c, info in CODES.items() if info.kind in NEVER_UNKNOWN)
)
def test_auth_and_invalid_request_failures_are_never_unknown(code: str) -> None:
    error = Failure(code=code).to_adapter_error()
    assert error["error_type"] != "unknown"
    assert error["raw_error"]["retryable"] is False


def test_auth_and_invalid_request_have_their_own_types() -> None:
    assert Failure(code="ERR_HTTP_401_UNAUTHORIZED").to_adapter_error()["error_type"] == "auth"
    assert (
        Failure(code="ERR_HTTP_400_BAD_REQUEST").to_adapter_error()["error_type"]
        == "invalid_request"
    )


@pytest.mark.parametrize("kind", [k for k in FailureKind if k not in NEVER_UNKNOWN])
def test_every_other_kind_uses_one_of_the_contracts_types(kind: FailureKind) -> None:
    code = next(c for c, info in CODES.items() if info.kind is kind)
    assert Failure(code=code).to_adapter_error()["error_type"] in CONTRACT_TYPES


def test_the_adapter_error_shape_round_trips() -> None:
    failure = Failure(code="ERR_HTTP_429_RATE_LIMITED", message="slow down", retry_after_s=7.0)
    error = failure.to_adapter_error()
    assert set(error) == {"error_type", "message", "retry_after_seconds", "raw_error"}
    assert (error["error_type"], error["retry_after_seconds"]) == ("rate_limit", 7.0)
    assert Failure.from_adapter_error(error) == failure


def test_transient_failures_are_retried_three_times_at_2_4_8_seconds() -> None:
    failure = Failure(code="ERR_HTTP_503_UNAVAILABLE")
    delays = [
        decide(AGENT_DISPATCH, failure, attempt=n, elapsed_s=0.0, previous_delay_s=None, draw=0.5)
        for n in (1, 2, 3, 4)
    ]
    assert [d.delay_s for d in delays[:3]] == [2.0, 4.0, 8.0]
    assert delays[3].retry is False


def test_an_unknown_failure_is_retried_once() -> None:
    failure = Failure(code="ERR_UNKNOWN")
    first = decide(AGENT_DISPATCH, failure, attempt=1, elapsed_s=0, previous_delay_s=None, draw=0)
    second = decide(AGENT_DISPATCH, failure, attempt=2, elapsed_s=0, previous_delay_s=None, draw=0)
    assert (first.retry, second.retry) == (True, False)


DEFAULTS_YAML = """\
adapter:
  max_retries: 3
  initial_backoff_seconds: 2
  backoff_multiplier: 2
  max_backoff_seconds: 60
  retry_on: [network, rate_limit, timeout]
  no_retry_on: [content_policy, context_limit]
"""


def test_the_adapter_defaults_section_is_the_policy_of_agent_runs(tmp_path: Path) -> None:
    file = tmp_path / "defaults.yaml"
    file.write_text(DEFAULTS_YAML, encoding="utf-8")
    config = load_config(file, environ={})
    policy = config.registry.for_operation("agent")
    assert (policy.name, policy.max_attempts, policy.initial_delay_s) == ("adapter", 4, 2)
    assert (policy.multiplier, policy.max_delay_s) == (2, 60)
    assert policy.retry_on == {"network", "server_error", "rate_limit", "timeout"}
    assert policy.never_retry_on == {"content_policy", "context_limit"}
    assert str(config.source_of("retry.policies.adapter.max_attempts")) == f"{file}:2"


def test_a_wrong_adapter_setting_is_named_at_its_line(tmp_path: Path) -> None:
    file = tmp_path / "defaults.yaml"
    file.write_text(DEFAULTS_YAML.replace("max_retries: 3", "max_retries: -1"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"defaults.yaml:2: retry.policies.adapter.max_attempts"):
        load_config(file, environ={})


def test_the_engine_reports_adapter_rate_limited_with_wait_duration(tmp_path: Path) -> None:
    """Through the real engine and the mock agent: a rate-limited attempt, then success."""
    steps = [[{"stderr": "429 rate limit exceeded"}, {"exit": 1}], DONE]
    (tmp_path / "ws").mkdir()
    request = TaskSpec(
        workflow_id="wf",
        task_id="t1",
        adapter="mock",
        model="m",
        workspace=tmp_path / "ws",
        prompt="hi",
        config={"scenario": {"attempts": steps}, "state_dir": str(tmp_path / "mock")},
        policy=AGENT_DISPATCH.derive(initial_delay_s=0.01, max_delay_s=0.01),
        timeout_s=20.0,
    )
    with (
        testing_mode(),
        Engine(tmp_path / "state", adapters={"mock": MockAdapter()}) as engine,
        capture_events() as events,
    ):
        engine.run_sync([request])
    (retrying,) = events.named("task.retrying")
    (waited,) = events.named("adapter.rate_limited")
    assert waited.to_dict()["wait_duration"] == retrying.to_dict()["delay_s"] > 0.0


class _TimedScripted(ScriptedAdapter):
    """The scripted adapter, noting the timeout each attempt was given."""

    def __init__(self, script: dict[str, list[Failure | Usage]]) -> None:
        super().__init__(script)
        self.timeouts: list[float] = []

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        self.timeouts.append(request.timeout_s)
        return await super().dispatch(
            request, operation_id=operation_id, attempt_id=attempt_id, capture=capture
        )


def test_a_timeout_is_retried_with_a_longer_timeout(tmp_path: Path) -> None:
    timeout = Failure(code="ERR_TIMEOUT")
    adapter = _TimedScripted({"t1": [timeout, timeout, Usage()]})
    (tmp_path / "ws").mkdir()
    task = spec(
        tmp_path / "ws",
        adapter=adapter.name,
        prompt="hi",
        timeout_s=10.0,
        policy=AGENT_DISPATCH.derive(timeout_factor=1.5, initial_delay_s=0.01, max_delay_s=0.01),
    )
    with testing_mode(), Engine(tmp_path / "state", adapters={adapter.name: adapter}) as engine:
        engine.run_sync([task])
    assert adapter.timeouts == [10.0, 15.0, 22.5]
