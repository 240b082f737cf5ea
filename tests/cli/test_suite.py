"""``backstay suite check | schema``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.adapters.support import plan_an_adapter
from typer.testing import CliRunner

from backstay.adapters.registry import adapter_names
from backstay.cli import app
from backstay.config import suite_schema

runner = CliRunner()

GOOD = """\
suite: nightly
defaults: {adapter: mock, model: m}
adapters:
  mock: {scenario: {attempts: [[{result: done}]]}}
tasks:
  - {id: hello, prompt: hi, runs: 3}
  - id: tiered
    prompt: hi
    tiers: [{tier_id: T0}, {tier_id: T1}]
"""

BAD = """\
suite: nightly
defaults: {adapter: mok, model: m}
tasks:
  - {id: hello, prompt: hi, runs: 0}
"""


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _file(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_check_a_good_suite_summarises_its_runs(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD)
    result = runner.invoke(app, ["suite", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"OK {path}: suite 'nightly', 2 tasks, 5 runs",
        "  hello   mock / m; policy agent_dispatch; tiers T0 × 3 runs = 3 (T0-run_01 … T0-run_03)",
        "  tiered  mock / m; policy agent_dispatch; tiers T0, T1 × 1 run = 2 "
        "(T0-run_01 … T1-run_01)",
    ]


def test_check_lists_every_run_when_asked(tmp_path: Path) -> None:
    result = runner.invoke(app, ["suite", "check", str(_file(tmp_path, GOOD)), "--runs"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[3:] == [
        "hello/T0-run_01",
        "hello/T0-run_02",
        "hello/T0-run_03",
        "tiered/T0-run_01",
        "tiered/T1-run_01",
    ]


def test_check_a_bad_suite_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    path = _file(tmp_path, BAD)
    result = runner.invoke(app, ["suite", "check", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {path}: 2 problems:",
        f"  {path}:2: defaults.adapter: unknown adapter 'mok' (did you mean 'mock'?); known: "
        "agent-runtime, aider, anthropic-api, autogen, claude-code, codex, gemini-api, "
        "gemini-cli, langgraph, llamaindex, mock, openai-api … (14 in all)",
        f"  {path}:4: tasks[0].runs: must be >= 1, got 0",
    ]
    assert "Traceback" not in result.output


def test_check_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["suite", "check", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path / 'nope.yaml'}: no such file\n"


def test_check_notes_an_adapter_that_is_not_available_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = plan_an_adapter(monkeypatch)
    text = f"suite: s\ntasks: [{{id: a, prompt: hi, adapter: {name}, model: m}}]\n"
    result = runner.invoke(app, ["suite", "check", str(_file(tmp_path, text))])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"note: adapter {name!r} is not available yet: its runs cannot start "
        f"(available: {', '.join(adapter_names())})\n"
    )


def test_check_takes_named_policies_from_the_configuration(tmp_path: Path) -> None:
    config = _file(tmp_path, "retry:\n  policies:\n    fast: {max_attempts: 2}\n", "b.yaml")
    path = _file(tmp_path, GOOD.replace("model: m}", "model: m, policy: fast}"))
    result = runner.invoke(app, ["suite", "check", str(path), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert "policy fast;" in result.stdout


def test_check_reports_a_broken_configuration_and_exits_2(tmp_path: Path) -> None:
    config = _file(tmp_path, "retry: {defualt_policy: x}\n", "b.yaml")
    result = runner.invoke(
        app, ["suite", "check", str(_file(tmp_path, GOOD)), "--config", str(config)]
    )
    assert result.exit_code == 2
    assert "retry.defualt_policy: unknown key" in result.stderr


def test_schema_prints_the_json_schema() -> None:
    result = runner.invoke(app, ["suite", "schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == suite_schema()
