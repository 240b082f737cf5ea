"""``backstay run``: one agent run through the adapter's harness entry point, exiting with
its exit code. The mock adapter runs a real subprocess; every run here is bounded."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.adapters.support import PLANNED_WHAT, plan_an_adapter
from typer.testing import CliRunner, Result

from backstay.adapters.base import CANCELLED_EXIT_CODE
from backstay.adapters.contract import TIMEOUT_EXIT_CODE
from backstay.cli import app
from backstay.cli._errors import USAGE_ERROR

runner = CliRunner()
CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
KEY = "sk-ant-api03-RunCanaryRunCanaryRun0123456789"
FAST = "{extends: agent_dispatch, initial_delay_s: 0.01, max_delay_s: 0.01}"


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BACKSTAY_CONFIG", "MODEL", "TIER", "RUN_NUMBER"):
        monkeypatch.delenv(name, raising=False)


def _scenario(tmp_path: Path, *attempts: list[dict[str, Any]]) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"attempts": list(attempts)}), encoding="utf-8")
    return path


def _args(tmp_path: Path, *attempts: list[dict[str, Any]], once: bool = True) -> list[str]:
    """The flags of a run of the mock acting out ``attempts``; one attempt if ``once``."""
    (tmp_path / "prompt.md").write_text("solve it", encoding="utf-8")
    (tmp_path / "ws").mkdir(exist_ok=True)
    return [
        "run",
        "--adapter",
        "mock",
        "--model",
        "mock-model",
        "--prompt-file",
        "prompt.md",
        "--workspace",
        "ws",
        "--output-dir",
        "out",
        "--timeout",
        "20",
        "--adapter-option",
        f"scenario={_scenario(tmp_path, *attempts)}",
        *(["--policy", "none"] if once else []),
    ]


def _invoke(args: list[str], **kwargs: Any) -> Result:
    return runner.invoke(app, args, **kwargs)


def _metrics(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "out" / "metrics.json").read_text())
    return loaded


def test_a_successful_run_exits_0_with_its_logs_and_metrics(tmp_path: Path) -> None:
    steps = [{"write_file": "answer.txt", "text": "42"}, {"result": "done", "input_tokens": 9}]
    result = _invoke(_args(tmp_path, steps))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ws" / "answer.txt").read_text() == "42"
    assert (_metrics(tmp_path)["exit_code"], _metrics(tmp_path)["tokens_input"]) == (0, 9)
    assert (
        result.stderr
        == "backstay run: mock/mock-model succeeded (exit code 0); logs and metrics.json in out\n"
    )


def test_a_failed_run_exits_with_the_agents_own_code(tmp_path: Path) -> None:
    result = _invoke(_args(tmp_path, [{"stderr": "broken"}, {"exit": 3}]))
    assert result.exit_code == 3
    assert result.stderr.startswith(
        "backstay run: mock/mock-model failed (exit code 3): ERR_AGENT_FAILED"
    )


def test_a_classified_failure_is_named_in_the_summary(tmp_path: Path) -> None:
    result = _invoke(_args(tmp_path, [{"error": "rate_limit"}]))
    assert result.exit_code == 1
    assert "failed (exit code 1): ERR_HTTP_429_RATE_LIMITED" in result.stderr


def test_a_run_past_its_timeout_exits_124(tmp_path: Path) -> None:
    args = _args(tmp_path, [{"print": "working"}, {"hang": True}])
    args[args.index("--timeout") + 1] = "0.5"
    started = time.monotonic()
    result = _invoke(args)
    assert result.exit_code == 124
    assert time.monotonic() - started < 10
    assert _metrics(tmp_path)["error"].startswith("ERR_TIMEOUT")
    assert "timed out (exit code 124)" in result.stderr


def test_policy_none_makes_one_attempt(tmp_path: Path) -> None:
    result = _invoke(_args(tmp_path, [{"error": "overloaded"}], [{"result": "done"}]))
    assert result.exit_code == 1


def test_with_a_policy_a_failed_attempt_is_retried(tmp_path: Path) -> None:
    args = _args(tmp_path, [{"error": "overloaded"}], [{"result": "done"}], once=False)
    result = _invoke([*args, "--policy", FAST])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "agent.log").read_text().count("acts out") == 2


def test_a_policy_may_be_named_from_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "backstay.yaml"
    config.write_text(f"retry:\n  policies:\n    fast: {FAST}\n", encoding="utf-8")
    args = _args(tmp_path, [{"error": "overloaded"}], [{"result": "done"}], once=False)
    result = _invoke([*args, "--policy", "fast", "--config", str(config)])
    assert result.exit_code == 0, result.output


def test_tier_flags_are_accepted(tmp_path: Path) -> None:
    args = _args(tmp_path, [{"result": "done"}])
    tier = ["--tier-id", "T1", "--tier-name", "Prompted", "--tier-prompt", "Think.", "--no-tools"]
    result = _invoke([*args, *tier])
    assert result.exit_code == 0, result.output


def test_the_key_reaches_the_agent_from_the_variable_named_and_is_redacted(
    tmp_path: Path,
) -> None:
    args = _args(tmp_path, [{"print_env": "RUN_TEST_KEY"}, {"result": "done"}])
    result = _invoke(
        [*args, "--adapter-option", "api_key_env=RUN_TEST_KEY"], env={"RUN_TEST_KEY": KEY}
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "stdout.log").read_text().startswith("RUN_TEST_KEY=[REDACTED]")
    assert KEY not in result.output


def test_an_unset_key_variable_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUN_TEST_KEY", raising=False)
    args = _args(tmp_path, [{"result": "done"}])
    result = _invoke([*args, "--adapter-option", "api_key_env=RUN_TEST_KEY"])
    assert result.exit_code == 2
    assert "the environment variable RUN_TEST_KEY is not set" in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_inline_key_exits_2_without_showing_it(tmp_path: Path) -> None:
    args = _args(tmp_path, [{"result": "done"}])
    result = _invoke([*args, "--adapter-option", f"api_key={KEY}"])
    assert result.exit_code == 2
    assert "use api_key_env" in result.stderr
    assert KEY not in result.output


def test_an_adapter_not_available_yet_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = plan_an_adapter(monkeypatch)
    args = _args(tmp_path, [{"result": "done"}])
    args[args.index("--adapter") + 1] = name
    result = _invoke(args)
    assert result.exit_code == 2
    assert f"adapter {name!r} for {PLANNED_WHAT}" in result.stderr


def test_every_bad_flag_is_listed_and_nothing_runs(tmp_path: Path) -> None:
    args = _args(tmp_path, [{"result": "done"}])
    args[args.index("--prompt-file") + 1] = "nope.md"
    args[args.index("--timeout") + 1] = "0"
    result = _invoke([*args, "--tier-id", "a b", "--policy", "standrd"])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == "error: command line: 4 problems:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "--prompt-file",
        "--timeout",
        "--tier-id",
        "--policy",
    ]
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_missing_required_flag_exits_2(tmp_path: Path) -> None:
    result = _invoke(["run", "--adapter", "mock"])
    assert result.exit_code == 2


def test_the_installed_command_exits_with_the_runs_exit_code(tmp_path: Path) -> None:
    args = _args(tmp_path, [{"hang": True}])
    args[args.index("--timeout") + 1] = "0.5"
    command = [sys.executable, "-c", "from backstay.cli import main; main()", *args]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 124, done.stderr
    assert "Traceback" not in done.stderr


def test_the_exit_codes_are_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    for code in (0, USAGE_ERROR, TIMEOUT_EXIT_CODE, CANCELLED_EXIT_CODE):
        assert f"| `{code}` |" in text


def test_the_harness_variables_stand_in_for_model_and_tier_and_number_the_run(
    tmp_path: Path,
) -> None:
    args = _args(tmp_path, [{"print_env": "MODEL"}, {"result": "done"}])
    del args[args.index("--model") : args.index("--model") + 2]
    result = _invoke(args, env={"MODEL": "harness-model", "TIER": "T3", "RUN_NUMBER": "7"})
    assert result.exit_code == 0, result.output
    metrics = _metrics(tmp_path)
    assert metrics["run_number"] == 7
    assert list(metrics)[-1] == "run_number"
    assert "model harness-model" in (tmp_path / "out" / "agent.log").read_text()


def test_without_model_or_its_variable_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MODEL", raising=False)
    args = _args(tmp_path, [{"result": "done"}])
    del args[args.index("--model") : args.index("--model") + 2]
    result = _invoke(args)
    assert result.exit_code == USAGE_ERROR
    assert result.stderr == "error: --model: no model: give --model or set MODEL\n"
    assert not (tmp_path / "out").exists()


def test_a_bad_run_number_exits_2_naming_the_variable(tmp_path: Path) -> None:
    result = _invoke(_args(tmp_path, [{"result": "done"}]), env={"RUN_NUMBER": "first"})
    assert result.exit_code == USAGE_ERROR
    assert "RUN_NUMBER: must be a whole number" in result.stderr
