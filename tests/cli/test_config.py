"""``backstay config check | show | schema``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backstay.cli import app
from backstay.config import config_schema

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
retry:
  default_policy: fast
  policies:
    fast: {extends: standard, max_attempts: 2}
  operation_policies: {agent: agent_dispatch}
  budget: {ratio: 0.1}
"""

BAD = """\
retry:
  default_policy: ghost
  policies:
    standard: {max_attempts: 0}
"""


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "backstay.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_check_a_good_file_prints_one_ok_line(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD)
    result = runner.invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 1
    assert result.stdout.startswith(f"OK {path}: 6 policies (1 defined or changed here); ")
    assert "default 'fast'" in result.stdout


def test_check_a_bad_file_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    path = _file(tmp_path, BAD)
    result = runner.invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 2
    assert f"error: {path}: 2 problems:" in result.stderr
    assert f"{path}:2: retry.default_policy: unknown policy 'ghost'" in result.stderr
    assert f"{path}:4: retry.policies.standard.max_attempts: must be >= 1, got 0" in result.stderr
    assert "Traceback" not in result.output


def test_check_keeps_each_problem_on_one_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "retry:\n  policies:\n    standard: {max_atempts: 2}\n")
    result = runner.invoke(app, ["config", "check", str(path)])
    problem = result.stderr.splitlines()[0]
    assert problem.endswith(
        "max_retry_after_s, deadline_s, seed, escalate_on_exhaustion, timeout_factor, "
        "per_kind, per_category"
    )


def test_check_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "check", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "nope.yaml: no such file" in result.stderr


def test_check_ignores_environment_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSTAY__RETRY__DEFAULT_POLICY", "ghost")
    result = runner.invoke(app, ["config", "check", str(_file(tmp_path, GOOD))])
    assert result.exit_code == 0, result.output


def test_show_prints_values_with_their_sources(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD)
    result = runner.invoke(app, ["config", "show", "--config", str(path)])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "retry.budget.ratio" in line)
    assert "0.1" in row
    assert f"{path}:6" in row


def test_show_reads_backstay_yaml_in_the_working_directory(tmp_path: Path) -> None:
    _file(tmp_path, GOOD)
    data = json.loads(runner.invoke(app, ["config", "show", "--json"]).stdout)
    assert data["values"]["retry.default_policy"]["value"] == "fast"


def test_show_json_gives_every_value_with_source_and_origin(tmp_path: Path) -> None:
    path = _file(tmp_path, GOOD)
    result = runner.invoke(app, ["config", "show", "--config", str(path), "--json"])
    data = json.loads(result.stdout)
    assert data["file"] == str(path)
    assert data["values"]["retry.policies.fast.max_attempts"] == {
        "value": 2,
        "source": f"{path}:4",
        "origin": "file",
    }
    assert data["values"]["retry.policies.fast.max_delay_s"]["source"] == (
        "built-in policy 'standard'"
    )


def test_show_applies_environment_then_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path, GOOD)
    monkeypatch.setenv("BACKSTAY__RETRY__BUDGET__RATIO", "0.2")
    monkeypatch.setenv("BACKSTAY__RETRY__BUDGET__WINDOW_S", "5")
    args = ["config", "show", "--config", str(path), "--json", "--set", "retry.budget.ratio=0.3"]
    values = json.loads(runner.invoke(app, args).stdout)["values"]
    assert values["retry.budget.ratio"] == {"value": 0.3, "source": "--set", "origin": "cli"}
    assert values["retry.budget.window_s"]["source"] == "BACKSTAY__RETRY__BUDGET__WINDOW_S"


def test_show_without_any_file_shows_the_defaults() -> None:
    result = runner.invoke(app, ["config", "show", "--json"])
    data = json.loads(result.stdout)
    assert data["file"] is None
    assert data["values"]["retry.default_policy"] == {
        "value": "standard",
        "source": "default",
        "origin": "default",
    }


def test_show_a_bad_set_exits_2_naming_the_flag() -> None:
    result = runner.invoke(app, ["config", "show", "--set", "retry.budget.ratio=7"])
    assert result.exit_code == 2
    assert "error: --set: retry.budget.ratio: must be <= 1, got 7" in result.stderr


def test_schema_prints_the_json_schema() -> None:
    result = runner.invoke(app, ["config", "schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == config_schema()


def test_the_checked_in_schema_is_what_the_command_prints() -> None:
    # After changing a key: .venv/bin/backstay config schema > docs/config.schema.json
    result = runner.invoke(app, ["config", "schema"])
    checked_in = (ROOT / "docs" / "config.schema.json").read_text(encoding="utf-8")
    assert checked_in == result.stdout
