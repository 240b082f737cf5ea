"""ScriptedAdapter: attempts follow the script, failures leave as AdapterError, every
dispatch is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult, AgentStatus
from backstay.adapters.usage import Usage
from backstay.errors import AdapterError, ConfigError
from backstay.failure import Failure
from backstay.taxonomy import FailureKind
from backstay.testing import ScriptedAdapter, ScriptedCall

OP = "wf:t1:run_01"


def _dispatch(
    adapter: ScriptedAdapter, tmp_path: Path, *, op: str = OP, n: int = 1, timeout_s: float = 5.0
) -> AgentResult | BaseException:
    request = AgentRequest(
        model="m",
        workspace=tmp_path,
        output_dir=tmp_path / f"a{n}",
        timeout_s=timeout_s,
        prompt="p",
    )

    async def go() -> AgentResult:
        with Capture(request.output_dir) as capture:
            return await adapter.dispatch(
                request, operation_id=op, attempt_id=f"{op}:attempt_{n}", capture=capture
            )

    try:
        return asyncio.run(go())
    except BaseException as exc:  # the outcome under test
        return exc


def _failure(outcome: AgentResult | BaseException) -> Failure:
    assert isinstance(outcome, AdapterError), outcome
    return outcome.failure


def test_it_keeps_the_adapter_protocol() -> None:
    assert isinstance(ScriptedAdapter(), Adapter)


def test_attempts_follow_the_script_and_the_last_step_repeats(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(["ERR_HTTP_500_INTERNAL", "ok", "ERR_LLM_CONTEXT_LENGTH"])
    outcomes = [_dispatch(adapter, tmp_path, n=n) for n in (1, 2, 3, 4)]
    assert _failure(outcomes[0]).code == "ERR_HTTP_500_INTERNAL"
    assert isinstance(outcomes[1], AgentResult)
    assert [_failure(o).code for o in outcomes[2:]] == ["ERR_LLM_CONTEXT_LENGTH"] * 2


def test_each_operation_counts_its_own_attempts(tmp_path: Path) -> None:
    adapter = ScriptedAdapter(["ERR_HTTP_500_INTERNAL", "ok"])
    first = _dispatch(adapter, tmp_path, op="wf:a:run_01")
    other = _dispatch(adapter, tmp_path, op="wf:b:run_01")
    assert isinstance(first, AdapterError)
    assert isinstance(other, AdapterError)


def test_every_dispatch_is_recorded_with_its_ids(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    _dispatch(adapter, tmp_path, n=1)
    _dispatch(adapter, tmp_path, n=2)
    assert adapter.ids == [(OP, f"{OP}:attempt_1"), (OP, f"{OP}:attempt_2")]
    assert adapter.calls[1] == ScriptedCall(OP, f"{OP}:attempt_2", tmp_path / "a2", 2)


def test_ok_succeeds_and_a_usage_step_succeeds_with_it(tmp_path: Path) -> None:
    usage = Usage(input_tokens=3, output_tokens=2)
    adapter = ScriptedAdapter(["ok", usage])
    ok = _dispatch(adapter, tmp_path, n=1)
    with_usage = _dispatch(adapter, tmp_path, n=2)
    assert isinstance(ok, AgentResult)
    assert (ok.status, ok.output) == (AgentStatus.SUCCEEDED, f"done {OP}")
    assert isinstance(with_usage, AgentResult)
    assert with_usage.usage == usage


def test_a_failure_step_raises_adapter_error_with_the_partial_output(tmp_path: Path) -> None:
    failure = Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=7.0)
    outcome = _dispatch(ScriptedAdapter([failure], partial_output="half"), tmp_path)
    assert isinstance(outcome, AdapterError)
    assert (outcome.failure, outcome.partial_output) == (failure, "half")


def test_an_exception_step_is_classified_and_raised_as_adapter_error(tmp_path: Path) -> None:
    error = ConnectionRefusedError(111, "Connection refused")
    outcome = _dispatch(ScriptedAdapter([error]), tmp_path)
    assert isinstance(outcome, AdapterError)
    assert outcome.failure.kind is FailureKind.NETWORK
    assert outcome.__cause__ is error


def test_raw_exceptions_escape_as_they_are(tmp_path: Path) -> None:
    error = RuntimeError("adapter bug")
    assert _dispatch(ScriptedAdapter([error], raw_exceptions=True), tmp_path) is error


def test_hang_fails_with_a_timeout_at_the_requests_deadline(tmp_path: Path) -> None:
    outcome = _dispatch(ScriptedAdapter(["hang"]), tmp_path, timeout_s=0.05)
    assert _failure(outcome).code == "ERR_TIMEOUT"


def test_a_mapping_scripts_operations_by_task_id_and_others_succeed(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": ["ERR_LLM_CONTENT_FILTER"]})
    assert _failure(_dispatch(adapter, tmp_path)).kind is FailureKind.CONTENT_POLICY
    assert isinstance(_dispatch(adapter, tmp_path, op="wf:t2:run_01"), AgentResult)


def test_the_agent_log_says_what_each_attempt_did(tmp_path: Path) -> None:
    _dispatch(ScriptedAdapter(["ERR_HTTP_500_INTERNAL"]), tmp_path)
    log = (tmp_path / "a1" / "agent.log").read_text(encoding="utf-8")
    assert f"attempt {OP}:attempt_1 failed" in log


@pytest.mark.parametrize(
    ("script", "where"),
    [(["ERR_NO_SUCH_CODE"], "script[0]"), ([], "script"), ({"t1": ["ok", 42]}, "script['t1'][1]")],
)
def test_an_invalid_script_is_refused_naming_the_step(script: object, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ScriptedAdapter(script)  # type: ignore[arg-type]
    assert caught.value.where == where
