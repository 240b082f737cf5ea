"""BaseAdapter: the contract kept around ``execute``, and the harness flow of ``run``.

The harness tests drive ``MockAdapter`` (a real subprocess) end to end; the translation
tests use small real subclasses whose ``execute`` raises.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from tests.adapters.support import CANARY_ENV_VALUE, CANARY_KEY, gone_within, spawned_pids

from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import METRICS_KEYS, Capture, Stream
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.mock import MockAdapter
from backstay.adapters.registry import get_adapter
from backstay.errors import AdapterError, ConfigError
from backstay.events import AttemptFailed
from backstay.failure import Failure
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.policy import RetryPolicy
from backstay.testing import capture_events, testing_mode

FAST_RETRY = RetryPolicy(name="fast", max_attempts=3, initial_delay_s=0.01, max_delay_s=0.01)


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("solve it", encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return {"prompt_file": prompt, "workspace": workspace, "output_dir": tmp_path / "out"}


def run_mock(dirs: dict[str, Path], attempts: list[list[dict[str, Any]]], **kwargs: Any) -> int:
    """``MockAdapter().run`` acting out ``attempts``: one attempt unless ``policy`` is given
    (``policy=None`` is the default policy, the contract's ``agent_dispatch``)."""
    timeout = kwargs.pop("timeout", 10.0)
    kwargs.setdefault("policy", "no_retry")
    return MockAdapter().run(
        "mock-model",
        dirs["prompt_file"],
        dirs["workspace"],
        dirs["output_dir"],
        {"scenario": {"attempts": attempts}},
        timeout,
        **kwargs,
    )


def metrics(dirs: dict[str, Path]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((dirs["output_dir"] / "metrics.json").read_text())
    return loaded


def metrics_of(dirs: dict[str, Path], attempt: int) -> dict[str, Any]:
    path = dirs["output_dir"] / f"attempt_{attempt}" / "metrics.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def log(dirs: dict[str, Path], stream: Stream) -> str:
    return (dirs["output_dir"] / stream.file_name).read_text()


def test_a_successful_run_returns_0_with_logs_and_metrics(dirs: dict[str, Path]) -> None:
    steps = [
        {"print": "thinking"},
        {"write_file": "answer.txt", "text": "42"},
        {"result": "done", "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.02},
    ]
    assert run_mock(dirs, [steps]) == 0
    m = metrics(dirs)
    assert tuple(m) == METRICS_KEYS
    assert (m["tokens_input"], m["tokens_output"], m["tokens_total"]) == (100, 10, 110)
    assert (m["cost_usd"], m["api_calls"], m["exit_code"], m["error"]) == (0.02, 1, 0, None)
    assert log(dirs, Stream.STDOUT).startswith("thinking\n")
    assert "run succeeded with exit code 0" in log(dirs, Stream.AGENT)
    assert (dirs["workspace"] / "answer.txt").read_text() == "42"


def test_a_failed_run_returns_the_agent_exit_code_and_records_the_error(
    dirs: dict[str, Path],
) -> None:
    assert run_mock(dirs, [[{"error": "rate_limit", "input_tokens": 7}]]) == 1
    m = metrics(dirs)
    assert m["error"].startswith("ERR_HTTP_429_RATE_LIMITED: API Error: Request rejected (429)")
    assert (m["exit_code"], m["tokens_input"]) == (1, 7)


def test_an_agent_exiting_non_zero_without_a_result_returns_that_code(
    dirs: dict[str, Path],
) -> None:
    assert run_mock(dirs, [[{"stderr": "segfault-ish"}, {"exit": 3}]]) == 3
    assert metrics(dirs)["error"].startswith("ERR_AGENT_FAILED: segfault-ish")


def test_a_run_past_its_deadline_returns_124_with_metrics(dirs: dict[str, Path]) -> None:
    started = time.monotonic()
    assert run_mock(dirs, [[{"print": "working"}, {"hang": True}]], timeout=0.5) == 124
    assert time.monotonic() - started < 5
    m = metrics(dirs)
    assert (m["exit_code"], m["error"].split(":")[0]) == (124, "ERR_TIMEOUT")
    assert log(dirs, Stream.STDOUT) == "working\n"


def test_a_stalled_run_ends_as_a_timeout(dirs: dict[str, Path]) -> None:
    code = run_mock(dirs, [[{"stall": "Let me look"}]], timeout=30, stall_timeout_s=0.5)
    assert code == 124
    assert metrics(dirs)["error"].startswith("ERR_STREAM_STALLED")


@pytest.mark.parametrize("single", ["no_retry", "none"])
def test_a_single_attempt_policy_does_not_retry_a_retryable_failure(
    dirs: dict[str, Path], single: str
) -> None:
    assert run_mock(dirs, [[{"error": "overloaded"}], [{"result": "done"}]], policy=single) == 1
    assert log(dirs, Stream.AGENT).count("acts out") == 1
    assert not (dirs["output_dir"] / "attempt_1").exists()


def test_without_a_policy_a_transient_failure_is_retried_under_agent_dispatch(
    dirs: dict[str, Path],
) -> None:
    attempts = [[{"error": "overloaded"}], [{"result": "done"}]]
    with testing_mode(attempts=None), capture_events() as events:
        assert run_mock(dirs, attempts, policy=None) == 0
    assert [e.delay_s for e in events if isinstance(e, AttemptFailed)] == [2.0]
    assert metrics(dirs)["api_calls"] == 2
    assert log(dirs, Stream.AGENT).count("acts out") == 2


def test_with_a_policy_retries_go_through_acall_and_usage_adds_up(
    dirs: dict[str, Path],
) -> None:
    attempts = [
        [{"error": "overloaded", "input_tokens": 5, "output_tokens": 1}],
        [{"result": "done", "input_tokens": 50, "output_tokens": 10}],
    ]
    assert run_mock(dirs, attempts, policy=FAST_RETRY) == 0
    m = metrics(dirs)
    assert (m["tokens_input"], m["tokens_output"], m["api_calls"], m["error"]) == (
        55,
        11,
        2,
        None,
    )
    assert log(dirs, Stream.AGENT).count("acts out") == 2


def test_a_policy_does_not_retry_what_is_not_retryable(dirs: dict[str, Path]) -> None:
    attempts = [[{"error": "context_overflow"}], [{"result": "done"}]]
    assert run_mock(dirs, attempts, policy=FAST_RETRY) == 1
    assert metrics(dirs)["error"].startswith("ERR_LLM_CONTEXT_LENGTH")


def test_invalid_config_raises_before_anything_runs(dirs: dict[str, Path]) -> None:
    with pytest.raises(ConfigError) as info:
        MockAdapter().run(
            "m", dirs["prompt_file"], dirs["workspace"], dirs["output_dir"], {"x": 1}, 5
        )
    assert info.value.where == "config.x"
    assert not dirs["output_dir"].exists()


def test_a_missing_prompt_file_fails_the_run_as_an_invalid_request(
    dirs: dict[str, Path],
) -> None:
    dirs["prompt_file"].unlink()
    assert run_mock(dirs, [[{"result": "done"}]]) == 1
    assert metrics(dirs)["error"].startswith("ERR_REQUEST_INVALID: prompt_file")


def test_a_canary_secret_is_redacted_in_every_log_and_in_metrics(
    dirs: dict[str, Path],
) -> None:
    steps = [
        {"print": f"stdout {CANARY_KEY}"},
        {"stderr": f"stderr {CANARY_KEY}"},
        {"print_env": "MY_SERVICE_TOKEN"},
        {"error": "auth", "message": f"Invalid API key {CANARY_KEY} / {CANARY_ENV_VALUE}"},
    ]
    env = {"MY_SERVICE_TOKEN": CANARY_ENV_VALUE}
    assert run_mock(dirs, [steps], env=env) == 1
    assert "MY_SERVICE_TOKEN=[REDACTED]" in log(dirs, Stream.STDOUT)
    files = [
        *(dirs["output_dir"] / s.file_name for s in Stream),
        dirs["output_dir"] / "metrics.json",
    ]
    for file in files:
        text = file.read_text()
        assert CANARY_KEY not in text, file.name
        assert CANARY_ENV_VALUE not in text, file.name
        assert "[REDACTED]" in text, file.name


def test_a_cancelled_run_kills_the_agent_and_still_writes_metrics(
    dirs: dict[str, Path],
) -> None:
    stdout = dirs["output_dir"] / "stdout.log"

    async def main() -> None:
        task = asyncio.create_task(
            MockAdapter().arun(
                "m",
                dirs["prompt_file"],
                dirs["workspace"],
                dirs["output_dir"],
                {"scenario": {"attempts": [[{"spawn": 60}, {"hang": True}]]}},
                30,
            )
        )
        deadline = time.monotonic() + 5
        while not (stdout.exists() and spawned_pids(stdout)) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    [grandchild] = spawned_pids(stdout)
    assert gone_within(grandchild)
    m = metrics(dirs)
    assert (m["exit_code"], m["error"].split(":")[0]) == (130, "ERR_CANCELLED")


class _Raising(BaseAdapter):
    """An adapter whose attempt raises a foreign exception."""

    name: ClassVar[str] = "raising"
    error: ClassVar[Exception] = RuntimeError("boom")

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        raise self.error


class _Refused(_Raising):
    error: ClassVar[Exception] = ConnectionRefusedError(111, "Connection refused")


class _FailedResult(BaseAdapter):
    """An adapter that returns a failed result instead of raising."""

    name: ClassVar[str] = "failed-result"

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        failure = Failure(code="ERR_HTTP_503_UNAVAILABLE", message="down")
        return AgentResult.failed(failure, output="half an answer", exit_code=1)


def _dispatch(
    adapter: BaseAdapter, tmp_path: Path, config: dict[str, Any] | None = None
) -> AdapterError:
    request = AgentRequest(
        model="m",
        prompt="p",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=5,
        config=config or {},
    )

    async def main() -> None:
        with Capture(request.output_dir) as capture:
            await adapter.dispatch(request, operation_id="op", attempt_id="op/1", capture=capture)

    with pytest.raises(AdapterError) as info:
        asyncio.run(main())
    return info.value


@pytest.mark.parametrize(
    ("adapter", "code"),
    [(_Refused(), "ERR_CONNECTION_REFUSED"), (_Raising(), "ERR_UNKNOWN")],
)
def test_a_foreign_exception_is_classified_into_an_adapter_error(
    tmp_path: Path, adapter: BaseAdapter, code: str
) -> None:
    err = _dispatch(adapter, tmp_path)
    assert err.failure.code == code
    assert err.__cause__ is type(adapter).error


def test_dispatch_refuses_a_merged_config_key_an_attempt_never_carries(tmp_path: Path) -> None:
    # run() splits the evaluation harness interface's merged config before dispatching;
    # an attempt's config holding one of its keys is an invalid request, its key unshown.
    config = {"scenario": {"attempts": [[{"print": "ok"}]]}, "api_keys": {"K": CANARY_KEY}}
    err = _dispatch(MockAdapter(), tmp_path, config)
    assert err.failure.kind.value == "invalid_request"
    assert "config.api_keys" in err.failure.message
    assert CANARY_KEY not in err.failure.message
    assert CANARY_KEY not in (tmp_path / "out" / "agent.log").read_text()


def test_a_failed_result_becomes_an_adapter_error_with_partial_output(
    tmp_path: Path,
) -> None:
    err = _dispatch(_FailedResult(), tmp_path)
    assert (err.failure.code, err.partial_output) == ("ERR_HTTP_503_UNAVAILABLE", "half an answer")
    assert (
        "failed: server_error/ERR_HTTP_503_UNAVAILABLE"
        in (tmp_path / "out" / "agent.log").read_text()
    )


def test_arun_returns_the_whole_result(dirs: dict[str, Path]) -> None:
    result = asyncio.run(
        MockAdapter().arun(
            "m",
            dirs["prompt_file"],
            dirs["workspace"],
            dirs["output_dir"],
            {"scenario": {"attempts": [[{"result": "the answer", "output_tokens": 3}]]}},
            10,
        )
    )
    assert (result.status, result.output, result.usage.output_tokens) == (
        AgentStatus.SUCCEEDED,
        "the answer",
        3,
    )
    assert result.duration_s > 0


def test_a_harness_run_without_a_policy_retries_a_transient_failure_through_the_sdk(
    dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1),))
    adapter = get_adapter("anthropic-api")
    assert isinstance(adapter, BaseAdapter)
    with FakeProvider(scenario) as fake, testing_mode(attempts=None):
        monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        code = adapter.run(
            "fake-model", dirs["prompt_file"], dirs["workspace"], dirs["output_dir"], {}, 30
        )
        stats = fake.stats()
    assert code == 0
    assert stats.by_status == {529: 1, 200: 1}
    m = metrics(dirs)
    assert (m["exit_code"], m["api_calls"], m["error"]) == (0, 2, None)
    assert [metrics_of(dirs, n)["exit_code"] for n in (1, 2)] == [1, 0]


class _FailedBeforeAnyRequest(_FailedResult):
    failure: ClassVar[Failure] = Failure(code="ERR_AGENT_CONFIG", message="bad flag")

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        return AgentResult.failed(self.failure, exit_code=2)


@pytest.mark.parametrize(
    ("adapter", "calls"), [(_FailedResult(), 1), (_FailedBeforeAnyRequest(), 0)]
)
def test_an_attempt_refused_by_the_provider_counts_its_api_call(
    dirs: dict[str, Path], adapter: BaseAdapter, calls: int
) -> None:
    code = adapter.run(
        "m", dirs["prompt_file"], dirs["workspace"], dirs["output_dir"], {}, 5, policy="none"
    )
    assert code != 0
    assert metrics(dirs)["api_calls"] == calls
