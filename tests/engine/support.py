"""Shared helpers of the engine tests: an in-process scripted adapter, specs, engines."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult, AgentStatus
from backstay.adapters.usage import Usage
from backstay.engine import Engine, TaskSpec
from backstay.errors import AdapterError
from backstay.failure import Failure
from backstay.idempotency.ids import parse_operation_id
from backstay.policy.retry import RetryPolicy
from backstay.testing import FakeClock

WALL: Final = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
# Fast and deterministic: three retries from 1 s, doubling, no jitter.
QUICK: Final = RetryPolicy(
    name="quick", max_attempts=4, initial_delay_s=1.0, max_delay_s=8.0, jitter=0.0
)
OK: Final = Usage(input_tokens=100, output_tokens=20, cost_usd=0.01, api_calls=1)

# What a scripted attempt does: succeed with this usage, fail with this Failure, or raise.
Step = Usage | Failure | Exception


@dataclasses.dataclass(frozen=True, slots=True)
class Call:
    operation_id: str
    attempt_id: str
    output_dir: Path


class ScriptedAdapter:
    """An in-process adapter acting out a script per task id (the last step repeats;
    tasks without a script succeed). ``on_dispatch`` runs at the start of each dispatch;
    ``hold_s`` keeps each dispatch busy that long (real time) to observe concurrency."""

    name: ClassVar[str] = "fake"

    def __init__(
        self,
        script: Mapping[str, Sequence[Step]] | None = None,
        *,
        hold_s: float = 0.0,
        on_dispatch: Callable[[Call], None] | None = None,
    ) -> None:
        self.script = dict(script or {})
        self.hold_s = hold_s
        self.on_dispatch = on_dispatch
        self.calls: list[Call] = []
        self.active = 0
        self.max_active = 0

    def calls_of(self, task_id: str) -> list[Call]:
        return [c for c in self.calls if parse_operation_id(c.operation_id).task_id == task_id]

    async def dispatch(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        call = Call(operation_id, attempt_id, request.output_dir)
        task_id = parse_operation_id(operation_id).task_id
        steps = self.script.get(task_id, [OK])
        step = steps[min(len(self.calls_of(task_id)), len(steps) - 1)]
        self.calls.append(call)
        if self.on_dispatch is not None:
            self.on_dispatch(call)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.hold_s:
                await asyncio.sleep(self.hold_s)
        finally:
            self.active -= 1
        if isinstance(step, Failure):
            raise AdapterError(step, partial_output="partial answer")
        if isinstance(step, Exception):
            raise step
        capture.add_usage(step)
        return AgentResult(status=AgentStatus.SUCCEEDED, output=f"done {task_id}", usage=step)

    def validate_config(self, config: Mapping[str, Any]) -> None:
        return None

    def classify_failure(
        self, *, output: str = "", exit_code: int | None = None, error: BaseException | None = None
    ) -> Failure | None:
        return None


def spec(workspace: Path, task_id: str = "t1", **changes: Any) -> TaskSpec:
    fields: dict[str, Any] = {
        "workflow_id": "wf",
        "task_id": task_id,
        "adapter": "fake",
        "model": "m",
        "workspace": workspace,
        "timeout_s": 30.0,
        "prompt": "do the task",
        "policy": QUICK,
    }
    fields.update(changes)
    return TaskSpec(**fields)


def clock() -> FakeClock:
    return FakeClock(wall=WALL)


def engine(
    state_dir: Path,
    adapter: Adapter,
    *,
    fake: FakeClock | None = None,
    env: Mapping[str, str] | None = None,
    **kw: Any,
) -> Engine:
    """An engine over ``state_dir`` with ``adapter`` and a fake clock; secrets of resumed
    tasks come from ``env`` (none by default), never from this process's environment."""
    return Engine(
        state_dir, adapters={adapter.name: adapter}, clock=fake or clock(), env=env or {}, **kw
    )
