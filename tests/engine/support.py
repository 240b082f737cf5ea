"""Shared helpers of the engine tests: the scripted adapter as they use it, specs, engines."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

from backstay import testing
from backstay.adapters.contract import Adapter, AgentResult
from backstay.adapters.usage import Usage
from backstay.engine import Engine, TaskSpec
from backstay.failure import Failure
from backstay.idempotency.ids import parse_operation_id
from backstay.policy.retry import RetryPolicy
from backstay.testing import FakeClock, ScriptedCall

WALL: Final = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
# Fast and deterministic: three retries from 1 s, doubling, no jitter.
QUICK: Final = RetryPolicy(
    name="quick", max_attempts=4, initial_delay_s=1.0, max_delay_s=8.0, jitter=0.0
)
OK: Final = Usage(input_tokens=100, output_tokens=20, cost_usd=0.01, api_calls=1)

# What a scripted attempt does: succeed with this usage, fail with this Failure, or raise;
# or return this result (a failed one fails, with its usage).
Step = Usage | Failure | Exception | AgentResult
Call = ScriptedCall


class ScriptedAdapter(testing.ScriptedAdapter):
    """The public scripted adapter as the engine tests use it: named ``fake``, scripts by
    task id (tasks without one succeed), failures leave a partial answer, and scripted
    exceptions escape as they are (an adapter outside the contract, which the engine must
    survive)."""

    name: ClassVar[str] = "fake"

    def __init__(
        self,
        script: Mapping[str, Sequence[Step]] | None = None,
        *,
        hold_s: float = 0.0,
        on_dispatch: Callable[[Call], None] | None = None,
    ) -> None:
        super().__init__(
            dict(script or {}),
            hold_s=hold_s,
            on_dispatch=on_dispatch,
            partial_output="partial answer",
            raw_exceptions=True,
        )

    def calls_of(self, task_id: str) -> list[Call]:
        return [c for c in self.calls if parse_operation_id(c.operation_id).task_id == task_id]


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
