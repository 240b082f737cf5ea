"""A harness run's spending budget (``backstay run --budget-tokens --gateway URL``,
``BaseAdapter.run(budget=…)`` under ``agent_gateway(url=…)``) held per request by a shared
``backstay gateway --agent-runs`` process.

Without ``--store`` the run is registered with its budget as its allowance (the whole room
left: a run is one task), so the gateway refuses the request with no room with a 400 naming
the budget, unsent; the run ends at its budget (``ERR_BUDGET_EXCEEDED``, exit code 5), as
through the in-process gateway. A gateway with ``--store`` keeps that store's spend ledger,
which holds no run: it is not given the run's budget (checked between attempts only).

The attempt's agent is the official anthropic SDK sending long messages with the run token
the attempt was given, until one is refused (at most ``MAX_MESSAGES``)."""

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
    store,
)

from backstay.adapters.contract import AgentRequest
from backstay.adapters.harness.run_budget import BUDGET_EXIT_CODE
from backstay.cli._gateway_runs import agent_gateway
from backstay.cli._gateway_spend import gateway_ledger
from backstay.failure import Failure
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.policy.spend import ScopeKind, Spend, SpendBudget
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores

__all__ = ["store"]  # the fixture, shared with test_runs_budget_shared

# About 500 prompt tokens a message: three fit in the run's budget, the fourth does not.
BUDGET_TOKENS: Final = 2_000
MAX_MESSAGES: Final = 8


class _SdkAgent(SdkAgent):
    """The anthropic SDK sending one long message after another with the run's token,
    until one is refused; how many times the attempt started."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[int] = []
        self.message = ""
        self.starts = 0

    def session(self, request: AgentRequest, operation_id: str) -> Failure | None:
        self.starts += 1
        assert request.env["ANTHROPIC_API_KEY"] != CANARY_KEY  # the run's token, never the key
        failure, self.message = send_until_refused(request, MAX_MESSAGES, self.statuses)
        return failure


def _run(tmp_path: Path, upstream: str, store: str | None) -> tuple[_SdkAgent, int, str]:
    """One harness run of ``_SdkAgent`` under the budget through a gateway process on
    ``store``: the agent, the run's exit code, and the gateway's stderr."""
    agent = _SdkAgent()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("hi", encoding="utf-8")
    (tmp_path / "workspace").mkdir()
    process, url = _start(upstream, store)
    try:
        with agent_gateway(["claude-code"], url=url, parallel=1):
            code = agent.run(
                ANTHROPIC_MODEL,
                prompt,
                tmp_path / "workspace",
                tmp_path / "out",
                {},
                60.0,
                env={"ANTHROPIC_API_KEY": CANARY_KEY},
                inherit_env=False,
                policy="none",
                budget=SpendBudget(tokens=BUDGET_TOKENS),
            )
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    return agent, code, stderr


def _provider_tokens(log: Path) -> int:
    """The tokens the provider's answers reported, from its request log."""
    lines = log.read_text(encoding="utf-8").splitlines()
    entries = [e for e in map(json.loads, lines) if e["path"] == "/v1/messages"]
    return sum(int(e["input_tokens"]) + int(e["output_tokens"]) for e in entries)


def _stopped_at_its_budget(
    tmp_path: Path, agent: _SdkAgent, code: int, *, requests: int, log: Path, stderr: str
) -> int:
    """The run was stopped by a refused request, unsent, and ended at its budget, having
    been charged what the provider's answers used (returned)."""
    # The messages the budget held were answered; the next was refused, never sent.
    statuses = agent.statuses
    assert agent.starts == 1
    assert statuses[-1] == 400, statuses
    assert set(statuses[:-1]) == {200}, statuses
    assert requests == len(statuses) - 1 >= 1
    assert f"budget_exceeded: the task run token budget {BUDGET_TOKENS}" in agent.message
    assert "the run stops here" in agent.message  # a run ends; no task is paused
    assert "paused" not in agent.message
    # The run ended at its budget, as through the in-process gateway.
    assert code == BUDGET_EXIT_CODE
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["error"].startswith("ERR_BUDGET_EXCEEDED: "), metrics
    assert "no room for the next request of attempt 1" in metrics["error"], metrics
    assert "the agent was stopped" in metrics["error"], metrics
    # Each prompt held before it was sent: the provider's answers within the budget, and
    # the run charged what they used.
    used = _provider_tokens(log)
    assert 0 < used <= BUDGET_TOKENS
    assert metrics["tokens_total"] == used
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*.*"))
    assert CANARY_KEY not in stderr + written
    assert "Traceback" not in stderr
    return used


def test_a_shared_gateway_without_a_store_holds_a_run_to_its_budget_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSTAY_GATEWAY_TOKEN", GATEWAY_TOKEN)
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(), log_path=log) as fake:
        agent, code, stderr = _run(tmp_path, fake.url, None)
        requests = fake.stats().requests
    _stopped_at_its_budget(tmp_path, agent, code, requests=requests, log=log, stderr=stderr)


def test_a_shared_gateway_on_a_store_holds_a_run_per_request_in_a_ledger_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: tuple[str, StoreLocation]
) -> None:
    # The run is registered in the gateway's ledger beside the store's (SQLite, or Redis):
    # each request reserved there and settled at what its answer reported.
    monkeypatch.setenv("BACKSTAY_GATEWAY_TOKEN", GATEWAY_TOKEN)
    text, location = store
    log = tmp_path / "requests.jsonl"
    with FakeProvider(Scenario(), log_path=log) as fake:
        agent, code, stderr = _run(tmp_path, fake.url, text)
        requests = fake.stats().requests
    used = _stopped_at_its_budget(tmp_path, agent, code, requests=requests, log=log, stderr=stderr)
    # Nothing recorded is lost: the ledger holds every answered request, settled; the
    # store's own (a batch's) holds none of it.
    bundle = open_stores(location, state_dir=tmp_path / "state")
    try:
        own = gateway_ledger(bundle)
        try:
            kept = own.overview()[0]
        finally:
            own.close()
        batch = bundle.spend.overview()[0]
    finally:
        bundle.close()
    assert kept.scope.kind is ScopeKind.BATCH
    assert kept.spent.tokens == used
    assert kept.reserved == Spend()
    assert batch.spent == batch.reserved == Spend()
