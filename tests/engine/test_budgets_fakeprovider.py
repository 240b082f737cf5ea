"""Spending budgets against a real provider: the Anthropic adapter, through the official
SDK, against the fake provider, whose request log is the witness of what was attempted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.fakeprovider import FakeProvider, Reply, Scenario
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.testing import capture_events

MODEL: Final = "claude-haiku-4-5"
ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY}
# $100 per million tokens, in and out: $0.0001 a token.
PER_TOKEN_USD: Final = 100 / 1_000_000
MAX_TOKENS: Final = 120
PROMPT: Final = "Say hello"  # 3 tokens
# The estimate of one attempt: its prompt and max_tokens, at the price.
ESTIMATE_USD: Final = (3 + MAX_TOKENS) * PER_TOKEN_USD
# 80 output tokens: an attempt really costs a little less than its estimate.
SCENARIO: Final = Scenario(reply=Reply(text=" ".join(["word"] * 80)))
BUDGET_USD: Final = 0.05
TASKS: Final = 8
ONE_ATTEMPT: Final = RetryPolicy(name="once", max_attempts=1)


def _specs(tmp_path: Path, url: str) -> list[TaskSpec]:
    config = {
        "base_url": url,
        "max_tokens": MAX_TOKENS,
        "prices": {MODEL: {"input_per_mtok": 100, "output_per_mtok": 100}},
    }
    specs = []
    for i in range(TASKS):
        workspace = tmp_path / "ws" / f"t{i}"
        workspace.mkdir(parents=True, exist_ok=True)
        specs.append(
            TaskSpec(
                workflow_id="budget",
                task_id=f"t{i}",
                adapter="anthropic-api",
                model=MODEL,
                workspace=workspace,
                timeout_s=20.0,
                prompt=PROMPT,
                env=ENV,
                config=config,
                policy=ONE_ATTEMPT,
            )
        )
    return specs


def _requests(log: Path) -> list[dict[str, Any]]:
    lines = log.read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["path"] == "/v1/messages"]


def _cost(entry: dict[str, Any]) -> float:
    return float(entry["input_tokens"] + entry["output_tokens"]) * PER_TOKEN_USD


def _engine(state: Path, **options: Any) -> Engine:
    adapters = {"anthropic-api": AnthropicApiAdapter()}
    return Engine(state, adapters=adapters, env=ENV, breaker=None, **options)


def test_a_batch_stops_at_its_budget_and_finishes_once_it_is_raised(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:  # the log is complete once it stops
        port = fake.port
        specs = _specs(tmp_path, fake.url)
        with (
            capture_events() as events,
            _engine(state, budget=SpendBudget(usd=BUDGET_USD), concurrency=1) as engine,
        ):
            summary = engine.run_sync(specs)
            tasks = {t.task_id: t for t in engine.store.tasks()}
            spent = engine.spending()[0].spent.usd
    first = _requests(log)

    # Every request the provider saw was admitted: what was spent before it plus its
    # estimate fit the budget; and the next one would not have fit.
    so_far = 0.0
    for entry in first:
        assert so_far + ESTIMATE_USD <= BUDGET_USD + 1e-12
        so_far += _cost(entry)
    assert so_far + ESTIMATE_USD > BUDGET_USD
    assert spent == pytest.approx(so_far)
    assert spent <= BUDGET_USD
    assert 3 <= len(first) < TASKS  # ~5 of the 8 fit

    paused = [t for t in tasks.values() if t.state is TaskState.PAUSED]
    assert len(paused) == TASKS - len(first) == summary.budget_paused
    assert all(t.reason.startswith("budget_exceeded: the batch USD budget") for t in paused)
    assert all(t.attempts_used == 0 for t in paused)  # no attempt was begun for them
    asked = {e["idempotency_key"] for e in first}
    assert not asked & {t.operation_id for t in paused}
    names = events.names
    assert names.count("budget.exceeded") == names.count("task.paused") == len(paused)
    exceeded = events.named("budget.exceeded")[0]
    assert exceeded.to_dict()["scope"] == "batch"

    # The same provider again (the stored specs name its port), the budget raised.
    with (
        FakeProvider(SCENARIO, port=port, log_path=log),
        _engine(state, budget=SpendBudget(usd=1.0), concurrency=3) as engine,
    ):
        resumed = engine.resume_sync()
    assert resumed.count(TaskState.SUCCEEDED) == TASKS
    assert resumed.budget_paused == 0
    every = _requests(log)
    keys = [e["idempotency_key"] for e in every]
    assert len(keys) == len(set(keys)) == TASKS  # each task reached the provider once


def test_concurrent_tasks_never_overshoot_the_budget_together(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        specs = _specs(tmp_path, fake.url)
        with _engine(state, budget=SpendBudget(usd=BUDGET_USD), concurrency=4) as engine:
            summary = engine.run_sync(specs)
            totals = engine.spending()[0]
    served = _requests(log)
    assert sum(_cost(e) for e in served) == pytest.approx(totals.spent.usd)
    assert totals.spent.usd <= BUDGET_USD
    assert totals.reserved.usd == 0.0
    assert totals.spent.usd + ESTIMATE_USD > BUDGET_USD  # stopped only once it was full
    assert summary.count(TaskState.SUCCEEDED) == len(served)
    assert summary.budget_paused == TASKS - len(served) > 0


def test_a_resumed_batch_keeps_its_budget_and_its_spending(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        specs = _specs(tmp_path, fake.url)
        with _engine(state, budget=SpendBudget(usd=BUDGET_USD), concurrency=1) as engine:
            engine.run_sync(specs)
            before = fake.stats().requests
        with _engine(state, concurrency=2) as engine:  # no budget given: the kept one
            summary = engine.resume_sync()
        assert fake.stats().requests == before  # still no room: nothing attempted
    assert summary.budget_paused == TASKS - before


def test_a_tenant_budget_pauses_only_that_tenants_tasks(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        specs = [
            s.__class__(**{**_fields(s), "tenant": "acme" if i % 2 else "globex"})
            for i, s in enumerate(_specs(tmp_path, fake.url))
        ]
        tenants = {"acme": SpendBudget(usd=ESTIMATE_USD * 1.5)}
        with _engine(state, tenant_budgets=tenants, concurrency=1) as engine:
            engine.run_sync(specs)
            tasks = list(engine.store.tasks())
            overview = {t.scope.name: t for t in engine.spending()}
    acme = [t for t in tasks if t.spec.tenant == "acme"]
    globex = [t for t in tasks if t.spec.tenant == "globex"]
    assert all(t.state is TaskState.SUCCEEDED for t in globex)
    assert sum(t.state is TaskState.SUCCEEDED for t in acme) == 1
    assert all("tenant acme" in t.reason for t in acme if t.state is TaskState.PAUSED)
    assert overview["acme"].spent.usd <= ESTIMATE_USD * 1.5


def test_a_task_token_budget_too_small_for_one_attempt_starts_none(tmp_path: Path) -> None:
    state, log = tmp_path / "state", tmp_path / "requests.jsonl"
    with FakeProvider(SCENARIO, log_path=log) as fake:
        spec = _specs(tmp_path, fake.url)[0]
        spec = spec.__class__(**{**_fields(spec), "budget": SpendBudget(tokens=50)})
        with _engine(state) as engine:
            summary = engine.run_sync([spec])
            record = engine.store.tasks()[0]
    # 3 + 120 estimated tokens never fit 50: not even the first attempt starts.
    assert record.state is TaskState.PAUSED
    assert record.reason.startswith("budget_exceeded: the task budget:t0:run_01 token budget 50")
    assert summary.attempts == 0
    assert _requests(log) == []


def _fields(spec: TaskSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__}
