"""Spending budgets on a task with fallbacks, through the official SDKs against the fake
provider: each attempt is estimated and charged as the candidate the chain chose for it,
and a budget's refusal is no failure of that candidate."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, Final

from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.breaker import BreakerSettings
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.engine.budgets import estimate_attempt
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback import Candidate
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.store.sqlite.spend import SPEND
from backstay.testing import capture_events

PRIMARY: Final = "claude-haiku-4-5"
SPARE: Final = "gpt-5-mini"
ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY, "OPENAI_API_KEY": CANARY_KEY}
FAST: Final = RetryPolicy(
    name="fast", max_attempts=4, initial_delay_s=0.05, max_delay_s=0.05, jitter=0.0
)
BREAKER: Final = BreakerSettings(
    failure_threshold=2, failure_rate_threshold=None, open_duration_s=30.0
)
# The primary is cheap and bounded ($1 per million tokens, at most 100 output tokens);
# the spare, at its genai-prices price with no max_tokens, is estimated far higher.
PRIMARY_CONFIG: Final = {
    "max_tokens": 100,
    "prices": {PRIMARY: {"input_per_mtok": 1, "output_per_mtok": 1}},
}


def _spec(tmp_path: Path, url: str) -> TaskSpec:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    spare = Candidate(
        adapter="openai-api", model=SPARE, api_key_env="OPENAI_API_KEY", base_url=url + "/v1"
    )
    return TaskSpec(
        workflow_id="spend",
        task_id="t",
        adapter="anthropic-api",
        model=PRIMARY,
        workspace=workspace,
        timeout_s=20.0,
        prompt="Say hello",
        env=ENV,
        config={"base_url": url, **PRIMARY_CONFIG},
        policy=FAST,
        fallbacks=(spare,),
    )


def _estimates(tmp_path: Path, url: str) -> tuple[float, float]:
    """The estimates (USD) of an attempt on the primary and on the spare."""
    spec = _spec(tmp_path, url)
    spare = TaskSpec(
        workflow_id="spend",
        task_id="t",
        adapter="openai-api",
        model=SPARE,
        workspace=spec.workspace,
        timeout_s=20.0,
        prompt="Say hello",
        config={"base_url": url + "/v1", "api_key_env": "OPENAI_API_KEY"},
    )
    primary_usd = estimate_attempt(spec, AnthropicApiAdapter(), None).usd
    spare_usd = estimate_attempt(spare, OpenAIApiAdapter(), None).usd
    return float(primary_usd or 0.0), float(spare_usd or 0.0)


def _engine(state: Path, budget: SpendBudget | None = None) -> Engine:
    adapters = {"anthropic-api": AnthropicApiAdapter(), "openai-api": OpenAIApiAdapter()}
    return Engine(state, adapters=adapters, env=ENV, breaker=BREAKER, budget=budget)


def _spend_rows(state: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(state / "state.sqlite") as conn:
        query = f"SELECT adapter, model, estimate_tokens, status, usd FROM {SPEND} ORDER BY rowid"  # noqa: S608
        return list(conn.execute(query))


def test_a_fallback_attempt_is_estimated_and_charged_as_its_candidate(tmp_path: Path) -> None:
    state = tmp_path / "state"
    down = Fault(kind=FaultKind.SERVER_ERROR, model=PRIMARY)
    with FakeProvider(Scenario(faults=(down,))) as fake:
        primary_usd, spare_usd = _estimates(tmp_path, fake.url)
        # Room for an attempt on the primary, not for one on the spare.
        tight = SpendBudget(usd=(primary_usd + spare_usd) / 2)
        assert primary_usd < tight.usd < spare_usd  # type: ignore[operator]
        with capture_events() as events, _engine(state, tight) as engine:
            engine.run_sync([_spec(tmp_path, fake.url)])
            (paused,) = engine.store.tasks()
            cooling = engine.stores.fallback.cooling_until(
                f"openai-api/{SPARE}@OPENAI_API_KEY", now_s=time.time()
            )
        first = dict(fake.stats().by_api)
        # Still too little for the spare (though enough for the primary): left untouched.
        with capture_events() as untouched, _engine(state, tight) as engine:
            engine.resume_sync()
        with _engine(state, SpendBudget(usd=1.0)) as engine:
            engine.resume_sync()
            (done,) = engine.store.tasks()
            attempts = engine.store.attempts(done.operation_id)
        second = dict(fake.stats().by_api)

    assert first == {"anthropic": 1}  # the spare was never called past the budget
    assert paused.state is TaskState.PAUSED
    assert paused.reason.startswith("budget_exceeded")
    assert paused.attempts_used == 1
    (exceeded,) = events.named("budget.exceeded")
    assert exceeded.to_dict()["estimate"]["usd"] == spare_usd  # the spare's, not the task's own
    assert cooling is None  # the refusal did not cool the spare down
    assert "task.resumed" not in untouched.names
    assert done.state is TaskState.SUCCEEDED
    assert [a.candidate for a in attempts] == [
        f"anthropic-api/{PRIMARY}",
        f"openai-api/{SPARE}@OPENAI_API_KEY",
    ]
    assert second == {"anthropic": 1, "openai-chat": 1}
    rows = _spend_rows(state)
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("anthropic-api", PRIMARY, "settled"),
        ("openai-api", SPARE, "settled"),
    ]
    assert rows[0][4] == 0.0  # a 500 uses nothing
    assert rows[1][2] > rows[0][2]  # estimated without max_tokens: the spare's estimate
    assert rows[1][4] > 0.0
