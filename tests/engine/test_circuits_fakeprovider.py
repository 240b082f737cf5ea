"""The engine's circuit breakers against a real outage: the API adapters, through the
official SDKs, against the fake provider answering 503 for a while."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Final

from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.breaker import BreakerSettings
from backstay.engine import (
    CircuitChange,
    CircuitEntry,
    Engine,
    Summary,
    TaskRecord,
    TaskSpec,
    TaskState,
)
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Outage, Scenario
from backstay.policy.retry import RetryPolicy

DOWN_MODEL: Final = "claude-haiku-4-5"
FAST: Final = RetryPolicy(
    name="fast", max_attempts=20, initial_delay_s=0.05, max_delay_s=0.05, jitter=0.0
)
BREAKER: Final = BreakerSettings(
    failure_threshold=2, failure_rate_threshold=None, open_duration_s=0.3
)
ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY, "OPENAI_API_KEY": CANARY_KEY}


def _spec(tmp_path: Path, task_id: str, adapter: str, model: str, url: str) -> TaskSpec:
    workspace = tmp_path / "ws" / task_id
    workspace.mkdir(parents=True)
    base_url = url + ("/v1" if adapter == "openai-api" else "")
    return TaskSpec(
        workflow_id="outage",
        task_id=task_id,
        adapter=adapter,
        model=model,
        workspace=workspace,
        timeout_s=20.0,
        prompt="Say hello",
        env=ENV,
        config={"base_url": base_url, "stream": adapter == "anthropic-api"},
        policy=FAST,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Ran:
    summary: Summary
    tasks: dict[str, TaskRecord]
    entries: tuple[CircuitEntry, ...]
    by_api: dict[str, int]


def _run(tmp_path: Path, scenario: Scenario) -> _Ran:
    state = tmp_path / "state"
    adapters = {"anthropic-api": AnthropicApiAdapter(), "openai-api": OpenAIApiAdapter()}
    with FakeProvider(scenario) as fake:
        specs = [
            _spec(tmp_path, "claude", "anthropic-api", DOWN_MODEL, fake.url),
            _spec(tmp_path, "gpt", "openai-api", "gpt-5-mini", fake.url),
        ]
        with Engine(state, adapters=adapters, env=ENV, breaker=BREAKER, concurrency=2) as engine:
            summary = engine.run_sync(specs)
            tasks = {t.task_id: t for t in engine.store.tasks()}
            entries = engine.circuit_log.entries()
        served = fake.stats()
    return _Ran(summary, tasks, entries, dict(served.by_api))


def test_a_failed_probe_reopens_the_circuit_and_a_good_one_closes_it(tmp_path: Path) -> None:
    # The model's first three requests fail: two trip the circuit, the first probe fails.
    scenario = Scenario(faults=(Fault(kind=FaultKind.UNAVAILABLE, model=DOWN_MODEL, first=3),))
    ran = _run(tmp_path, scenario)
    summary, claude, gpt = ran.summary, ran.tasks["claude"], ran.tasks["gpt"]
    changes = [(e.change, e.operation_id) for e in ran.entries if e.change != "waited"]
    assert (claude.state, claude.attempts_used) == (TaskState.SUCCEEDED, 4)
    assert (gpt.state, gpt.attempts_used) == (TaskState.SUCCEEDED, 1)
    assert summary.failures_by_kind == {"server_error": 3}
    assert (summary.circuit_trips, summary.circuit_waits) == (2, 2)
    assert dict(summary.trips_by_breaker) == {f"anthropic-api/{DOWN_MODEL}": 2}
    assert ran.by_api == {"anthropic": 4, "openai-chat": 1}  # no request while the circuit was open
    op = "outage:claude:run_01"
    assert changes == [
        (CircuitChange.OPENED, op),
        (CircuitChange.HALF_OPENED, op),
        (CircuitChange.OPENED, op),
        (CircuitChange.HALF_OPENED, op),
        (CircuitChange.CLOSED, op),
    ]


def test_a_timed_outage_is_waited_out_and_the_task_succeeds(tmp_path: Path) -> None:
    outage = Outage(start_s=0.0, duration_s=1.0)
    down = Fault(kind=FaultKind.UNAVAILABLE, model=DOWN_MODEL, outage=outage)
    ran = _run(tmp_path, Scenario(faults=(down,)))
    summary, by_api = ran.summary, ran.by_api
    assert summary.count(TaskState.SUCCEEDED) == 2
    assert summary.circuit_trips >= 1
    assert summary.circuit_waits >= 1
    # Every attempt reached the provider: the waits sent nothing.
    assert summary.attempts == by_api["anthropic"] + by_api["openai-chat"]
    assert summary.failures_by_kind == {"server_error": by_api["anthropic"] - 1}
