"""``backstay run`` retries by default, as the adapter reliability contract says
(``agent_dispatch``: 3 retries, 2 s, 4 s, 8 s, Retry-After honoured), through the real API
adapters and SDKs against the project's fake provider. Checks of the decided delays run
under ``testing_mode`` (no sleeping); the waits themselves are measured in real time from
the fake provider's request log. Every run is given nothing but its provider's standard
variables (``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``, ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL``), as a user who has used an SDK exports them: no adapter option names
a key, a variable or an endpoint."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from typer.testing import CliRunner, Result

from backstay.cli import app
from backstay.events import AttemptFailed
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.testing import CapturedEvents, capture_events, testing_mode

runner = CliRunner()
KEY: Final = "sk-ant-api03-RetryCanaryRetryCanary0123456789"
NETWORK_ERROR: Final = Fault(kind=FaultKind.RESET, after_events=0)
# The delays agent_dispatch decides after attempts 1, 2 and 3.
CONTRACT_DELAYS: Final = [2.0, 4.0, 8.0]


@pytest.fixture(autouse=True)
def _no_stray_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BACKSTAY_CONFIG", "MODEL", "TIER", "RUN_NUMBER"):
        monkeypatch.delenv(name, raising=False)


# Adapter → its key and the standard variables of its provider, given the fake's URL.
ADAPTERS: Final = ("anthropic-api", "openai-api")


def _standard_env(adapter: str, url: str) -> dict[str, str]:
    if adapter == "openai-api":
        return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{url}/v1"}
    return {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": url}


def _run(tmp_path: Path, fake: FakeProvider, *extra: str, adapter: str = "anthropic-api") -> Result:
    """``backstay run`` of ``adapter`` against ``fake``, with no ``--policy`` and nothing
    but the provider's standard variables exported."""
    (tmp_path / "prompt.md").write_text("Say hello.", encoding="utf-8")
    (tmp_path / "ws").mkdir(exist_ok=True)
    args = [
        "run",
        "--adapter",
        adapter,
        "--model",
        "fake-model",
        "--prompt-file",
        "prompt.md",
        "--workspace",
        "ws",
        "--output-dir",
        "out",
        "--timeout",
        "30",
        *extra,
    ]
    return runner.invoke(app, args, env=_standard_env(adapter, fake.url))


def _metrics(tmp_path: Path, *parts: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        tmp_path.joinpath("out", *parts, "metrics.json").read_text()
    )
    return loaded


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def fast() -> Iterator[CapturedEvents]:
    """No sleeping, attempts as the policy says; the events emitted meanwhile."""
    with testing_mode(attempts=None), capture_events() as events:
        yield events


def _delays(events: CapturedEvents) -> list[float | None]:
    """After each failed attempt, the delay the policy decided (slept or not), or
    ``None`` where it gave up."""
    return [e.delay_s for e in events if isinstance(e, AttemptFailed)]


def test_a_network_error_is_retried_three_times_2_4_8_s_apart_then_fails(
    tmp_path: Path,
) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(faults=(NETWORK_ERROR,)), log_path=log) as fake:
        result = _run(tmp_path, fake)
    assert result.exit_code == 1, result.output
    requests = _requests(log)
    times = [request["time"] for request in requests]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert len(gaps) == 3
    for gap, delay in zip(gaps, CONTRACT_DELAYS, strict=True):
        assert delay <= gap < delay + 1.5, gaps  # no jitter in agent_dispatch
    assert len({request["idempotency_key"] for request in requests}) == 1
    metrics = _metrics(tmp_path)
    assert (metrics["api_calls"], metrics["exit_code"]) == (4, 1)
    assert metrics["error"].startswith("ERR_CONNECTION_RESET")


def test_a_network_error_decides_the_contract_delays_and_counts_every_call(
    tmp_path: Path, fast: CapturedEvents
) -> None:
    with FakeProvider(Scenario(faults=(NETWORK_ERROR,))) as fake:
        result = _run(tmp_path, fake)
        requests = fake.stats().requests
    assert result.exit_code == 1
    assert "failed (exit code 1): ERR_CONNECTION_RESET" in result.stderr
    assert _delays(fast) == [*CONTRACT_DELAYS, None]
    assert requests == 4
    assert _metrics(tmp_path)["api_calls"] == 4


