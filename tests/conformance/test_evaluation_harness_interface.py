"""The evaluation harness adapter interface, as a harness calls it.

A harness runs one agent with ``adapter.run(model, prompt_file, workspace, output_dir,
config, timeout)`` and reads ``stdout.log``, ``stderr.log`` and ``metrics.json`` from the
output directory; it asks an adapter its name with ``get_name()`` and checks a
configuration with ``validate_config()``. The agent here is backstay's mock agent, a real
subprocess acting out a script.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backstay import get_adapter
from backstay.adapters.anthropic_api import AnthropicApiAdapter
from backstay.adapters.mock import MockAdapter
from backstay.errors import ConfigError


@pytest.fixture
def run_dirs(tmp_path: Path) -> dict[str, Path]:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("solve it", encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return {"prompt": prompt, "workspace": workspace, "out": tmp_path / "out"}


def _run(dirs: dict[str, Path], steps: list[dict[str, Any]], timeout: float) -> int:
    return MockAdapter().run(
        "mock-model",
        dirs["prompt"],
        dirs["workspace"],
        dirs["out"],
        {"scenario": {"attempts": [steps]}},
        timeout,
        policy="no_retry",
    )


def test_get_name_is_the_registered_name() -> None:
    assert MockAdapter().get_name() == "mock"
    assert get_adapter("claude-code").get_name() == "claude-code"


def test_api_direct_names_the_anthropic_api_adapter() -> None:
    adapter = get_adapter("api-direct")
    assert isinstance(adapter, AnthropicApiAdapter)
    assert adapter.get_name() == "anthropic-api"


def test_validate_config_returns_true_for_valid_settings() -> None:
    assert MockAdapter().validate_config({"scenario": {"attempts": [[{"print": "ok"}]]}}) is True


def test_validate_config_returns_true_for_an_api_adapter() -> None:
    assert get_adapter("api-direct").validate_config({"max_tokens": 64}) is True


def test_validate_config_raises_value_error_for_an_unknown_setting() -> None:
    with pytest.raises(ValueError, match="unknown setting for adapter 'mock'"):
        MockAdapter().validate_config({"no_such_setting": 1})


def test_validate_config_raises_a_config_error_which_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_a_successful_run_exits_0_with_its_logs_and_metrics(run_dirs: dict[str, Path]) -> None:
    assert _run(run_dirs, [{"print": "done"}], timeout=10.0) == 0
    out = run_dirs["out"]
    assert "done" in (out / "stdout.log").read_text(encoding="utf-8")
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["exit_code"] == 0


def test_an_error_is_also_written_to_stderr_log(run_dirs: dict[str, Path]) -> None:
    assert _run(run_dirs, [{"stderr": "boom"}, {"exit": 3}], timeout=10.0) == 3
    stderr = (run_dirs["out"] / "stderr.log").read_text(encoding="utf-8")
    assert "boom" in stderr
    assert "backstay: error: ERR_" in stderr


def test_the_timeout_message_is_also_written_to_stderr_log(run_dirs: dict[str, Path]) -> None:
    assert _run(run_dirs, [{"print": "working"}, {"hang": True}], timeout=0.5) == 124
    stderr = (run_dirs["out"] / "stderr.log").read_text(encoding="utf-8")
    assert "backstay: error (timed out): ERR_" in stderr
    metrics = json.loads((run_dirs["out"] / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["exit_code"] == 124
