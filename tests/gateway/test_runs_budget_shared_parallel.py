"""Parallel runs under one batch budget through a shared gateway process WITHOUT a store
(``backstay gateway --agent-runs``, no ``--store``): each run's allowance is a share of the
batch's room, not all of it, so the batch's three tasks run at once; each run's grant is
raised while it goes on (``run.allowance_raised``), the batch never spends past its budget
but for what each run's last request used beyond the estimate of its prompt held for it
(documented: only that is held), the request with no room left is
refused with a 400 and each task paused ``budget_exceeded``, and what the store settled
equals what the provider's answers reported.

A real ``Engine`` (concurrency 3) on a SQLite state directory with ``--gateway URL``'s
wiring (``agent_gateway(url=…, parallel=3)``); each attempt's agent is the official
anthropic SDK sending messages with its run token. After its first answer each agent
waits at a barrier for the other two (bounded): a run that held the whole batch budget
would keep the others from starting, and the barrier would break."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.adapters.support import CANARY_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL
from tests.gateway.test_runs_budget_shared import GATEWAY_TOKEN, SdkAgent, _create, _start
from tests.gateway.test_runs_budget_shared_allowance import ONE_ATTEMPT, _provider_tokens

from backstay.adapters.contract import AgentRequest
from backstay.cli._gateway_runs import agent_gateway
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.failure import Failure
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway.run_topups import RunAllowanceRaised
from backstay.policy.spend import BATCH_SCOPE, SpendBudget
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import SQLiteTaskStore
from backstay.testing import capture_events

TASKS: Final = 3
# About 520 tokens a message (a 500-token prompt and its answer): about eleven fit.
BATCH_TOKENS: Final = 6_000
MAX_MESSAGES: Final = 20
BARRIER_S: Final = 60.0
ESTIMATE: Final = re.compile(r"estimate (\d+)\)")


def _largest_answer(log: Path) -> int:
    """The most tokens one answer reported, from the provider's request log."""
    lines = log.read_text(encoding="utf-8").splitlines()
    entries = [e for e in map(json.loads, lines) if e["path"] == "/v1/messages"]
    return max(int(e["input_tokens"]) + int(e["output_tokens"]) for e in entries)


class _ParallelAgent(SdkAgent):
    """Claude Code's wiring to the gateway; each attempt is the anthropic SDK sending one
    long message after another with its run's token until one is refused, waiting after
    its first answer until every task's run has had one."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(TASKS, timeout=BARRIER_S)
        self.lock = threading.Lock()
        self.statuses: dict[str, list[int]] = {}
        self.messages: dict[str, str] = {}
        # (first answer's start, last request's end) of each run, on the monotonic clock.
        self.spans: dict[str, tuple[float, float]] = {}

    def session(self, request: AgentRequest, operation_id: str) -> Failure | None:
        base_url = request.config["base_url"]
        key = request.env["ANTHROPIC_API_KEY"]
        statuses: list[int] = []
        first = -1.0
        with anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0) as client:
            for _ in range(MAX_MESSAGES):
                started = time.monotonic()
                status, message = _create(client)
                statuses.append(status)
                if first < 0 and status == 200:
                    first = started
                    self.barrier.wait()  # all three runs are in flight now
                if status != 200:
                    break
        with self.lock:
            self.statuses[operation_id] = statuses
            self.messages[operation_id] = message
            self.spans[operation_id] = (first, time.monotonic())
        if statuses[-1] != 200:
            return Failure(code="ERR_HTTP_400_BAD_REQUEST", message=message)
        return None


def test_three_runs_share_one_batch_budget_at_once_through_a_gateway_without_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    monkeypatch.setenv("BACKSTAY_GATEWAY_TOKEN", GATEWAY_TOKEN)
    agent = _ParallelAgent()
    env = {"ANTHROPIC_API_KEY": CANARY_KEY}
    specs = [
        TaskSpec(
            workflow_id="parallel",
            task_id=f"t{i}",
            adapter="claude-code",
            model=ANTHROPIC_MODEL,
            workspace=tmp_path,
            timeout_s=120.0,
            prompt="hi",
            env=env,
            policy=ONE_ATTEMPT,
        )
        for i in range(TASKS)
    ]
    with FakeProvider(Scenario(), log_path=log) as fake:
        process, url = _start(fake.url, None)
        try:
            with (
                capture_events() as events,
                agent_gateway(["claude-code"], url=url, parallel=TASKS),
                Engine(
                    state,
                    adapters={"claude-code": agent},
                    env=env,
                    breaker=None,
                    concurrency=TASKS,
                    budget=SpendBudget(tokens=BATCH_TOKENS),
                ) as engine,
            ):
                engine.run_sync(specs)
            requests = fake.stats().requests
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=30)
    # All three runs were in flight at once: each had its first answer before any ended.
    assert len(agent.spans) == TASKS
    firsts = [first for first, _ in agent.spans.values()]
    assert min(firsts) > 0
    assert max(firsts) < min(end for _, end in agent.spans.values())
    # Each sent messages until one was refused unsent at the batch's budget.
    statuses = list(agent.statuses.values())
    assert all(s[-1] == 400 and set(s[:-1]) == {200} for s in statuses), statuses
    assert requests == sum(len(s) - 1 for s in statuses)
    for message in agent.messages.values():
        assert "budget_exceeded: the batch token budget 6000" in message, message
        assert "stops here and is paused" in message
    # The grants were raised while the runs went on.
    raised = [e for e in events if isinstance(e, RunAllowanceRaised)]
    assert raised, events.names
    assert {e.task for e in raised} <= {spec.operation_id for spec in specs}
    logged = (state / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum('"run.allowance_raised"' in line for line in logged) == len(raised)
    with SQLiteTaskStore(state) as store:
        tasks = store.tasks()
    assert [t.state for t in tasks] == [TaskState.PAUSED] * TASKS, tasks
    assert all(t.reason.startswith("budget_exceeded: the batch token budget") for t in tasks)
    # Settled at what the provider's answers reported, nothing left reserved, and within
    # the budget but for what each run's last request used beyond the estimate of its
    # prompt (held before it was sent; its output and a prompt counted higher are not).
    ledger = SQLiteSpendLedger(state)
    try:
        totals = ledger.totals(BATCH_SCOPE)
    finally:
        ledger.close()
    used = _provider_tokens(log)
    assert totals.spent.tokens == used > 0
    assert totals.reserved.tokens == 0
    held = max(int(m.group(1)) for m in map(ESTIMATE.search, agent.messages.values()) if m)
    assert used <= BATCH_TOKENS + TASKS * (_largest_answer(log) - held)
    assert CANARY_KEY not in stderr
    assert "Traceback" not in stderr
