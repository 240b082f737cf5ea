"""What the contract suite runs and reads: one task through the real ``Engine``, one
direct dispatch, and the checks on an attempt's files."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from backstay.adapters.capture import (
    METRICS_EXTRA_KEYS,
    METRICS_FILE,
    METRICS_KEYS,
    Capture,
    Stream,
)
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult
from backstay.engine.records import AttemptRecord, Escalation, TaskRecord
from backstay.engine.runner import Engine
from backstay.engine.task import TaskSpec
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.idempotency.ids import attempt_id, operation_id
from backstay.policy.retry import RetryPolicy
from backstay.testing.fakeclock import FakeClock

__all__ = [
    "PROMPT",
    "WORKFLOW",
    "EngineRun",
    "Recorder",
    "check_attempt_files",
    "check_metrics",
    "direct_ids",
    "dispatch_once",
    "run_task",
]

WORKFLOW = "contract"
PROMPT = "Reply with the word done."


class Recorder:
    """An ``Adapter`` passing every call to ``inner``, noting the ids each dispatch got."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner
        self.ids: list[tuple[str, str]] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        self.ids.append((operation_id, attempt_id))
        return await self.inner.dispatch(
            request, operation_id=operation_id, attempt_id=attempt_id, capture=capture
        )

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        return self.inner.validate_config(config)

    def classify_failure(
        self,
        *,
        output: str = "",
        exit_code: int | None = None,
        error: BaseException | None = None,
    ) -> Failure | None:
        return self.inner.classify_failure(output=output, exit_code=exit_code, error=error)


@dataclasses.dataclass(frozen=True, slots=True)
class EngineRun:
    """One task run by the engine: how the store has it, and what happened on the way."""

    spec: TaskSpec
    record: TaskRecord
    attempts: tuple[AttemptRecord, ...]
    escalations: tuple[Escalation, ...]
    sleeps: tuple[float, ...]
    ids: tuple[tuple[str, str], ...]

    @property
    def failures(self) -> list[Failure | None]:
        return [a.failure for a in self.attempts]

    @property
    def delays(self) -> list[float | None]:
        return [a.delay_s for a in self.attempts]


def run_task(
    adapter: Adapter,
    *,
    task_id: str,
    state_dir: Path,
    workspace: Path,
    clock: FakeClock,
    policy: RetryPolicy,
    model: str,
    timeout_s: float,
    config: Mapping[str, Any],
    env: Mapping[str, str],
) -> EngineRun:
    """Run one task of ``adapter`` through a real ``Engine`` (SQLite state in
    ``state_dir``, sleeping on ``clock``) until it ends or stops to wait."""
    recorder = Recorder(adapter)
    spec = TaskSpec(
        workflow_id=WORKFLOW,
        task_id=task_id,
        adapter=adapter.name,
        model=model,
        workspace=workspace,
        timeout_s=timeout_s,
        prompt=PROMPT,
        env=env,
        config=config,
        policy=policy,
    )
    workspace.mkdir(parents=True, exist_ok=True)
    sleeps_before = len(clock.sleeps)
    with Engine(state_dir, adapters={adapter.name: recorder}, clock=clock, env=env) as engine:
        engine.run_sync([spec])
        record = engine.store.task(spec.operation_id)
        assert record is not None, f"the engine has no record of {spec.operation_id!r}"
        return EngineRun(
            spec=spec,
            record=record,
            attempts=engine.store.attempts(spec.operation_id),
            escalations=engine.escalations.list(),
            sleeps=tuple(clock.sleeps[sleeps_before:]),
            ids=tuple(recorder.ids),
        )


def direct_ids(task_id: str) -> tuple[str, str]:
    """The operation id and first attempt id of a dispatch made outside the engine."""
    op = operation_id(WORKFLOW, task_id, "run_01")
    return op, attempt_id(op, 1)


def dispatch_once(
    adapter: Adapter,
    *,
    task_id: str,
    output_dir: Path,
    workspace: Path,
    model: str,
    timeout_s: float,
    config: Mapping[str, Any],
    env: Mapping[str, str],
) -> AgentResult | AdapterError:
    """The first attempt of an operation, dispatched directly: its result, or the
    ``AdapterError`` it raised. Anything else it raises propagates."""
    workspace.mkdir(parents=True, exist_ok=True)
    request = AgentRequest(
        model=model,
        workspace=workspace,
        output_dir=output_dir,
        timeout_s=timeout_s,
        prompt=PROMPT,
        env=env,
        config=config,
    )
    op, first = direct_ids(task_id)

    async def go() -> AgentResult | AdapterError:
        with Capture(output_dir) as capture:
            try:
                return await adapter.dispatch(
                    request, operation_id=op, attempt_id=first, capture=capture
                )
            except AdapterError as err:
                return err

    return asyncio.run(go())


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _moment(value: object, key: str) -> _dt.datetime:
    assert isinstance(value, str), f"metrics.json {key} must be an ISO-8601 string: {value!r}"
    moment = _dt.datetime.fromisoformat(value)
    assert moment.tzinfo is not None, f"metrics.json {key} must carry its zone: {value!r}"
    return moment


def check_metrics(path: Path) -> dict[str, Any]:
    """``metrics.json`` has ``METRICS_KEYS`` with their documented types, in order, then
    at most the keys the engine and ``backstay run`` add (``METRICS_EXTRA_KEYS``)."""
    assert path.is_file(), f"no {METRICS_FILE} in {path.parent}"
    metrics = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(metrics, dict), f"{path} must hold a JSON object"
    keys = list(metrics)
    assert keys[: len(METRICS_KEYS)] == list(METRICS_KEYS), f"{path} keys: {keys}"
    extra = keys[len(METRICS_KEYS) :]
    assert set(extra) <= set(METRICS_EXTRA_KEYS), f"{path} keys: {keys}"
    for key in ("tokens_input", "tokens_output", "tokens_total", "api_calls"):
        assert _is_int(metrics[key]), f"{path}: {key} must be an integer: {metrics[key]!r}"
        assert metrics[key] >= 0, f"{path}: {key} must be >= 0: {metrics[key]!r}"
    assert metrics["tokens_total"] == metrics["tokens_input"] + metrics["tokens_output"], (
        f"{path}: tokens_total must be tokens_input + tokens_output"
    )
    cost = metrics["cost_usd"]
    assert cost is None or (_is_number(cost) and cost >= 0), f"{path}: cost_usd: {cost!r}"
    duration = metrics["duration_seconds"]
    assert _is_number(duration), f"{path}: duration_seconds must be a number: {duration!r}"
    assert duration >= 0, f"{path}: duration_seconds must be >= 0: {duration!r}"
    assert _is_int(metrics["exit_code"]), f"{path}: exit_code must be an integer"
    error = metrics["error"]
    assert error is None or isinstance(error, str), f"{path}: error must be a string or null"
    started = _moment(metrics["started_at"], "started_at")
    ended = _moment(metrics["ended_at"], "ended_at")
    assert ended >= started, f"{path}: ended_at is before started_at"
    return metrics


def check_attempt_files(output_dir: Path) -> dict[str, Any]:
    """The three logs exist (UTF-8; ``agent.log`` says something) and ``metrics.json``
    is well formed; returns the metrics."""
    for stream in Stream:
        path = output_dir / stream.file_name
        assert path.is_file(), f"no {stream.file_name} in {output_dir}"
        text = path.read_text(encoding="utf-8")
        if stream is Stream.AGENT:
            assert text.strip(), f"{path} is empty: the adapter must log what it did"
    return check_metrics(output_dir / METRICS_FILE)
