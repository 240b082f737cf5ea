"""The approval round trip the framework examples share, against the fake provider.

Each ``examples/<framework>/run.py`` passes a function building its adapter for a base
URL; this module starts a fake provider (unless ``--base-url`` is given) scripted to answer
with a ``write_file`` tool call, runs the agent under backstay until it pauses on the durable
approval request, approves it (as ``backstay`` would after a person decides), resumes the
run and prints what happened.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.runtime import (
    ApprovalStatus,
    ExecutionLimits,
    FrameworkAdapter,
    Runtime,
    RuntimeSettings,
    ToolPolicy,
)
from backstay.runtime.builtin_tools import workspace_tools
from backstay.store.sqlite.runs import SQLiteRunStore

SCENARIO = Scenario(
    reply=Reply(
        text="Saved the note.",
        tool_call=ToolCall(name="write_file", arguments={"path": "note.txt", "content": "hi"}),
    )
)

AdapterFactory = Callable[[str], FrameworkAdapter]


async def run_demo(adapter: FrameworkAdapter, state_dir: Path) -> int:
    """Run, approve the pending ``write_file``, resume; 0 when the resumed run succeeded."""
    workspace = state_dir / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    store = SQLiteRunStore(state_dir / "state.sqlite")
    runtime = Runtime(
        adapter,
        tools=workspace_tools(workspace),
        settings=RuntimeSettings(
            limits=ExecutionLimits(max_steps=5, max_tokens=20_000, wall_time_s=60),
            tools=ToolPolicy(allowed={"read_file", "write_file"}, approval={"write_file"}),
        ),
        store=store,
    )
    record = await runtime.run("Save a note saying hi.", tenant="demo")
    print(f"run {record.run_id}: {record.status}")
    for approval in store.approvals("demo"):
        print(f"approval {approval.id}: {approval.tool} {dict(approval.arguments)} -> approved")
        store.decide("demo", approval.id, ApprovalStatus.APPROVED)
    record = await runtime.resume(record.run_id, tenant="demo")
    print(f"run {record.run_id}: {record.status}")
    if record.failure is not None:
        print(f"failure: {record.failure.code}: {record.failure.message}")
        return 1
    print(f"answer: {record.results[-1].output['answer']}")
    print(f"note.txt: {(workspace / 'note.txt').read_text()}")
    return 0 if record.status == "succeeded" else 1


def main(example_dir: Path, build_adapter: AdapterFactory) -> int:
    """Parse ``[--base-url URL] [--state-dir DIR]`` and run the demo; the exit code."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url")
    parser.add_argument("--state-dir", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(example_dir))
    with contextlib.ExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            base_url = stack.enter_context(FakeProvider(SCENARIO)).url + "/v1"
        state_dir = args.state_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        return asyncio.run(run_demo(build_adapter(base_url), state_dir))
