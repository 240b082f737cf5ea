"""The contract's value objects: validation naming the field, and their invariants."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mypy import api
from tests.adapters.support import CANARY_KEY

from backstay.adapters.contract import (
    AgentRequest,
    AgentResult,
    AgentStatus,
    TierConfig,
)
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.failure import Failure

RATE_LIMITED = Failure(code="ERR_HTTP_429_RATE_LIMITED")
TIMED_OUT = Failure(code="ERR_TIMEOUT")


def _request(tmp_path: Path, **changes: Any) -> AgentRequest:
    fields: dict[str, Any] = {
        "model": "m",
        "prompt": "do it",
        "workspace": tmp_path,
        "output_dir": tmp_path / "out",
        "timeout_s": 5.0,
    }
    fields.update(changes)
    return AgentRequest(**fields)


def test_a_tier_keeps_its_prompt_and_tools() -> None:
    tools: Any = ["Read", "Edit"]
    tier = TierConfig(tier_id="t1", system_prompt="be brief", allowed_tools=tools)
    assert tier.allowed_tools == ("Read", "Edit")
    assert (tier.tools_enabled, tier.delegation_enabled) == (True, False)


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"tier_id": ""}, "tier.tier_id"),
        ({"tier_name": 3}, "tier.tier_name"),
        ({"system_prompt": 1}, "tier.system_prompt"),
        ({"tools_enabled": "yes"}, "tier.tools_enabled"),
        ({"delegation_enabled": 1}, "tier.delegation_enabled"),
        ({"allowed_tools": "Read"}, "tier.allowed_tools"),
        ({"allowed_tools": ["Read", ""]}, "tier.allowed_tools[1]"),
        ({"allowed_tools": ["Read"], "tools_enabled": False}, "tier.allowed_tools"),
    ],
)
def test_invalid_tiers_name_the_field(changes: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        TierConfig(**{"tier_id": "t1", **changes})
    assert info.value.where == where


def test_a_request_reads_its_prompt_from_text_or_file(tmp_path: Path) -> None:
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text("from a file", encoding="utf-8")
    assert _request(tmp_path).read_prompt() == "do it"
    from_file = _request(tmp_path, prompt=None, prompt_file=str(prompt_file))
    assert from_file.prompt_file == prompt_file
    assert from_file.read_prompt() == "from a file"


def test_an_unreadable_prompt_file_names_the_field(tmp_path: Path) -> None:
    request = _request(tmp_path, prompt=None, prompt_file=tmp_path / "missing.md")
    with pytest.raises(ConfigError) as info:
        request.read_prompt()
    assert info.value.where == "prompt_file"


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"prompt": None}, "prompt"),
        ({"prompt_file": "p.md"}, "prompt"),
        ({"prompt": 3}, "prompt"),
        ({"model": ""}, "model"),
        ({"workspace": ""}, "workspace"),
        ({"output_dir": 5}, "output_dir"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"timeout_s": -1.0}, "timeout_s"),
        ({"stall_timeout_s": 0}, "stall_timeout_s"),
        ({"env": {"KEY": 1}}, "env['KEY']"),
        ({"env": ["A=1"]}, "env"),
        ({"config": ["x"]}, "config"),
        ({"tier": {"tier_id": "t"}}, "tier"),
        ({"launcher": "nsenter -t 1 -n"}, "launcher"),
        ({"launcher": ["nsenter", ""]}, "launcher[1]"),
        ({"launcher": ["nsenter", 1]}, "launcher[1]"),
    ],
)
def test_invalid_requests_name_the_field(
    tmp_path: Path, changes: dict[str, Any], where: str
) -> None:
    with pytest.raises(ConfigError) as info:
        _request(tmp_path, **changes)
    assert info.value.where == where


def test_a_request_keeps_its_environment_out_of_repr(tmp_path: Path) -> None:
    request = _request(tmp_path, env={"ANTHROPIC_API_KEY": CANARY_KEY})
    assert CANARY_KEY not in repr(request)
    assert request.env["ANTHROPIC_API_KEY"] == CANARY_KEY


def test_a_request_copies_and_freezes_env_and_config(tmp_path: Path) -> None:
    env, config = {"A": "1"}, {"scenario": "s.yaml"}
    request = _request(tmp_path, env=env, config=config)
    env["A"] = "changed"
    config["scenario"] = "changed"
    assert (request.env["A"], request.config["scenario"]) == ("1", "s.yaml")
    with pytest.raises(TypeError):
        request.env["B"] = "2"  # type: ignore[index]


def test_a_failed_result_for_a_timeout_has_the_timeout_status() -> None:
    assert AgentResult.failed(TIMED_OUT).status is AgentStatus.TIMEOUT
    assert AgentResult.failed(RATE_LIMITED).status is AgentStatus.FAILED


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"status": "succeeded", "failure": RATE_LIMITED}, "failure"),
        ({"status": "failed"}, "failure"),
        ({"status": "timeout", "failure": RATE_LIMITED}, "status"),
        ({"status": "failed", "failure": TIMED_OUT}, "status"),
        ({"status": "done"}, "status"),
        ({"status": "failed", "failure": "429"}, "failure"),
        ({"status": "succeeded", "duration_s": -1}, "duration_s"),
        ({"status": "succeeded", "exit_code": "0"}, "exit_code"),
        ({"status": "succeeded", "usage": {}}, "usage"),
    ],
)
def test_inconsistent_results_name_the_field(fields: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as info:
        AgentResult(**fields)
    assert info.value.where == where


def test_a_result_output_is_redacted() -> None:
    result = AgentResult(status=AgentStatus.SUCCEEDED, output=f"the key is {CANARY_KEY}")
    assert result.output == "the key is [REDACTED]"


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (AgentResult(status=AgentStatus.SUCCEEDED, exit_code=0), 0),
        (AgentResult.failed(TIMED_OUT, exit_code=124), 124),
        (AgentResult.failed(TIMED_OUT, exit_code=1), 124),
        (AgentResult.failed(RATE_LIMITED, exit_code=1), 1),
        (AgentResult.failed(RATE_LIMITED, exit_code=3), 3),
        (AgentResult.failed(RATE_LIMITED, exit_code=0), 1),
        (AgentResult.failed(RATE_LIMITED), 1),
    ],
)
def test_exit_status_is_what_a_harness_reports(result: AgentResult, code: int) -> None:
    assert result.exit_status == code


def test_results_change_with_replace_and_validate_again() -> None:
    result = AgentResult(status=AgentStatus.SUCCEEDED, usage=Usage(api_calls=1))
    with pytest.raises(ConfigError):
        dataclasses.replace(result, status=AgentStatus.FAILED)


SNIPPET = """
from backstay.adapters import Adapter
from backstay.adapters.mock import MockAdapter

adapter: Adapter = MockAdapter()
not_an_adapter: Adapter = object()
"""


def test_adapters_satisfy_the_protocol_for_type_checkers(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    out, _err, _status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(source)]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out
    assert "snippet.py:6:" in errors[0]


def test_a_request_keeps_its_launcher_as_a_tuple(tmp_path: Path) -> None:
    request = _request(tmp_path, launcher=["nsenter", "-t", "1", "--net", "--"])
    assert request.launcher == ("nsenter", "-t", "1", "--net", "--")
    assert _request(tmp_path).launcher == ()
