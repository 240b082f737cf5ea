"""Checks every framework adapter's own tests run, beyond the contract suite: approvals
become durable escalations that ``resume`` picks up (the framework continuing from its
checkpoint), an interrupted run resumes, a rate limit is retried once by backstay and not
by the framework, a suite task's ``module:function`` factory is honoured (and anything
else is a config error), and the framework's example runs.

``make`` is ``make(base_url) -> FrameworkAdapter``: the fake provider's OpenAI base URL;
``make_agent`` is the module's suite-task factory, ``make_agent(config)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Reply, Scenario, ToolCall
from backstay.runtime import (
    ApprovalStatus,
    FrameworkAdapter,
    RunRecord,
    RunStatus,
    Runtime,
    RuntimeSettings,
    ToolPolicy,
)
from backstay.runtime.builtin_tools import workspace_tools
from backstay.store.sqlite.runs import SQLiteRunStore

Make = Callable[[str], FrameworkAdapter]
MakeAgent = Callable[[dict[str, Any]], Any]
EXAMPLES: Final = Path(__file__).resolve().parents[2] / "examples"
TENANT: Final = "acme"
WRITE = ToolCall(name="write_file", arguments={"path": "notes.txt", "content": "hello"})
APPROVAL = RuntimeSettings(
    tools=ToolPolicy(allowed={"write_file", "read_file"}, approval={"write_file"})
)


def _runtime(make: Make, fake: FakeProvider, workspace: Path, state: Path) -> Runtime:
    return Runtime(
        make(fake.url + "/v1"),
        tools=workspace_tools(workspace),
        settings=APPROVAL,
        store=SQLiteRunStore(state / "state.sqlite"),
    )


def _run(runtime: Runtime, input: Any, **kwargs: Any) -> RunRecord:
    async def go() -> RunRecord:
        async with asyncio.timeout(60):
            return await runtime.run(input, tenant=TENANT, **kwargs)

    return asyncio.run(go())


def _resume(runtime: Runtime, run_id: str) -> RunRecord:
    async def go() -> RunRecord:
        async with asyncio.timeout(60):
            return await runtime.resume(run_id, tenant=TENANT)

    return asyncio.run(go())


def approval_pauses_then_resume_continues(
    make: Make, tmp_path: Path, decision: ApprovalStatus
) -> tuple[RunRecord, RunRecord, int, Path]:
    """Run until the approval pauses it, decide, resume with a NEW runtime and adapter
    (another process would do the same): both records, the provider's request count and
    the file the tool would write."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeProvider(Scenario(reply=Reply(tool_call=WRITE, text="Saved."))) as fake:
        first = _run(_runtime(make, fake, workspace, tmp_path), "save a note")
        store = SQLiteRunStore(tmp_path / "state.sqlite")
        (pending,) = store.approvals(TENANT)
        assert pending.tool == "write_file"
        assert not (workspace / "notes.txt").exists()
        store.decide(TENANT, pending.id, decision)
        second = _resume(_runtime(make, fake, workspace, tmp_path), first.run_id)
        return first, second, fake.stats().requests, workspace / "notes.txt"


def check_approval_then_resume(make: Make, tmp_path: Path, *, requests_in_all: int = 2) -> None:
    first, second, requests, written = approval_pauses_then_resume_continues(
        make, tmp_path, ApprovalStatus.APPROVED
    )
    assert first.status is RunStatus.PAUSED
    assert first.failure is not None
    assert first.failure.code == "ERR_APPROVAL_REQUIRED"
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert written.read_text() == "hello"
    # The tool call made before the pause is not asked of the model again: one request
    # for the tool call, one for the answer after the tool's result (AutoGen asks again).
    assert requests == requests_in_all
    assert second.results[-1].output["tool_calls"] >= 1


def check_rejection_then_resume(make: Make, tmp_path: Path) -> None:
    _, second, _, written = approval_pauses_then_resume_continues(
        make, tmp_path, ApprovalStatus.REJECTED
    )
    assert second.status is RunStatus.SUCCEEDED, second.failure
    assert not written.exists()


def check_interrupted_run_resumes(make: Make, tmp_path: Path) -> None:
    """A run cut off mid-step (its process stopped while the model hangs) is left
    ``running`` with nothing lost; ``resume`` finishes it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hang = Scenario(faults=(Fault(kind=FaultKind.HANG),), reply=Reply(text="Done."))

    async def cut_off(runtime: Runtime) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.5):
                await runtime.run("summarise", tenant=TENANT, run_id="r-1")

    with FakeProvider(hang) as fake:
        asyncio.run(cut_off(_runtime(make, fake, workspace, tmp_path)))
    store = SQLiteRunStore(tmp_path / "state.sqlite")
    left = store.load_run(TENANT, "r-1")
    assert left is not None
    assert left.status is RunStatus.RUNNING
    with FakeProvider(Scenario(reply=Reply(text="Done."))) as fake:
        resumed = _resume(_runtime(make, fake, workspace, tmp_path), "r-1")
    assert resumed.status is RunStatus.SUCCEEDED, resumed.failure
    assert resumed.results[-1].output["answer"] == "Done."


def check_rate_limit_retried_by_backstay_only(make: Make, tmp_path: Path) -> None:
    """A 429 is retried by the model gate after its Retry-After, once: the framework
    and its SDK do not retry it themselves (two requests in all)."""
    scenario = Scenario(
        faults=(Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=0.05),),
        reply=Reply(text="Fine."),
    )
    with FakeProvider(scenario) as fake:
        record = _run(_runtime(make, fake, tmp_path, tmp_path), "hello")
        assert record.status is RunStatus.SUCCEEDED, record.failure
        assert fake.stats().requests == 2
        assert fake.stats().by_fault == {"rate_limit": 1}
    assert record.usage.api_calls == 2


def check_make_agent_reads_the_config(
    make_agent: MakeAgent, example: Path, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``agent`` (``module:function`` of the example) and the key ``api_key_env`` names."""
    monkeypatch.syspath_prepend(str(example))
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    with FakeProvider(Scenario(reply=Reply(text="Hello."))) as fake:
        adapter = make_agent(
            {"agent": agent, "base_url": fake.url + "/v1", "api_key_env": "MY_KEY"}
        )
        settings = RuntimeSettings(tools=ToolPolicy(allowed={"write_file"}))
        record = asyncio.run(Runtime(adapter, settings=settings).run("hello"))
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert record.results[0].output == {"answer": "Hello.", "tool_calls": 0}
    assert adapter.settings.api_key == "sk-from-env"


def check_agent_not_module_function_is_a_config_error(make_agent: MakeAgent) -> None:
    with pytest.raises(ConfigError, match=r"config\.agent"):
        make_agent({"agent": "no_colon_here"})
    with pytest.raises(ConfigError, match="has no function"):
        make_agent({"agent": "json:no_such_function"})


def check_example_runs(example: Path, tmp_path: Path) -> None:
    """``run.py`` pauses on its approval, resumes and writes the note."""
    done = subprocess.run(
        [sys.executable, str(example / "run.py"), "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "paused" in done.stdout
    assert "succeeded" in done.stdout
    assert (tmp_path / "workspace" / "note.txt").read_text() == "hi"
