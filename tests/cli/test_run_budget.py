"""``backstay run --budget-usd`` / ``--budget-tokens``: before each attempt of the run
(retry or fallback candidate) its estimate must fit what is left of the budget, else no
attempt starts and the run exits 5 with ``ERR_BUDGET_EXCEEDED``; through the Anthropic
SDK against the fake provider, whose request log is the witness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from typer.testing import CliRunner, Result

from backstay.cli import app
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.testing import testing_mode

runner = CliRunner()
KEY: Final = "sk-ant-api03-BudgetRunCanaryBudgetRunCanary0123456789"
KEY_VAR: Final = "RUN_BUDGET_TEST_KEY"
BUDGET_EXIT: Final = 5
MAX_TOKENS: Final = 100
# $1000 per million tokens: an attempt of "Say hello." (4 tokens) + 100 output tokens is
# estimated at $0.104; the fallback's model costs 100 times as much.
PRICES: Final = (
    "prices={cheap-model: {input_per_mtok: 1000, output_per_mtok: 1000}, "
    "pricey-model: {input_per_mtok: 100000, output_per_mtok: 100000}}"
)
OVERLOADED_ONCE: Final = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1),))


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BACKSTAY_CONFIG", "MODEL", "TIER", "RUN_NUMBER"):
        monkeypatch.delenv(name, raising=False)


def _run(tmp_path: Path, url: str, *extra: str) -> Result:
    (tmp_path / "prompt.md").write_text("Say hello.", encoding="utf-8")
    (tmp_path / "ws").mkdir(exist_ok=True)
    args = [
        "run",
        "--adapter",
        "anthropic-api",
        "--model",
        "cheap-model",
        "--prompt-file",
        "prompt.md",
        "--workspace",
        "ws",
        "--output-dir",
        "out",
        "--timeout",
        "30",
        "--adapter-option",
        f"base_url={url}",
        "--adapter-option",
        f"api_key_env={KEY_VAR}",
        "--adapter-option",
        f"max_tokens={MAX_TOKENS}",
        "--adapter-option",
        PRICES,
        *extra,
    ]
    return runner.invoke(app, args, env={KEY_VAR: KEY})


def _metrics(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "out" / "metrics.json").read_text())
    return loaded


def _served(log: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e["path"] == "/v1/messages"]


def test_a_run_within_its_budget_succeeds(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(), log_path=log) as fake:
        result = _run(tmp_path, fake.url, "--budget-usd", "1", "--budget-tokens", "1000")
    assert result.exit_code == 0, result.output
    assert len(_served(log)) == 1
    metrics = _metrics(tmp_path)
    assert (metrics["exit_code"], metrics["error"]) == (0, None)
    assert (
        "budget: attempt 1 on anthropic-api cheap-model estimated $0.104000, 104 tokens"
        in (tmp_path / "out" / "agent.log").read_text()
    )


def test_a_529_then_a_fallback_the_budget_cannot_cover_stops_before_it_with_exit_5(
    tmp_path: Path,
) -> None:
    log = tmp_path / "requests.jsonl"
    with testing_mode(attempts=None), FakeProvider(OVERLOADED_ONCE, log_path=log) as fake:
        result = _run(
            tmp_path, fake.url, "--budget-usd", "0.15", "--fallback", "anthropic-api:pricey-model"
        )
    assert result.exit_code == BUDGET_EXIT, result.output
    served = _served(log)
    assert [e["status"] for e in served] == [529]  # exactly one request: the first attempt
    metrics = _metrics(tmp_path)
    assert metrics["exit_code"] == BUDGET_EXIT
    assert metrics["error"].startswith("ERR_BUDGET_EXCEEDED")
    assert "no room for attempt 2 on anthropic-api pricey-model" in metrics["error"]
    assert metrics["candidates"] == ["anthropic-api/cheap-model"]
    assert not (tmp_path / "out" / "attempt_2").exists()
    assert "stopped at its spending budget (exit code 5): ERR_BUDGET_EXCEEDED" in result.stderr
    assert KEY not in result.output


def test_a_529_uses_nothing_so_a_retry_on_the_same_model_still_fits(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with testing_mode(attempts=None), FakeProvider(OVERLOADED_ONCE, log_path=log) as fake:
        result = _run(tmp_path, fake.url, "--budget-usd", "0.15")
    assert result.exit_code == 0, result.output
    assert [e["status"] for e in _served(log)] == [529, 200]
    agent_log = (tmp_path / "out" / "agent.log").read_text()
    assert "budget: attempt 2 on anthropic-api cheap-model estimated" in agent_log
    assert "(spent so far $0.000000, 0 tokens)" in agent_log


def test_a_budget_below_the_first_estimate_sends_no_request(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(), log_path=log) as fake:
        result = _run(tmp_path, fake.url, "--budget-tokens", "50")
    assert result.exit_code == BUDGET_EXIT, result.output
    assert _served(log) == []
    metrics = _metrics(tmp_path)
    assert (metrics["exit_code"], metrics["api_calls"]) == (BUDGET_EXIT, 0)
    assert "token budget 50 tokens has no room for attempt 1" in metrics["error"]


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--budget-usd", "-1"), ("--budget-usd", "nan"), ("--budget-tokens", "-5")],
)
def test_a_bad_budget_exits_2_naming_its_flag_and_runs_nothing(
    tmp_path: Path, flag: str, value: str
) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(), log_path=log) as fake:
        result = _run(tmp_path, fake.url, flag, value)
    assert result.exit_code == 2, result.output
    assert flag in result.stderr
    assert "Traceback" not in result.output
    assert _served(log) == []
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_a_budget_that_is_not_a_number_exits_2(tmp_path: Path) -> None:
    with FakeProvider(Scenario()) as fake:
        result = _run(tmp_path, fake.url, "--budget-tokens", "lots")
    assert result.exit_code == 2
    assert "--budget-tokens" in result.output
