"""``BaseAdapter.run(budget=…)``: a harness run's spending budget, checked before every
attempt with its estimate and charged with what the attempt used
(``backstay.adapters.harness.run_budget``), through the mock agent: a real subprocess reporting
Claude Code's usage and cost, failed attempts included."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Final

import pytest

from backstay.adapters.mock import MockAdapter
from backstay.errors import ConfigError
from backstay.policy import RetryPolicy
from backstay.policy.spend import SpendBudget

FAST_RETRY: Final = RetryPolicy(name="fast", max_attempts=3, initial_delay_s=0.01, max_delay_s=0.01)
# A 529 after the agent spent $0.10, then a success.
SPENT_THEN_OVERLOADED: Final = [
    [{"error": "overloaded", "input_tokens": 400, "output_tokens": 100, "cost_usd": 0.10}],
    [{"result": "done", "input_tokens": 400, "output_tokens": 100, "cost_usd": 0.10}],
]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("solve it", encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return {"prompt_file": prompt, "workspace": workspace, "output_dir": tmp_path / "out"}


def _run(dirs: dict[str, Path], budget: Any) -> int:
    return MockAdapter().run(
        "mock-model",
        dirs["prompt_file"],
        dirs["workspace"],
        dirs["output_dir"],
        {"scenario": {"attempts": SPENT_THEN_OVERLOADED}},
        10.0,
        policy=FAST_RETRY,
        budget=budget,
    )


def _metrics(dirs: dict[str, Path]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((dirs["output_dir"] / "metrics.json").read_text())
    return loaded


def _agent_log(dirs: dict[str, Path]) -> str:
    return (dirs["output_dir"] / "agent.log").read_text()


def test_a_retry_whose_estimate_no_longer_fits_is_not_started_and_the_run_returns_5(
    dirs: dict[str, Path],
) -> None:
    # Unpriced, the first attempt is estimated at $0; the retry at the first's $0.10,
    # which does not fit the $0.05 left of $0.15.
    assert _run(dirs, SpendBudget(usd=0.15)) == 5
    assert _agent_log(dirs).count("acts out") == 1
    metrics = _metrics(dirs)
    assert metrics["exit_code"] == 5
    assert metrics["cost_usd"] == pytest.approx(0.10)
    assert metrics["error"].startswith(
        "ERR_BUDGET_EXCEEDED: the run's USD budget $0.15 has no room for attempt 2 on mock "
        "mock-model ($0.100000 spent, estimate $0.100000)"
    )
    assert (dirs["output_dir"] / "attempt_1" / "metrics.json").exists()
    assert not (dirs["output_dir"] / "attempt_2").exists()


def test_a_run_whose_attempts_fit_its_budget_retries_and_succeeds(dirs: dict[str, Path]) -> None:
    assert _run(dirs, SpendBudget(usd=0.25, tokens=10_000)) == 0
    assert _agent_log(dirs).count("acts out") == 2
    assert _metrics(dirs)["cost_usd"] == pytest.approx(0.20)


def test_without_a_budget_nothing_is_estimated(dirs: dict[str, Path]) -> None:
    assert _run(dirs, None) == 0
    assert "budget:" not in _agent_log(dirs)


def test_a_budget_that_is_not_a_spend_budget_is_refused_before_anything_is_written(
    dirs: dict[str, Path],
) -> None:
    with pytest.raises(ConfigError, match="SpendBudget"):
        _run(dirs, 0.5)
    assert not dirs["output_dir"].exists()


# -- through a shared gateway holding runs to allowances ----------------------------------


class _AllowanceGateway:
    """What ``RunBudget`` asks of the gateway in use: a shared one without a spend ledger
    (``RemoteRunGateway.holds_allowances``)."""

    holds_allowances = True


def test_through_a_shared_gateway_a_runs_registration_grants_the_room_its_attempts_left(
    tmp_path: Path,
) -> None:
    from backstay.adapters.capture import Capture  # noqa: PLC0415
    from backstay.adapters.cli.claude_code import ClaudeCodeAdapter  # noqa: PLC0415
    from backstay.adapters.contract import AgentRequest  # noqa: PLC0415
    from backstay.adapters.gateway_wiring import (  # noqa: PLC0415
        current_request_budget,
        use_gateway,
    )
    from backstay.adapters.harness.run_budget import RunBudget  # noqa: PLC0415
    from backstay.adapters.usage import Usage  # noqa: PLC0415

    adapter = ClaudeCodeAdapter()
    request = AgentRequest(
        model="claude-sonnet-4-5",
        prompt="hi",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=10.0,
    )
    budget = RunBudget(SpendBudget(tokens=10_000))
    seen: list[Any] = []
    given: list[Any] = []

    async def attempt(run: Capture, used: int) -> None:
        async def make() -> None:  # what the gateway is sent when the attempt's run opens
            seen.append(current_request_budget())
            given.append(seen[-1].allowance(4))
            run.add_usage(Usage(input_tokens=used))

        await budget.attempt(run, adapter, request, len(seen) + 1, make)

    run = Capture(tmp_path / "out")
    try:
        with use_gateway(_AllowanceGateway()):  # type: ignore[arg-type]
            asyncio.run(attempt(run, 3_000))
            asyncio.run(attempt(run, 1_000))
    finally:
        run.close()
    # The run's registration: its budget and reservation, no key, no prompt.
    shared = seen[1].shared()
    assert shared["task_budget"] == {"usd": None, "tokens": 10_000}
    assert shared["adapter"] == "claude-code"
    assert "hi" not in json.dumps(shared)
    # Each attempt's grant: the whole room its run's earlier attempts left, its own
    # reservation not counted against it, whatever the parallel runs of a batch would be.
    assert [g["granted"] for g in given] == [
        {"usd": None, "tokens": 10_000},
        {"usd": None, "tokens": 7_000},
    ]
    (scope,) = given[1]["allowance"]
    assert (scope["scope"], scope["name"]) == ("task", "run")
    assert scope["spent"]["tokens"] == 3_000
    assert scope["reserved"]["tokens"] == 0
    assert budget.spent.tokens == 4_000
