"""Spending budgets per gateway request: an agent run's requests are held against its
task's budgets (``engine.request_budget.AttemptBudget``, handed to the gateway with the
run): each request's prompt tokens are held before it is forwarded, each answer's tokens
charged, and a request the budgets have no room for is answered with a 400 in the
provider's format naming the budget, so the client stops.

Through the official anthropic SDK against an in-process gateway and a real SQLite spend
ledger; end to end, ``backstay batch`` of the real Claude Code in a private network
namespace with a task's token budget: the session is stopped at the budget, the CLI
started once, and the task ends ``paused`` with ``budget_exceeded``, as a refused attempt
is paused.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anthropic
import pytest
import yaml
from tests.adapters.cli_provider import (
    BACKSTAY,
    BASE_ENV,
    Providers,
    installed,
    namespace_providers,
)
from tests.adapters.support import CANARY_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL, FAST_POLICY

from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.clock import SYSTEM_CLOCK
from backstay.engine.budgets import BudgetGate
from backstay.engine.records import AttemptOutcome
from backstay.engine.request_budget import AttemptBudget
from backstay.engine.states import TaskState
from backstay.engine.task import TaskSpec
from backstay.events import EVENTS_FILE
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.runs import LocalRunGateway, RunTokens
from backstay.policy.spend import BATCH_SCOPE, SpendBudget
from backstay.store.sqlite.spend import SQLiteSpendLedger
from backstay.store.sqlite.tasks import SQLiteTaskStore

TIMEOUT_S: Final = 240.0
TURNS: Final = 5


def _spec(tmp_path: Path, budget: SpendBudget | None = None) -> TaskSpec:
    return TaskSpec(
        workflow_id="budgets",
        task_id="one",
        adapter="claude-code",
        model=ANTHROPIC_MODEL,
        workspace=tmp_path,
        timeout_s=60.0,
        prompt="hi",
        budget=budget,
    )


def _create(client: anthropic.Anthropic, text: str) -> tuple[int, str]:
    """The status of one message of ``text``, and the error's message if refused."""
    messages = [{"role": "user", "content": text}]
    try:
        answer = client.messages.with_raw_response.create(
            model=ANTHROPIC_MODEL,
            max_tokens=20,
            messages=messages,  # type: ignore[arg-type]
        )
    except anthropic.BadRequestError as err:
        return err.status_code, err.message
    return answer.status_code, ""


def _requests_until_refused(
    tmp_path: Path, limit_tokens: int, text: str
) -> tuple[list[int], str, Any, int]:
    """Messages of ``text`` through a run whose batch budget is ``limit_tokens``, until one
    is refused (at most 20): the statuses, the refusal's message, the budget's refusal,
    and the provider's request count."""
    ledger = SQLiteSpendLedger(tmp_path / "state")
    now = _dt.datetime.now(_dt.UTC)
    ledger.set_budget(BATCH_SCOPE, SpendBudget(tokens=limit_tokens), at=now)
    gate = BudgetGate(ledger, clock=SYSTEM_CLOCK)
    spec, adapter = _spec(tmp_path), ClaudeCodeAdapter()
    assert gate.reserve(spec, adapter, 1) is None
    budget = AttemptBudget(gate, spec, adapter, 1)
    runs = RunTokens()
    statuses: list[int] = []
    message = ""
    try:
        with FakeProvider(Scenario(), log_path=None) as fake:
            settings = GatewaySettings(
                port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url)
            )
            with Gateway(settings, runs=runs) as gateway:
                token = LocalRunGateway(gateway.url, runs, 60.0).open_run(
                    provider="anthropic",
                    key=CANARY_KEY,
                    upstream=None,
                    task=spec.operation_id,
                    attempt=None,
                    traceparent=None,
                    model=ANTHROPIC_MODEL,
                    budget=budget,
                )
                with anthropic.Anthropic(
                    base_url=gateway.url, api_key=token, max_retries=0
                ) as client:
                    for _ in range(20):
                        status, message = _create(client, text)
                        statuses.append(status)
                        if status != 200:
                            break
                tally = runs.close(token)
            requests = fake.stats().requests
    finally:
        ledger.close()
    assert tally is not None
    assert tally.requests == requests
    return statuses, message, budget.refusal, requests


# About 500 prompt tokens a message (four characters a token).
LONG: Final = "Tell me about resilient systems. " * 60


def test_a_runs_requests_stop_with_a_400_when_its_budget_has_no_room(tmp_path: Path) -> None:
    # The attempt's own reservation (about 1,025 tokens) fits; then each message's tokens
    # count, and the one with no room left is refused before it is sent.
    statuses, message, refusal, requests = _requests_until_refused(tmp_path, 1500, LONG)
    assert statuses[-1] == 400, statuses
    assert set(statuses[:-1]) == {200}, statuses
    assert requests == len(statuses) - 1 >= 1
    assert refusal is not None
    assert refusal.reason.startswith("budget_exceeded: the batch token budget 1500"), refusal
    assert "'invalid_request_error'" in message, message
    assert "backstay gateway: budget_exceeded: the batch token budget 1500" in message, message
    assert "task one stops here" in message, message


def test_a_request_its_budget_cannot_hold_is_never_sent(tmp_path: Path) -> None:
    statuses, _, refusal, requests = _requests_until_refused(tmp_path, 1100, LONG * 4)
    assert (statuses, requests) == ([400], 0)
    assert refusal is not None


