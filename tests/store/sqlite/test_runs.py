"""A checkpoint in SQLite: a half-done run resumes after its last successful step."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from tests.runtime.support import ScriptedFramework, model_reply

from backstay.runtime import RunStatus, Runtime
from backstay.store.sqlite.runs import SQLiteRunStore


def test_resume_continues_an_interrupted_run_after_its_successful_steps(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    framework = ScriptedFramework({"a": model_reply("x")})
    with SQLiteRunStore(path) as store:
        done = asyncio.run(
            Runtime(framework, store=store).run({"actions": ["a", "a", "a"]}, tenant="t")
        )
        assert done.status is RunStatus.SUCCEEDED
        # As if the process died after the first step: running, one result kept.
        store.save_run(
            dataclasses.replace(done, status=RunStatus.RUNNING, results=done.results[:1])
        )
    framework.executed.clear()
    with SQLiteRunStore(path) as store:
        resumed = asyncio.run(Runtime(framework, store=store).resume(done.run_id, tenant="t"))
    assert resumed.status is RunStatus.SUCCEEDED
    assert framework.executed == ["s1", "s2"]
    assert len(resumed.results) == 3


def test_a_finished_run_is_returned_as_it_is_by_resume(tmp_path: Path) -> None:
    framework = ScriptedFramework({"a": model_reply("x")})
    with SQLiteRunStore(tmp_path / "state.sqlite") as store:
        runtime = Runtime(framework, store=store)
        done = asyncio.run(runtime.run({"actions": ["a"]}))
        framework.executed.clear()
        again = asyncio.run(runtime.resume(done.run_id))
    assert again == done
    assert framework.executed == []
