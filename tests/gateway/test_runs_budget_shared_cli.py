"""End to end, ``slow``: ``backstay batch --gateway URL`` of the real Claude Code, in a
private network namespace, through a shared ``backstay gateway --agent-runs`` process,
with a task's token budget of half what its session uses: the shared gateway holds each
request against the batch's spend ledger (``--store`` on the batch's own state directory)
or, without a store, against the allowance the batch gave the run; the session is stopped
part way in its one CLI start, and the task ends ``paused`` with ``budget_exceeded`` — as
through the gateway the batch starts in process (``tests/gateway/test_runs_budget.py``)."""

from __future__ import annotations

import os
import selectors
import subprocess
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.cli_provider import BACKSTAY, BASE_ENV, Providers
from tests.adapters.support import CANARY_KEY
from tests.gateway.test_runs_budget import (
    TIMEOUT_S,
    _session,
    _stopped_part_way,
    _suite,
    providers,
    session_tokens,
)

from backstay.engine.records import AttemptOutcome
from backstay.engine.states import TaskState
from backstay.store.sqlite.tasks import SQLiteTaskStore

__all__ = ["providers", "session_tokens"]  # the fixtures, shared with test_runs_budget

GATEWAY_TOKEN: Final = "shared-gateway-budget-token-for-cli-0123"
PORT: Final = 8793


@pytest.mark.slow
@pytest.mark.parametrize("stored", [True, False], ids=["store", "allowance"])
def test_claude_code_through_a_shared_gateway_is_stopped_at_its_token_budget(
    providers: Providers, tmp_path: Path, session_tokens: int, stored: bool
) -> None:
    served = providers.serve(_session())
    state = tmp_path / "state"
    state.mkdir()
    store = ["--store", str(state)] if stored else []
    gateway = providers.namespace.popen(
        [*BACKSTAY, "gateway", "--agent-runs", "--port", str(PORT), *store],
        env={**BASE_ENV, "BACKSTAY_GATEWAY_TOKEN": GATEWAY_TOKEN},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert gateway.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(gateway.stdout, selectors.EVENT_READ)
            assert selector.select(60.0), "the shared gateway did not start"
        assert "gateway listening" in gateway.stdout.readline()
        env = {
            **BASE_ENV,
            "HOME": os.environ.get("HOME", "/root"),
            "ANTHROPIC_API_KEY": CANARY_KEY,
            "ANTHROPIC_BASE_URL": served.url,
            "BACKSTAY_GATEWAY_TOKEN": GATEWAY_TOKEN,
        }
        argv = [*BACKSTAY, "batch", str(_suite(tmp_path, session_tokens // 2))]
        argv += ["--state-dir", str(state), "--gateway", f"http://127.0.0.1:{PORT}"]
        done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 120, env=env, cwd=tmp_path)
        stats = served.stats()
    finally:
        gateway.terminate()
        _, gateway_err = gateway.communicate(timeout=30)
    with SQLiteTaskStore(state) as store:
        (task,) = store.tasks()
        attempts = store.attempts()
    assert task.state is TaskState.PAUSED, (task, done.stderr, gateway_err)
    assert task.reason.startswith("budget_exceeded: the task "), task.reason
    assert "token budget" in task.reason, task.reason
    (attempt,) = attempts
    assert attempt.outcome is AttemptOutcome.FAILED
    assert attempt.failure is not None
    assert attempt.failure.code == "ERR_LIMIT_BUDGET"
    _stopped_part_way(stats, session_tokens)
    assert CANARY_KEY not in done.stdout + done.stderr + gateway_err