def test_a_run_without_a_budget_is_not_asked(tmp_path: Path) -> None:
    runs = RunTokens()
    with FakeProvider(Scenario(), log_path=None) as fake:
        settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url))
        with Gateway(settings, runs=runs) as gateway:
            token = LocalRunGateway(gateway.url, runs, 60.0).open_run(
                provider="anthropic",
                key=CANARY_KEY,
                upstream=None,
                task="op",
                attempt=None,
                traceparent=None,
                model=ANTHROPIC_MODEL,
            )
            assert runs.budget(token) is None
            with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as c:
                assert [_create(c, LONG)[0] for _ in range(3)] == [200, 200, 200]


# -- end to end: backstay batch, the real Claude Code ------------------------------------


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Providers]:
    yield from namespace_providers(tmp_path_factory)


def _suite(tmp_path: Path, tokens: int) -> Path:
    suite = {
        "suite": "budgeted",
        "tasks": [
            {
                "id": "session",
                "adapter": "claude-code",
                "model": "claude-sonnet-4-5",
                "timeout_s": TIMEOUT_S,
                "prompt": "Run the five steps, one command at a time.",
                "budget": {"tokens": tokens},
            }
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _session() -> dict[str, Any]:
    return {
        "session": {
            "turns": [{"shell": f"echo step-{i} >> progress.txt"} for i in range(1, TURNS + 1)],
            "final": "All five steps are done.",
        }
    }


def _batch(providers: Providers, tmp_path: Path, tokens: int) -> tuple[Any, dict[str, Any]]:
    served = providers.serve(_session())
    state = tmp_path / "state"
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
    }
    argv = [*BACKSTAY, "batch", str(_suite(tmp_path, tokens)), "--state-dir", str(state)]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 120, env=env, cwd=tmp_path)
    return done, served.stats()


@pytest.fixture(scope="module")
def session_tokens(providers: Providers, tmp_path_factory: pytest.TempPathFactory) -> int:
    """The tokens one whole session uses, without a budget in the way."""
    installed("claude-code")
    done, stats = _batch(providers, tmp_path_factory.mktemp("free"), tokens=10_000_000)
    assert done.returncode == 0, done.stderr
    assert stats["requests"] == TURNS + 1, stats
    whole: int = stats["input_tokens"] + stats["output_tokens"]
    return whole


def _stopped_part_way(stats: dict[str, Any], whole: int) -> None:
    """The provider answered some turns, not all: the refused request never reached it."""
    assert 1 <= stats["requests"] < TURNS + 1, stats
    assert stats["by_status"] == {"200": stats["requests"]}, stats
    assert stats["input_tokens"] + stats["output_tokens"] <= whole // 2, (stats, whole)


def test_claude_code_is_stopped_at_its_tasks_token_budget_mid_session(
    providers: Providers, tmp_path: Path, session_tokens: int
) -> None:
    # A budget of half what the session uses: stopped part way, in its one CLI start.
    done, stats = _batch(providers, tmp_path, tokens=session_tokens // 2)
    state = tmp_path / "state"
    with SQLiteTaskStore(state) as store:
        (task,) = store.tasks()
        attempts = store.attempts()
    assert task.state is TaskState.PAUSED, (task, done.stderr)
    assert task.reason.startswith("budget_exceeded: the task "), task.reason
    assert "token budget" in task.reason, task.reason
    (attempt,) = attempts
    assert attempt.outcome is AttemptOutcome.FAILED
    assert attempt.failure is not None
    assert attempt.failure.code == "ERR_LIMIT_BUDGET"
    _stopped_part_way(stats, session_tokens)
    lines = [json.loads(line) for line in (state / EVENTS_FILE).read_text().splitlines()]
    names = [line["event"] for line in lines]
    assert "budget.exceeded" in names, names
    assert "task.paused" in names, names
    assert CANARY_KEY not in done.stdout + done.stderr


@pytest.mark.slow
def test_backstay_run_stops_claude_code_at_its_token_budget_mid_session(
    providers: Providers, tmp_path: Path, session_tokens: int
) -> None:
    served = providers.serve(_session())
    workspace, out = tmp_path / "workspace", tmp_path / "out"
    workspace.mkdir()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Run the five steps, one command at a time.", encoding="utf-8")
    env = {
        **BASE_ENV,
        "HOME": os.environ.get("HOME", "/root"),
        "ANTHROPIC_API_KEY": CANARY_KEY,
        "ANTHROPIC_BASE_URL": served.url,
    }
    argv = [*BACKSTAY, "run", "--adapter", "claude-code", "--model", "claude-sonnet-4-5"]
    argv += ["--prompt-file", str(prompt), "--workspace", str(workspace)]
    argv += ["--output-dir", str(out), "--timeout", str(TIMEOUT_S)]
    argv += ["--budget-tokens", str(session_tokens // 2)]
    done = providers.namespace.run(argv, timeout_s=TIMEOUT_S + 60, env=env, cwd=tmp_path)
    stats = served.stats()
    log = (out / "agent.log").read_text() if (out / "agent.log").exists() else ""
    assert done.returncode == 5, f"{done.stderr}\n{log}"
    assert log.count("started pid ") == 1, log
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["error"].startswith("ERR_BUDGET_EXCEEDED: "), metrics
    assert "no room for the next request of attempt 1" in done.stderr, done.stderr
    _stopped_part_way(stats, session_tokens)
