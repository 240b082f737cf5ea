"""Run the Pydantic-AI agent of ``agent.py`` under backstay, against the fake provider.

    python examples/pydantic-ai/run.py [--base-url URL] [--state-dir DIR]

Without ``--base-url`` a fake provider is started here, scripted to answer with a
``write_file`` tool call. ``write_file`` needs a human's approval: the run pauses with a
durable approval request; this script approves it (as ``backstay`` would after a person
decides) and resumes the run, which continues the agent from its message history.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path

from backstay.fakeprovider import FakeProvider, Reply, Scenario, ToolCall
from backstay.frameworks.pydantic_ai import PydanticAIAdapter
from backstay.runtime import (
    ApprovalStatus,
    ExecutionLimits,
    Runtime,
    RuntimeSettings,
    ToolPolicy,
)
from backstay.runtime.builtin_tools import workspace_tools
from backstay.runtime.store_sqlite import SQLiteRunStore

HERE = Path(__file__).resolve().parent
SCENARIO = Scenario(
    reply=Reply(
        text="Saved the note.",
        tool_call=ToolCall(name="write_file", arguments={"path": "note.txt", "content": "hi"}),
    )
)


async def main(base_url: str, state_dir: Path) -> int:
    workspace = state_dir / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    store = SQLiteRunStore(state_dir / "state.sqlite")
    runtime = Runtime(
        PydanticAIAdapter(agent="pai_agent:build", base_url=base_url, api_key="test-key"),
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url")
    parser.add_argument("--state-dir", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    with contextlib.ExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            base_url = stack.enter_context(FakeProvider(SCENARIO)).url + "/v1"
        state_dir = args.state_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sys.exit(asyncio.run(main(base_url, state_dir)))
