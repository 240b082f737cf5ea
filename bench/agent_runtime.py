"""Agent runtime overhead: what backstay adds to each step of a framework agent, and the
memory of many concurrent sessions.

A step here is what a framework adapter's step does under the runtime: one model call
through the model gate (classify → limiter → breaker → policy driver, limits checked
before and after) and one tool call through the tool gate (allowlist, loop check, limits),
with the step's events, its validation against a schema and its checkpoint written to a
``SQLiteRunStore`` (WAL) after it. The model and the tool are in-process functions that
answer at once, so what is measured is backstay, not a model: the overhead per step is
(runtime time − the same calls made bare) / steps. Target: ≤ 1 ms per step.

Memory: 100 sessions run at once (asyncio), each a run of several steps with session
memory, against one SQLite store; the peak of Python allocations (tracemalloc) during the
whole batch, divided by the sessions, against the spec's bound of 512 MB per session.

No peer is measured here: the frameworks' own loops are not installed in this
environment; the figures are set against the targets.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Final

from backstay.adapters.usage import Usage
from backstay.runtime import (
    ExecutionContext,
    ExecutionLimits,
    Plan,
    Runtime,
    RuntimeSettings,
    Step,
    StepResult,
    StepStatus,
    Tool,
    ToolGate,
    ToolPolicy,
    ValidationResult,
)
from backstay.runtime.schema_check import check_output
from backstay.store.sqlite.runs import SQLiteRunStore

STEPS: Final = 50
RUNS: Final = 20
REPEAT: Final = 3
SESSIONS: Final = 100
SESSION_STEPS: Final = 5
TARGET_MS_PER_STEP: Final = 1.0
BOUND_MB_PER_SESSION: Final = 512.0
SCHEMA: Final = {"type": "object", "required": ["answer"]}
_USAGE: Final = Usage(input_tokens=20, output_tokens=10)


async def _model(prompt: str) -> dict[str, Any]:
    return {"text": f"answer to {prompt}"}


def _tool(n: int) -> dict[str, int]:
    return {"n": n}


class BenchFramework:
    """One model call and one tool call per step, as a framework adapter makes them."""

    name = "bench"

    async def plan(self, input: Any, context: ExecutionContext) -> Plan:
        steps = tuple(
            Step(id=f"s{i}", action="work", parameters={"n": i}) for i in range(int(input))
        )
        return Plan(id="bench", steps=steps, max_steps=len(steps))

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        n = int(step.parameters["n"])
        reply = await context.model.acall(_model, f"step {n}", usage_of=lambda _: _USAGE)
        value = await tools.invoke("lookup", {"n": n})
        context.memory.store("assistant", reply["text"])
        return StepResult(
            step_id=step.id, status=StepStatus.SUCCESS, output={"answer": reply["text"], **value}
        )

    def validate(self, output: Any, schema: Any) -> ValidationResult:
        return check_output(output, schema)


def _runtime(store: SQLiteRunStore, steps: int) -> Runtime:
    settings = RuntimeSettings(
        limits=ExecutionLimits(max_steps=steps, max_tokens=10_000_000, max_tool_calls=steps),
        tools=ToolPolicy(allowed={"lookup"}),
        schema=SCHEMA,
    )
    return Runtime(
        BenchFramework(), tools=[Tool(name="lookup", fn=_tool)], settings=settings, store=store
    )


async def _bare(steps: int) -> None:
    for n in range(steps):
        reply = await _model(f"step {n}")
        _tool(n)
        check_output({"answer": reply["text"]}, SCHEMA)


def _per_step_ms(folder: Path) -> tuple[float, float]:
    """Best of ``REPEAT``: (runtime ms per step, bare ms per step)."""
    best_rt = best_bare = float("inf")
    for r in range(REPEAT):
        with SQLiteRunStore(folder / f"state{r}.sqlite") as store:
            runtime = _runtime(store, STEPS)
            started = time.perf_counter()
            for i in range(RUNS):
                record = asyncio.run(runtime.run(STEPS, run_id=f"r{r}-{i}"))
                assert record.status == "succeeded", record.failure
            best_rt = min(best_rt, (time.perf_counter() - started) / (RUNS * STEPS) * 1e3)
        started = time.perf_counter()
        for _ in range(RUNS):
            asyncio.run(_bare(STEPS))
        best_bare = min(best_bare, (time.perf_counter() - started) / (RUNS * STEPS) * 1e3)
    return best_rt, best_bare


def _peak_mb(folder: Path) -> float:
    with SQLiteRunStore(folder / "sessions.sqlite") as store:
        runtime = _runtime(store, SESSION_STEPS)

        async def batch() -> None:
            records = await asyncio.gather(
                *(
                    runtime.run(SESSION_STEPS, tenant=f"t{i % 10}", session_id=f"s{i}")
                    for i in range(SESSIONS)
                )
            )
            assert all(r.status == "succeeded" for r in records)

        tracemalloc.start()
        try:
            asyncio.run(batch())
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return peak / 1e6


def report() -> None:
    """Print the agent runtime section."""
    print(
        f"\n== Agent runtime (in-process model and tool, SQLite run store; "
        f"{RUNS} runs × {STEPS} steps, best of {REPEAT}) =="
    )
    with tempfile.TemporaryDirectory() as tmp:
        runtime_ms, bare_ms = _per_step_ms(Path(tmp))
        overhead = runtime_ms - bare_ms
        verdict = "met" if overhead <= TARGET_MS_PER_STEP else "missed"
        print(f"  {'per step, under the runtime':<44} {runtime_ms:8.3f} ms")
        print(f"  {'per step, the same calls bare':<44} {bare_ms:8.3f} ms")
        print(
            f"  {'backstay overhead per step':<44} {overhead:8.3f} ms   "
            f"target ≤ {TARGET_MS_PER_STEP:g} ms: {verdict} "
            f"({overhead / TARGET_MS_PER_STEP:.2f}x the target)"
        )
        peak = _peak_mb(Path(tmp))
        per_session = peak / SESSIONS
        print(
            f"  {f'peak memory, {SESSIONS} concurrent sessions':<44} {peak:8.1f} MB   "
            f"{per_session:.3f} MB per session (bound {BOUND_MB_PER_SESSION:g} MB: "
            f"{per_session / BOUND_MB_PER_SESSION:.5f}x)"
        )


if __name__ == "__main__":
    report()
