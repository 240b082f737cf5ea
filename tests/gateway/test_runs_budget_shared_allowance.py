"""Spending budgets per request through a shared gateway process WITHOUT a store
(``backstay gateway --agent-runs``, no ``--store``): the batch gives the run an allowance
(the least room of its task's budgets at the attempt's start, reserved in the batch's
SQLite state as the attempt's reservation), the gateway keeps the run's spend in memory
against it, and refuses the request with no room with a 400 naming the budget; the task
is paused ``budget_exceeded`` and the attempt settled at what the provider's answers used.

A real ``Engine`` on a SQLite state directory with ``--gateway URL``'s wiring
(``agent_gateway(url=…)``); the attempt's agent is the official anthropic SDK, sending
messages with the run token the attempt was given until one is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest
from tests.adapters.support import CANARY_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL
from tests.gateway.test_runs_budget_shared import (
    GATEWAY_TOKEN,
    SdkAgent,
    _start,
    send_until_refused,
)

from backstay.adapters.contract import AgentRequest
from backstay.cli._gateway_runs import agent_gateway
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.engine.records import AttemptOutcome
from backstay.failure import Failure
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import BATCH_SCOPE, ScopeKind, SpendBudget, SpendScope
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import SQLiteTaskStore

# About 500 prompt tokens a message: three fit in the task's budget, the fourth does not.
BUDGET_TOKENS: Final = 2_000
MAX_MESSAGES: Final = 20
ONE_ATTEMPT: Final = RetryPolicy(name="once", max_attempts=1)


class _SdkAgent(SdkAgent):
    """The anthropic SDK sending one long message after another with the run's token,
    until one is refused; what the store held for the batch while it ran."""

    def __init__(self, state: Path) -> None:
        super().__init__()
        self.state = state
        self.statuses: list[int] = []
        self.message = ""
        self.reserved_while_running = -1

    def session(self, request: AgentRequest, operation_id: str) -> Failure | None:
        ledger = SQLiteSpendLedger(self.state)
        try:
            self.reserved_while_running = ledger.totals(BATCH_SCOPE).reserved.tokens
        finally:
            ledger.close()
        failure, self.message = send_until_refused(request, MAX_MESSAGES, self.statuses)
        return failure


def _provider_tokens(log: Path) -> int:
    """The tokens the provider's answers reported, from its request log."""
    lines = log.read_text(encoding="utf-8").splitlines()
    entries = [e for e in map(json.loads, lines) if e["path"] == "/v1/messages"]
    return sum(int(e["input_tokens"]) + int(e["output_tokens"]) for e in entries)


def test_a_shared_gateway_without_a_store_holds_a_run_to_its_allowance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    monkeypatch.setenv("BACKSTAY_GATEWAY_TOKEN", GATEWAY_TOKEN)
    agent = _SdkAgent(state)
    env = {"ANTHROPIC_API_KEY": CANARY_KEY}
    spec = TaskSpec(
        workflow_id="allowance",
        task_id="one",
        adapter="claude-code",
        model=ANTHROPIC_MODEL,
        workspace=tmp_path,
        timeout_s=120.0,
        prompt="hi",
        env=env,
        policy=ONE_ATTEMPT,
        budget=SpendBudget(tokens=BUDGET_TOKENS),
    )
    with FakeProvider(Scenario(), log_path=log) as fake:
        process, url = _start(fake.url, None)
        try:
            with (
                agent_gateway(["claude-code"], url=url),
                Engine(state, adapters={"claude-code": agent}, env=env, breaker=None) as engine,
            ):
                engine.run_sync([spec])
            requests = fake.stats().requests
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=30)
    # The messages the allowance held were answered; the next was refused unsent.
    statuses = agent.statuses
    assert statuses[-1] == 400, statuses
    assert set(statuses[:-1]) == {200}, statuses
    assert requests == len(statuses) - 1 >= 1
    assert f"budget_exceeded: the task {spec.operation_id} token budget 2000" in agent.message
    assert "task one stops here and is paused" in agent.message
    with SQLiteTaskStore(state) as store:
        (task,) = store.tasks()
        (attempt,) = store.attempts()
    assert task.state is TaskState.PAUSED, task
    assert task.reason.startswith(f"budget_exceeded: the task {spec.operation_id} token budget")
    assert attempt.outcome is AttemptOutcome.FAILED
    assert attempt.failure is not None
    assert attempt.failure.code == "ERR_LIMIT_BUDGET"
    # The attempt was settled at what the provider's answers used: the allowance is let go.
    ledger = SQLiteSpendLedger(state)
    try:
        scope = SpendScope(kind=ScopeKind.TASK, name=spec.operation_id)
        totals = ledger.totals(scope, spec.budget)
    finally:
        ledger.close()
    used = _provider_tokens(log)
    assert totals.spent.tokens == used > 0
    assert totals.reserved.tokens == 0
    # While the run went on, the batch's store held the task's whole room for it (its
    # allowance), not the attempt's estimate: no other task could have taken it.
    assert agent.reserved_while_running == BUDGET_TOKENS
    # One message at a time, each prompt held before it was sent: within the budget.
    assert used <= BUDGET_TOKENS
    assert CANARY_KEY not in stderr
    assert "Traceback" not in stderr
