"""A suite task of the agent runtime's reference agent against the fake provider, as the
engine runs it: shared by the engine-adapter and the approvals CLI tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backstay.engine import TaskSpec
from backstay.policy.retry import RetryPolicy

ONCE = RetryPolicy(name="once", max_attempts=1)


def reference_agent_task(workspace: Path, url: str, *, key: str, **config: Any) -> TaskSpec:
    """The task "notes" of workflow "wf": the reference agent (``make_agent``) with its
    model at ``url``, the key ``key`` in ``ANTHROPIC_API_KEY``, one attempt; ``config``
    adds to (or overrides) its adapter settings."""
    return TaskSpec(
        workflow_id="wf",
        task_id="notes",
        adapter="agent-runtime",
        model="claude-sonnet-4-6",
        workspace=workspace,
        timeout_s=60,
        prompt="Write the notes.",
        env={"ANTHROPIC_API_KEY": key},
        config={
            "agent": "backstay.runtime.reference:make_agent",
            "options": {"base_url": url},
            "api_key_env": "ANTHROPIC_API_KEY",
            **config,
        },
        policy=ONCE,
    )
