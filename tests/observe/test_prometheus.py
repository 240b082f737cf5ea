"""``/metrics`` of a state directory: the spec's four metrics and backstay's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.observe.support import finished_batch, log_circuit

from backstay.engine.circuit_log import CircuitChange
from backstay.events import RateLimited
from backstay.observe.live import LiveCounters
from backstay.observe.prometheus import render_metrics
from backstay.observe.snapshot import read_state


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = finished_batch(tmp_path_factory.mktemp("batch"))
    log_circuit(found, "mock/mock-model", CircuitChange.OPENED, CircuitChange.WAITED)
    log_circuit(found, "mock/other", CircuitChange.OPENED, CircuitChange.HALF_OPENED)
    return found


def _samples(text: str) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_tasks_by_state(state: Path) -> None:
    samples = _samples(render_metrics(read_state(state)))
    assert samples['backstay_tasks{state="succeeded"}'] == 1
    # The content policy task is failed, its escalation open for review.
    assert samples['backstay_tasks{state="failed"}'] == 2
    assert samples['backstay_tasks{state="escalated"}'] == 0
    assert samples['backstay_tasks{state="paused"}'] == 1
    assert samples['backstay_tasks{state="running"}'] == 0


def test_the_four_agent_metrics_are_there(state: Path) -> None:
    samples = _samples(render_metrics(read_state(state)))
    assert samples['agent_step_total{framework="mock",status="succeeded"}'] == 1
    assert samples['agent_step_total{framework="mock",status="failed"}'] == 3
    assert samples['agent_step_duration_seconds_count{framework="mock",step_type="agent_run"}'] == 4
    assert samples['agent_tokens_consumed{framework="mock",model="mock-model"}'] == 15
    assert samples['agent_active_sessions{framework="mock"}'] == 0


def test_failures_tokens_cost_and_escalations(state: Path) -> None:
    samples = _samples(render_metrics(read_state(state)))
    assert samples['backstay_failures_total{kind="context_limit"}'] == 1
    assert samples['backstay_tokens_total{type="input",provider="mock",model="mock-model"}'] == 10
    assert samples['backstay_cost_usd_total{provider="mock",model="mock-model"}'] == 0.001
    assert samples["backstay_escalations_open"] == 2


def test_circuit_state_per_circuit(state: Path) -> None:
    samples = _samples(render_metrics(read_state(state)))
    assert samples['backstay_circuit_state{circuit="mock/mock-model"}'] == 2
    assert samples['backstay_circuit_state{circuit="mock/other"}'] == 1


def test_waits_by_reason_include_live_rate_limits(state: Path) -> None:
    live = LiveCounters()
    live.emit(RateLimited(operation="w:t:r", attempt=1, wait_s=0.25))
    samples = _samples(render_metrics(read_state(state), live))
    assert samples['backstay_waits_total{reason="circuit_open"}'] == 1
    assert samples['backstay_wait_seconds_total{reason="circuit_open"}'] == 1.5
    assert samples['backstay_waits_total{reason="rate_limiter"}'] == 1
    assert samples['backstay_events_total{event="adapter.rate_limited"}'] == 1


def test_no_label_names_a_task(state: Path) -> None:
    text = render_metrics(read_state(state))
    values = set(re.findall(r'="([^"]*)"', text))
    assert not values & {"ok", "overflow", "blocked", "quota"}
    assert not [value for value in values if ":" in value or "run_01" in value]
