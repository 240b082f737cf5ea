"""A run's plan is checkpointed redacted (its parameters hold the input, the prompt), in a
real SQLite file; the run itself goes on with the plan as made, and a resume given the
clear input runs the steps still to run with their parameters in the clear again."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

from tests.runtime.support import ScriptedFramework

from backstay.runtime import ExecutionContext, RunStatus, Runtime, Step, ToolGate
from backstay.store.sqlite.runs import SQLiteRunStore

EMAIL = "jane.canary@example.com"


def _input() -> dict[str, Any]:
    steps = [
        {"id": "first", "action": "note", "parameters": {"to": EMAIL}},
        {"id": "second", "action": "note", "parameters": {"to": EMAIL}, "depends_on": ["first"]},
    ]
    return {"steps": steps}


def _framework(seen: list[Any]) -> ScriptedFramework:
    async def note(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        seen.append(step.parameters["to"])
        return "ok"

    return ScriptedFramework({"note": note})


def _half_done(path: Path, seen: list[Any]) -> str:
    """A run whose process died after its first step (its checkpoint as stored)."""
    with SQLiteRunStore(path) as store:
        done = asyncio.run(Runtime(_framework(seen), store=store).run(_input(), tenant="t"))
        assert done.status is RunStatus.SUCCEEDED
        stored = store.load_run("t", done.run_id)
        assert stored is not None
        store.save_run(
            dataclasses.replace(stored, status=RunStatus.RUNNING, results=stored.results[:1])
        )
    return done.run_id


def test_the_plan_is_stored_redacted_and_the_run_uses_it_in_the_clear(tmp_path: Path) -> None:
    seen: list[Any] = []
    _half_done(tmp_path / "state.sqlite", seen)
    assert seen == [EMAIL, EMAIL]
    with sqlite3.connect(tmp_path / "state.sqlite") as conn:
        (plan,) = conn.execute("SELECT plan FROM agent_runs").fetchone()
    assert EMAIL not in plan
    assert "[EMAIL]" in plan


def test_a_resume_given_the_clear_input_runs_the_rest_in_the_clear(tmp_path: Path) -> None:
    seen: list[Any] = []
    run_id = _half_done(tmp_path / "state.sqlite", [])
    with SQLiteRunStore(tmp_path / "state.sqlite") as store:
        runtime = Runtime(_framework(seen), store=store)
        resumed = asyncio.run(runtime.resume(run_id, tenant="t", clear_input=_input()))
    assert resumed.status is RunStatus.SUCCEEDED
    assert seen == [EMAIL]
    with sqlite3.connect(tmp_path / "state.sqlite") as conn:
        (plan,) = conn.execute("SELECT plan FROM agent_runs").fetchone()
    assert EMAIL not in plan


def test_a_resume_without_the_clear_input_goes_on_with_the_checkpoint(tmp_path: Path) -> None:
    seen: list[Any] = []
    run_id = _half_done(tmp_path / "state.sqlite", [])
    with SQLiteRunStore(tmp_path / "state.sqlite") as store:
        resumed = asyncio.run(Runtime(_framework(seen), store=store).resume(run_id, tenant="t"))
    assert resumed.status is RunStatus.SUCCEEDED
    assert seen == ["[EMAIL]"]
