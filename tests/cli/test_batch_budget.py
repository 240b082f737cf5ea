"""``backstay batch`` and ``resume`` with a spending budget, through the Anthropic SDK
against the fake provider: the batch stops at its budget (exit 5), status says so, and a
resume with a raised budget finishes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.support import CANARY_KEY
from tests.cli.support import invoke, status_json

from backstay.cli._state import ALL_SUCCEEDED, BUDGET_REACHED
from backstay.fakeprovider import FakeProvider, Reply, Scenario

KEY_VAR: Final = "BUDGET_TEST_ANTHROPIC_KEY"
MODEL: Final = "claude-haiku-4-5"
TASKS: Final = 8
SCENARIO: Final = Scenario(reply=Reply(text=" ".join(["word"] * 80)))


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.setenv(KEY_VAR, CANARY_KEY)


def _suite(tmp_path: Path, url: str, **top: Any) -> Path:
    suite = {
        "suite": "budgeted",
        "defaults": {
            "adapter": "anthropic-api",
            "model": MODEL,
            "timeout_s": 20,
            "policy": {"extends": "agent_dispatch", "max_attempts": 1},
        },
        "adapters": {
            "anthropic-api": {
                "api_key_env": KEY_VAR,
                "base_url": url,
                "max_tokens": 120,
                "prices": {MODEL: {"input_per_mtok": 100, "output_per_mtok": 100}},
            }
        },
        "tasks": [{"id": f"t{i}", "prompt": "Say hello"} for i in range(TASKS)],
        **top,
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _served(log: Path) -> list[str]:
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e["idempotency_key"] for e in entries if e["path"] == "/v1/messages"]


def test_a_batch_at_its_budget_exits_5_and_resume_with_a_raised_one_finishes_it(
    tmp_path: Path,
) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        port = fake.port
        suite = _suite(tmp_path, fake.url, budget={"usd": 0.05})
        result = invoke("batch", suite, "--state-dir", state, "--concurrency", "3")
        assert result.exit_code == BUDGET_REACHED, result.output
        assert "paused at a spending budget (budget_exceeded)" in result.stdout
        assert "budget: batch: $0.04" in result.stdout
        data = status_json(state)
    first = _served(log)
    assert 0 < len(first) < TASKS
    assert data["budget_paused"] == TASKS - len(first)
    assert data["spending"][0]["budget"] == {"usd": 0.05, "tokens": None}
    assert data["spending"][0]["spent"]["usd"] <= 0.05
    paused = [t for t in data["tasks"] if t["state"] == "paused"]
    assert all(t["reason"].startswith("budget_exceeded") and t["attempts"] == 0 for t in paused)
    assert CANARY_KEY not in result.output

    with FakeProvider(SCENARIO, port=port, log_path=log):
        resumed = invoke("resume", "--state-dir", state, "--budget-usd", "1")
        assert resumed.exit_code == ALL_SUCCEEDED, resumed.output
        data = status_json(state)
    assert data["by_state"]["succeeded"] == TASKS
    assert data["spending"][0]["budget"] == {"usd": 1.0, "tokens": None}
    served = _served(log)
    assert len(served) == len(set(served)) == TASKS


def test_a_token_budget_on_the_command_line_stops_the_batch_before_any_attempt(
    tmp_path: Path,
) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        suite = _suite(tmp_path, fake.url)
        result = invoke("batch", suite, "--state-dir", state, "--budget-tokens", "100")
        assert result.exit_code == BUDGET_REACHED, result.output
        data = status_json(state)
    assert _served(log) == []  # 3 + 120 estimated tokens never fit 100
    assert data["budget_paused"] == TASKS
    assert data["spending"][0]["budget"] == {"usd": None, "tokens": 100}


def test_a_negative_budget_exits_2(tmp_path: Path) -> None:
    result = invoke("resume", "--state-dir", tmp_path, "--budget-usd", "-1")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
