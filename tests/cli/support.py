"""Shared helpers of the engine command tests: suites whose tasks the mock agent acts out
(a real subprocess per attempt), and the command line run in this process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import yaml
from typer.testing import CliRunner, Result

from backstay.cli import app

runner = CliRunner()

DONE: Final[list[dict[str, Any]]] = [
    {"result": "done", "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}
]
# A reset far away: the task stays paused for the whole test.
RESETS_AT: Final = "2099-01-01T00:00:00+00:00"
# What each task of the four-outcome batch acts out (the task `ok` does `DONE`).
FOUR_OUTCOMES: Final[dict[str, list[list[dict[str, Any]]]]] = {
    "overflow": [[{"error": "context_overflow"}]],
    "blocked": [[{"error": "content_filter"}], DONE],
    "quota": [[{"error": "quota", "resets_at": RESETS_AT}]],
}


def write_suite(
    tmp_path: Path,
    tasks: list[str],
    *,
    scenario: list[list[dict[str, Any]]] | None = None,
    scenarios: dict[str, list[list[dict[str, Any]]]] | None = None,
    name: str = "nightly",
    file: str = "suite.yaml",
    task_fields: dict[str, Any] | None = None,
    mock_options: dict[str, Any] | None = None,
) -> Path:
    """A suite of ``tasks`` (ids, each with ``task_fields``) run by the mock agent; the
    mock counts its starts per task in ``tmp_path/mock``, so a resumed task continues its
    scenario."""
    mock: dict[str, Any] = {
        "scenario": {"attempts": scenario or [DONE]},
        "state_dir": str(tmp_path / "mock"),
        **(mock_options or {}),
    }
    if scenarios:
        mock["scenarios"] = {task: {"attempts": steps} for task, steps in scenarios.items()}
    suite = {
        "suite": name,
        "defaults": {
            "adapter": "mock",
            "model": "mock-model",
            "timeout_s": 20,
            "policy": {"extends": "agent_dispatch", "initial_delay_s": 0.05, "max_delay_s": 0.05},
        },
        "adapters": {"mock": mock},
        "tasks": [{"id": task, "prompt": f"do {task}", **(task_fields or {})} for task in tasks],
    }
    path = tmp_path / file
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(arg) for arg in args])


def four_outcome_batch(tmp_path: Path) -> tuple[Result, Path]:
    """``backstay batch`` of four tasks: one succeeds, one overflows its context (failed),
    one is blocked by content policy (failed, escalated for review), one runs out of quota
    (paused)."""
    suite = write_suite(tmp_path, ["ok", "overflow", "blocked", "quota"], scenarios=FOUR_OUTCOMES)
    state = tmp_path / "state"
    return invoke("batch", suite, "--state-dir", state), state


def status_json(state: Path) -> dict[str, Any]:
    result = invoke("status", "--state-dir", state, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def states_of(state: Path) -> dict[str, str]:
    """Task run (``"ok/T0-run_01"``) → its state."""
    return {task["run"]: task["state"] for task in status_json(state)["tasks"]}


def dispatches(tmp_path: Path) -> int:
    """How often the mock agent was started in all: its own count (one byte per start in
    ``tmp_path/mock``), kept apart from the engine's records."""
    return sum(path.stat().st_size for path in (tmp_path / "mock").glob("*"))