def test_each_attempt_keeps_its_own_logs_and_metrics(tmp_path: Path, fast: CapturedEvents) -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=2),))
    with FakeProvider(scenario) as fake:
        result = _run(tmp_path, fake)
        stats = fake.stats()
    assert result.exit_code == 0, result.output
    attempts = [_metrics(tmp_path, f"attempt_{n}") for n in (1, 2, 3)]
    assert [m["exit_code"] for m in attempts] == [1, 1, 0]
    assert [m["api_calls"] for m in attempts] == [1, 1, 1]
    assert attempts[0]["error"].startswith("ERR_HTTP_529")
    assert not (tmp_path / "out" / "attempt_4").exists()
    run = _metrics(tmp_path)
    assert (run["api_calls"], run["exit_code"], run["error"]) == (3, 0, None)
    assert run["tokens_input"] == stats.input_tokens == attempts[2]["tokens_input"]
    assert run["tokens_output"] == stats.output_tokens > 0
    logs = [(tmp_path / "out" / f"attempt_{n}" / "agent.log").read_text() for n in (1, 2, 3)]
    assert all(log.count(": attempt ") == 1 for log in logs)
    whole = (tmp_path / "out" / "agent.log").read_text()
    assert all(line.split(" ", 1)[1] in whole for log in logs for line in log.splitlines())
    assert (tmp_path / "out" / "stdout.log").read_text() == (
        tmp_path / "out" / "attempt_3" / "stdout.log"
    ).read_text()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_run_succeeds_with_its_usage_recorded(tmp_path: Path, adapter: str) -> None:
    with FakeProvider() as fake:
        result = _run(tmp_path, fake, adapter=adapter)
        stats = fake.stats()
    assert result.exit_code == 0, result.output
    assert stats.requests == 1
    metrics = _metrics(tmp_path)
    assert (metrics["exit_code"], metrics["api_calls"], metrics["error"]) == (0, 1, None)
    assert metrics["tokens_input"] == stats.input_tokens > 0
    assert metrics["tokens_output"] == stats.output_tokens > 0


# Each provider's own "overloaded" answer: Anthropic's 529, OpenAI's 503.
OVERLOADED_STATUS: Final = {"anthropic-api": 529, "openai-api": 503}


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_two_529s_then_success_waits_2_then_4_s(
    tmp_path: Path, fast: CapturedEvents, adapter: str
) -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=2),))
    with FakeProvider(scenario) as fake:
        result = _run(tmp_path, fake, adapter=adapter)
        stats = fake.stats()
    assert result.exit_code == 0, result.output
    assert _delays(fast) == [2.0, 4.0]
    assert stats.by_status == {OVERLOADED_STATUS[adapter]: 2, 200: 1}
    assert _metrics(tmp_path)["api_calls"] == 3


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_429_with_retry_after_is_retried_after_it_with_the_same_key(
    tmp_path: Path, adapter: str
) -> None:
    log = tmp_path / "requests.jsonl"
    scenario = Scenario(faults=(Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=1.0),))
    with FakeProvider(scenario, log_path=log) as fake:
        result = _run(tmp_path, fake, adapter=adapter)
    assert result.exit_code == 0, result.output
    first, second = _requests(log)
    assert (first["status"], second["status"]) == (429, 200)
    assert second["time"] - first["time"] >= 1.0
    assert first["idempotency_key"] == second["idempotency_key"] is not None
    assert _metrics(tmp_path)["api_calls"] == 2


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_context_overflow_is_not_retried(
    tmp_path: Path, fast: CapturedEvents, adapter: str
) -> None:
    with FakeProvider(Scenario(faults=(Fault(kind=FaultKind.CONTEXT_OVERFLOW),))) as fake:
        result = _run(tmp_path, fake, adapter=adapter)
        requests = fake.stats().requests
    assert result.exit_code == 1
    assert requests == 1
    assert _metrics(tmp_path)["api_calls"] == 1
    assert "ERR_LLM_CONTEXT" in _metrics(tmp_path)["error"]


def test_an_exhausted_openai_quota_is_not_retried(tmp_path: Path, fast: CapturedEvents) -> None:
    with FakeProvider(Scenario(faults=(Fault(kind=FaultKind.QUOTA_EXHAUSTED),))) as fake:
        result = _run(tmp_path, fake, adapter="openai-api")
        requests = fake.stats().requests
    assert result.exit_code == 1
    assert requests == 1
    assert "quota" in _metrics(tmp_path)["error"].lower()


@pytest.mark.parametrize("flag", [["--policy", "none"], ["--no-retry"]])
def test_policy_none_and_no_retry_make_a_single_attempt(
    tmp_path: Path, fast: CapturedEvents, flag: list[str]
) -> None:
    with FakeProvider(Scenario(faults=(NETWORK_ERROR,))) as fake:
        result = _run(tmp_path, fake, *flag)
        requests = fake.stats().requests
    assert result.exit_code == 1
    assert requests == 1
    assert not (tmp_path / "out" / "attempt_1").exists()


def test_the_key_is_redacted_in_every_attempts_files(tmp_path: Path, fast: CapturedEvents) -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, first=1),))
    with FakeProvider(scenario) as fake:
        result = _run(tmp_path, fake)
    assert result.exit_code == 0, result.output
    assert KEY not in result.output
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8"), path
