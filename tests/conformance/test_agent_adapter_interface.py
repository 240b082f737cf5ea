"""The agent adapter interface: every agent is driven through one narrow protocol.

An adapter has a ``name``, runs one attempt with ``dispatch(request, operation_id=…,
attempt_id=…, capture=…)`` and returns an ``AgentResult``; it checks its own settings
with ``validate_config`` and turns what an attempt showed into a ``Failure`` with
``classify_failure``. It declares whether an attempt may run twice (``idempotent``).
The agent driven here is backstay's mock agent: a real subprocess acting out a script.

The interface's own text was not found in the public indexes searched
(docs/conformance.md, "Sources"): the requirements are those issue 17 quotes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backstay import Adapter, AgentRequest, AgentResult, FailureKind, get_adapter
from backstay.adapters.capture import Capture
from backstay.adapters.mock import MockAdapter
from backstay.errors import AdapterError, ConfigError

CLI_AGENTS = ("claude-code", "codex", "gemini-cli", "aider", "opencode")


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_each_agent_adapter_keeps_the_protocol(name: str) -> None:
    adapter = get_adapter(name)
    assert isinstance(adapter, Adapter)
    assert adapter.name == name


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_each_agent_adapter_declares_itself_not_idempotent(name: str) -> None:
    assert getattr(get_adapter(name), "idempotent", None) is False


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_bad_setting_is_a_config_error_naming_the_key(name: str) -> None:
    with pytest.raises(ConfigError, match=r"config\.no_such_key"):
        get_adapter(name).validate_config({"no_such_key": True})


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_clean_exit_with_no_error_output_is_success(name: str) -> None:
    answer = "Done: the file is written.\n"
    assert get_adapter(name).classify_failure(output=answer, exit_code=0) is None


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_clean_exit_that_printed_nothing_is_not_taken_for_a_success(name: str) -> None:
    # Beyond the interface's scenario: a CLI that exits 0 having printed nothing did no
    # work that can be checked (docs/design/taxonomy.md).
    failure = get_adapter(name).classify_failure(output="", exit_code=0)
    assert failure is not None
    assert failure.code == "ERR_AGENT_FAILED"


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_permission_error_while_dispatching_is_permanent(name: str) -> None:
    failure = get_adapter(name).classify_failure(error=PermissionError(13, "Permission denied"))
    assert failure is not None
    assert failure.retryable is False


def _dispatch(tmp_path: Path, steps: list[dict[str, object]]) -> AgentResult:
    request = AgentRequest(
        model="m",
        prompt="the prompt",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=10.0,
        config={"scenario": {"attempts": [steps]}},
    )

    async def one() -> AgentResult:
        with Capture(request.output_dir) as capture:
            return await MockAdapter().dispatch(
                request, operation_id="wf:task:1", attempt_id="wf:task:1:attempt_1", capture=capture
            )

    return asyncio.run(one())


def test_dispatch_returns_a_successful_result(tmp_path: Path) -> None:
    result = _dispatch(tmp_path, [{"result": "done"}])
    assert (result.failure, result.output, result.exit_code) == (None, "done", 0)


def test_a_rate_limited_attempt_is_classified_as_a_rate_limit(tmp_path: Path) -> None:
    with pytest.raises(AdapterError) as failed:
        _dispatch(tmp_path, [{"stderr": "429 rate limit exceeded, retry after 7s"}, {"exit": 1}])
    assert failed.value.failure.kind is FailureKind.RATE_LIMIT
