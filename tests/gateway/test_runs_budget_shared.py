"""Spending budgets per request through a shared gateway process (``backstay gateway
--agent-runs --store …``): a run opened over HTTP carries its task's budget scopes
(``AttemptBudget.shared``: no key), the gateway holds each of its requests against the
spend ledger of its store — the batch's SQLite state directory, or Redis — and refuses the
one with no room with a 400 in the provider's format naming the budget, as the in-process
gateway does; the refusal comes back with the run's tally, so the task's budget knows it.
Through the official anthropic SDK; the gateway is a real ``backstay gateway`` process."""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.adapters.support import CANARY_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL

from backstay.adapters.capture import Capture
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.adapters.usage import Usage
from backstay.clock import SYSTEM_CLOCK
from backstay.engine.budgets import BudgetGate
from backstay.engine.request_budget import AttemptBudget
from backstay.engine.task import TaskSpec
from backstay.failure import Failure
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway.run_admin import RemoteRunGateway
from backstay.policy.spend import BATCH_SCOPE, SpendBudget
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores

GATEWAY_TOKEN: Final = "shared-gateway-budget-token-0123456789"
MAIN: Final = "from backstay.cli import main; main()"
START_S: Final = 60.0
# About 500 prompt tokens a message (four characters a token).
LONG: Final = "Tell me about resilient systems. " * 60


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, StoreLocation]]:
    """The store's ``--store`` text and location: the batch's state directory, or Redis."""
    state = tmp_path / "state"
    state.mkdir()
    if request.param == "sqlite":
        yield str(state), StoreLocation.sqlite(state)
    else:
        location: StoreLocation = request.getfixturevalue("redis_location")
        yield location.url or "", location


def _start(
    upstream: str, store: str | None, *extra: str, agent_runs: bool = True
) -> tuple[subprocess.Popen[str], str]:
    """A ``backstay gateway --agent-runs`` process (``agent_runs`` false: a plain one) on
    ``store`` (``None``: without ``--store``), given the ``extra`` flags, and its URL."""
    env = {**os.environ, "BACKSTAY_GATEWAY_TOKEN": GATEWAY_TOKEN}
    env.pop("ANTHROPIC_API_KEY", None)
    stored = [] if store is None else ["--store", store]
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            MAIN,
            "gateway",
            *(["--agent-runs"] if agent_runs else []),
            "--port",
            "0",
            *stored,
            *extra,
            "--anthropic-upstream",
            upstream,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(START_S):
            process.kill()
            process.wait(timeout=30)
            pytest.fail("the shared gateway did not start")
    line = process.stdout.readline()
    assert "gateway listening on " in line, line
    return process, line.rsplit(" ", 1)[1].strip()


class SdkAgent(ClaudeCodeAdapter):
    """Claude Code's wiring to the gateway; each attempt is ``session`` in a thread (the
    anthropic SDK with the run's token): its ``Failure``, or ``None`` when it succeeded."""

    def session(self, request: AgentRequest, operation_id: str) -> Failure | None:
        raise NotImplementedError

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        failure = await asyncio.to_thread(self.session, request, operation_id)
        if failure is None:
            return AgentResult(status=AgentStatus.SUCCEEDED, output="done", usage=Usage())
        return AgentResult(status=AgentStatus.FAILED, failure=failure, usage=Usage())


def send_until_refused(
    request: AgentRequest, limit: int, statuses: list[int]
) -> tuple[Failure | None, str]:
    """One long message after another through ``request``'s base URL with its key, until
    one is refused, at most ``limit``; each status appended to ``statuses``. The refusal
    as a ``Failure`` (``None``: none refused) and the last answer's message."""
    base_url = request.config["base_url"]
    key = request.env["ANTHROPIC_API_KEY"]
    message = ""
    with anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0) as client:
        for _ in range(limit):
            status, message = _create(client)
            statuses.append(status)
            if status != 200:
                return Failure(code="ERR_HTTP_400_BAD_REQUEST", message=message), message
    return None, message


def _create(client: anthropic.Anthropic) -> tuple[int, str]:
    try:
        answer = client.messages.with_raw_response.create(
            model=ANTHROPIC_MODEL,
            max_tokens=20,
            messages=[{"role": "user", "content": LONG}],
        )
    except anthropic.BadRequestError as err:
        return err.status_code, err.message
    return answer.status_code, ""


def test_a_shared_gateway_holds_a_runs_requests_against_its_stores_budget(
    tmp_path: Path, store: tuple[str, StoreLocation]
) -> None:
    text, location = store
    bundle = open_stores(location, state_dir=tmp_path / "state")
    try:
        now = _dt.datetime.now(_dt.UTC)
        bundle.spend.set_budget(BATCH_SCOPE, SpendBudget(tokens=1500), at=now)
        gate = BudgetGate(bundle.spend, clock=SYSTEM_CLOCK)
        spec = TaskSpec(
            workflow_id="budgets",
            task_id="one",
            adapter="claude-code",
            model=ANTHROPIC_MODEL,
            workspace=tmp_path,
            timeout_s=60.0,
            prompt="hi",
        )
        adapter = ClaudeCodeAdapter()
        assert gate.reserve(spec, adapter, 1) is None
        budget = AttemptBudget(gate, spec, adapter, 1)
        assert CANARY_KEY not in repr(budget.shared())
        statuses: list[int] = []
        message = ""
        with FakeProvider(Scenario(), log_path=None) as fake:
            process, url = _start(fake.url, text)
            try:
                remote = RemoteRunGateway(url, GATEWAY_TOKEN)
                token = remote.open_run(
                    provider="anthropic",
                    key=CANARY_KEY,
                    upstream=None,
                    task=spec.operation_id,
                    attempt=None,
                    traceparent=None,
                    model=ANTHROPIC_MODEL,
                    budget=budget,
                )
                with anthropic.Anthropic(base_url=url, api_key=token, max_retries=0) as client:
                    for _ in range(20):
                        status, message = _create(client)
                        statuses.append(status)
                        if status != 200:
                            break
                tally = remote.close_run(token)
                requests = fake.stats().requests
            finally:
                process.terminate()
                _, stderr = process.communicate(timeout=30)
    finally:
        bundle.close()
    # The attempt's own reservation (about 1,025 tokens) fits; then each message's tokens
    # count in the store's ledger, and the one with no room left is refused unsent.
    assert statuses[-1] == 400, statuses
    assert set(statuses[:-1]) == {200}, statuses
    assert tally is not None
    assert tally.requests == requests == len(statuses) - 1 >= 1
    assert "backstay gateway: budget_exceeded: the batch token budget 1500" in message, message
    assert "task one stops here" in message, message
    # The refusal came back with the tally: the task's budget holds it (it is paused).
    assert budget.refusal is not None
    assert budget.refusal.reason.startswith("budget_exceeded: the batch token budget 1500")
    assert CANARY_KEY not in stderr
    assert "Traceback" not in stderr


def test_a_bad_budget_is_refused_when_the_run_is_opened(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    with FakeProvider(Scenario(), log_path=None) as fake:
        process, url = _start(fake.url, str(state))
        try:
            remote = RemoteRunGateway(url, GATEWAY_TOKEN)
            body = {"provider": "anthropic", "key": CANARY_KEY, "budget": {"task_id": "t"}}
            with pytest.raises(Exception, match=r"answered 400: .*budget\.") as refused:
                remote._call("POST", "/_backstay/runs", body)
            assert CANARY_KEY not in str(refused.value)
        finally:
            process.terminate()
            process.communicate(timeout=30)
