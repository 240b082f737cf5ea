"""``backstay run --fallback``: each attempt on a candidate of the chain, through the
official SDKs against the fake provider (and the mock agent, a real subprocess, for the
workspace rule); metrics.json names the requested and the answering model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from tests.adapters.support import CANARY_KEY
from typer.testing import CliRunner, Result

from backstay.cli import app
from backstay.cli._errors import USAGE_ERROR
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario

PRIMARY: Final = "claude-haiku-4-5"
SPARE: Final = "gpt-5-mini"
FAST: Final = "{extends: agent_dispatch, initial_delay_s: 0.01, max_delay_s: 0.01}"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKSTAY_CONFIG", raising=False)
    monkeypatch.setenv("RUN_ANTHROPIC_KEY", CANARY_KEY)
    monkeypatch.setenv("RUN_OPENAI_KEY", CANARY_KEY)
    (tmp_path / "prompt.md").write_text("Say hello", encoding="utf-8")
    (tmp_path / "ws").mkdir()


def _run(url: str, *extra: str, base_url: str | None = None) -> Result:
    spare = (
        f"{{adapter: openai-api, model: {SPARE}, api_key_env: RUN_OPENAI_KEY, "
        f"base_url: '{url}/v1'}}"
    )
    args = [
        "run",
        "--adapter",
        "anthropic-api",
        "--model",
        PRIMARY,
        "--prompt-file",
        "prompt.md",
        "--workspace",
        "ws",
        "--output-dir",
        "out",
        "--timeout",
        "20",
        "--adapter-option",
        f"base_url={base_url or url}",
        "--adapter-option",
        "api_key_env=RUN_ANTHROPIC_KEY",
        "--fallback",
        spare,
        *extra,
    ]
    return runner.invoke(app, args)


def _metrics(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tmp_path / "out" / "metrics.json").read_text())
    return loaded


def test_an_outage_of_the_model_is_answered_by_the_fallback(tmp_path: Path) -> None:
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY)
    with FakeProvider(Scenario(faults=(down,))) as fake:
        result = _run(fake.url)
        by_api = dict(fake.stats().by_api)
    assert result.exit_code == 0, result.output
    assert by_api == {"anthropic": 1, "openai-chat": 1}  # moved at once, no retry here
    metrics = _metrics(tmp_path)
    assert (metrics["requested_adapter"], metrics["requested_model"]) == (
        "anthropic-api",
        PRIMARY,
    )
    assert (metrics["adapter"], metrics["model"]) == ("openai-api", SPARE)
    assert metrics["candidates"] == [
        f"anthropic-api/{PRIMARY}",
        f"openai-api/{SPARE}@RUN_OPENAI_KEY",
    ]
    assert metrics["error"] is None
    log = (tmp_path / "out" / "agent.log").read_text()
    assert CANARY_KEY not in log + result.output + json.dumps(metrics)


def test_a_healthy_model_answers_itself(tmp_path: Path) -> None:
    with FakeProvider(Scenario()) as fake:
        result = _run(fake.url)
        by_api = dict(fake.stats().by_api)
    assert result.exit_code == 0, result.output
    assert by_api == {"anthropic": 1}
    metrics = _metrics(tmp_path)
    assert (metrics["model"], metrics["candidates"]) == (PRIMARY, [f"anthropic-api/{PRIMARY}"])


def test_an_invalid_request_does_not_move(tmp_path: Path) -> None:
    with FakeProvider(Scenario()) as fake:  # a path the provider does not serve: HTTP 404
        result = _run(fake.url, "--policy", FAST, base_url=fake.url + "/no-such-api")
        by_api = dict(fake.stats().by_api)
    assert result.exit_code == 1
    assert by_api.get("openai-chat", 0) == 0
    metrics = _metrics(tmp_path)
    assert (metrics["model"], metrics["candidates"]) == (PRIMARY, [f"anthropic-api/{PRIMARY}"])
    assert metrics["error"].startswith("ERR_HTTP_404")  # an invalid_request


def test_a_context_overflow_moves_only_to_a_larger_window(tmp_path: Path) -> None:
    overflow = Fault(kind=FaultKind.CONTEXT_OVERFLOW, model=PRIMARY)
    small = "{adapter: openai-api, model: gpt-4o-mini, context_window: 128000}"
    with FakeProvider(Scenario(faults=(overflow,))) as fake:
        large = (
            f"{{adapter: openai-api, model: gpt-4.1, context_window: 1000000, "
            f"api_key_env: RUN_OPENAI_KEY, base_url: '{fake.url}/v1'}}"
        )
        # The spare of _run has no window: never "larger"; gpt-4o-mini's is smaller.
        result = _run(
            fake.url, "--fallback", small, "--fallback", large, "--context-window", "200000"
        )
        by_api = dict(fake.stats().by_api)
    assert result.exit_code == 0, result.output
    assert by_api == {"anthropic": 1, "openai-chat": 1}
    assert _metrics(tmp_path)["model"] == "gpt-4.1"


def test_a_fallback_that_is_not_a_candidate_exits_2_and_nothing_runs(tmp_path: Path) -> None:
    result = _run("http://127.0.0.1:9", "--fallback", "openai-api")
    assert result.exit_code == USAGE_ERROR
    assert "--fallback" in result.output
    assert "ADAPTER:MODEL" in result.output
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_a_fallback_key_variable_that_is_not_set_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUN_OPENAI_KEY")
    result = _run("http://127.0.0.1:9")
    assert result.exit_code == USAGE_ERROR
    assert "RUN_OPENAI_KEY is not set" in result.output
    assert not (tmp_path / "out").exists()


def _mock_run(tmp_path: Path, first: list[dict[str, Any]]) -> dict[str, Any]:
    scenario = tmp_path / "scenario.yaml"
    steps = {"attempts": [first, [{"result": "done"}]]}
    scenario.write_text(yaml.safe_dump(steps), encoding="utf-8")
    args = [
        "run",
        "--adapter",
        "mock",
        "--model",
        "mock-main",
        "--prompt-file",
        "prompt.md",
        "--workspace",
        "ws",
        "--output-dir",
        "ws/out",  # inside the workspace: its logs are not a change of the workspace
        "--timeout",
        "20",
        "--adapter-option",
        f"scenario={scenario}",
        "--policy",
        FAST,
        "--fallback",
        "mock:mock-spare",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    loaded: dict[str, Any] = json.loads((tmp_path / "ws" / "out" / "metrics.json").read_text())
    return loaded


def test_an_agent_failing_before_touching_the_workspace_moves(tmp_path: Path) -> None:
    metrics = _mock_run(tmp_path, [{"error": "overloaded"}])
    assert metrics["candidates"] == ["mock/mock-main", "mock/mock-spare"]
    assert (metrics["requested_model"], metrics["model"]) == ("mock-main", "mock-spare")


def test_an_agent_failing_after_editing_the_workspace_does_not_move(tmp_path: Path) -> None:
    edit = {"write_file": "main.py", "text": "half done"}
    metrics = _mock_run(tmp_path, [edit, {"error": "overloaded"}])
    assert metrics["candidates"] == ["mock/mock-main", "mock/mock-main"]
    assert metrics["model"] == "mock-main"


def test_each_attempt_of_a_fallback_run_keeps_its_own_files(tmp_path: Path) -> None:
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY)
    with FakeProvider(Scenario(faults=(down,))) as fake:
        result = _run(fake.url)  # no --policy: the agent policy, as any run
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    first = json.loads((out / "attempt_1" / "metrics.json").read_text())
    second = json.loads((out / "attempt_2" / "metrics.json").read_text())
    assert not (out / "attempt_3").exists()
    assert first["exit_code"] != 0
    assert first["error"].startswith("ERR_")
    assert (second["exit_code"], second["error"]) == (0, None)
    assert second["tokens_total"] > 0
    assert "openai-api" in (out / "attempt_2" / "agent.log").read_text()
    metrics = _metrics(tmp_path)  # the run's own: every attempt added up
    assert metrics["api_calls"] == first["api_calls"] + second["api_calls"]
    assert metrics["tokens_total"] == first["tokens_total"] + second["tokens_total"]
    assert metrics["candidates"] == [
        f"anthropic-api/{PRIMARY}",
        f"openai-api/{SPARE}@RUN_OPENAI_KEY",
    ]


def test_no_retry_makes_one_attempt_across_the_chain(tmp_path: Path) -> None:
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY)
    with FakeProvider(Scenario(faults=(down,))) as fake:
        result = _run(fake.url, "--no-retry")
        by_api = dict(fake.stats().by_api)
    assert result.exit_code == 1
    assert by_api == {"anthropic": 1}  # no move: the one attempt was spent
    metrics = _metrics(tmp_path)
    assert metrics["candidates"] == [f"anthropic-api/{PRIMARY}"]
    assert metrics["error"].startswith("ERR_")
    assert not (tmp_path / "out" / "attempt_1").exists()  # one attempt: the run's files only
