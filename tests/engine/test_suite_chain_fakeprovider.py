"""A suite task with limits, fallbacks and a budget together, through the engine and the
official SDKs against the fake provider: the task's limits reach the fallback on another
adapter as its own setting, and the budget estimates that attempt with them."""

from __future__ import annotations

import dataclasses
import sqlite3
import textwrap
from pathlib import Path
from typing import Any, Final

from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.breaker import BreakerSettings
from backstay.config import load_suite
from backstay.engine import Engine, SuiteBatch, TaskState
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.store.sqlite.spend import SPEND

PRIMARY: Final = "claude-haiku-4-5"
SPARE: Final = "gpt-5-mini"
ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY, "OPENAI_API_KEY": CANARY_KEY}
FAST: Final = RetryPolicy(
    name="fast", max_attempts=4, initial_delay_s=0.05, max_delay_s=0.05, jitter=0.0
)
BREAKER: Final = BreakerSettings(
    failure_threshold=2, failure_rate_threshold=None, open_duration_s=30.0
)


def _suite_text(url: str) -> str:
    return textwrap.dedent(f"""\
        suite: chain
        adapters:
          anthropic-api: {{base_url: "{url}", api_key_env: ANTHROPIC_API_KEY}}
        tasks:
          - id: t
            adapter: anthropic-api
            model: {PRIMARY}
            prompt: Say hello
            limits: {{max_output_tokens: 40}}
            budget: {{usd: 1.0, tokens: 100000}}
            fallbacks:
              - adapter: openai-api
                model: {SPARE}
                api_key_env: OPENAI_API_KEY
                base_url: "{url}/v1"
        """)


def _spend_rows(state: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(state / "state.sqlite") as conn:
        query = f"SELECT adapter, model, status, estimate_tokens FROM {SPEND} ORDER BY rowid"  # noqa: S608
        return list(conn.execute(query))


def test_a_suite_task_falls_back_with_its_limits_under_its_budget(tmp_path: Path) -> None:
    state = tmp_path / "state"
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY)
    with FakeProvider(Scenario(faults=(down,))) as fake:
        path = tmp_path / "suite.yaml"
        path.write_text(_suite_text(fake.url), encoding="utf-8")
        suite = load_suite(path, registry=PolicyRegistry())
        batch = SuiteBatch.open(suite, state, environ=ENV)
        specs = [dataclasses.replace(spec, policy=FAST) for spec in batch.specs]
        adapters = {"anthropic-api": AnthropicApiAdapter(), "openai-api": OpenAIApiAdapter()}
        with Engine(state, adapters=adapters, env=ENV, breaker=BREAKER) as engine:
            engine.run_sync(specs)
            (done,) = engine.store.tasks()
            attempts = engine.store.attempts(done.operation_id)
        by_api = dict(fake.stats().by_api)

    (spec,) = specs
    assert spec.budget == SpendBudget(usd=1.0, tokens=100000)
    assert spec.config["max_tokens"] == 40
    assert done.state is TaskState.SUCCEEDED
    assert [a.candidate for a in attempts] == [
        f"anthropic-api/{PRIMARY}",
        f"openai-api/{SPARE}@OPENAI_API_KEY",
    ]
    assert by_api == {"anthropic": 1, "openai-chat": 1}
    rows = _spend_rows(state)
    assert [r[:3] for r in rows] == [
        ("anthropic-api", PRIMARY, "settled"),
        ("openai-api", SPARE, "settled"),
    ]
    # Each attempt estimated with at most 40 output tokens: the spare got the task's limit
    # as its max_tokens (without it, the spare's estimate is its model's whole output).
    assert rows[1][3] == rows[0][3] <= 40 + 10
