"""The engine's spending budgets on a fake clock, with the scripted adapter (no price: the
USD estimate is the mean cost of earlier attempts of the adapter and model)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from tests.engine.support import ScriptedAdapter, engine, spec

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.contract import AgentResult
from backstay.adapters.usage import Usage
from backstay.engine import TaskState
from backstay.engine.budgets import charge_for, estimate_attempt
from backstay.failure import Failure
from backstay.policy.spend import BATCH_SCOPE, DEFAULT_OUTPUT_TOKENS, EarlierUse, Spend, SpendBudget
from backstay.testing import capture_events

CENT: Final = Usage(input_tokens=100, output_tokens=20, cost_usd=0.01, api_calls=1)
# A failed attempt that still used (and cost) something: a stream cut short.
CUT_SHORT: Final = AgentResult.failed(
    Failure(code="ERR_HTTP_503_UNAVAILABLE"), usage=Usage(input_tokens=100, cost_usd=0.01)
)


def test_the_estimate_of_an_agent_follows_the_mean_of_earlier_attempts(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [CENT], "t2": [CENT], "t3": [CENT]})
    specs = [spec(tmp_path, t) for t in ("t1", "t2", "t3")]
    with engine(tmp_path / "s", adapter, budget=SpendBudget(usd=0.025), concurrency=1) as eng:
        summary = eng.run_sync(specs)
        states = {t.task_id: t.state for t in eng.store.tasks()}
    # t1: nothing earlier, estimated $0; t2: $0.01 (the mean) fits 0.01 + 0.01 <= 0.025;
    # t3 would not: 0.02 + 0.01 > 0.025.
    assert states == {"t1": "succeeded", "t2": "succeeded", "t3": "paused"}
    assert summary.budget_paused == 1
    assert [c.operation_id for c in adapter.calls] == [s.operation_id for s in specs[:2]]


def test_a_retrying_task_is_paused_before_a_retry_that_does_not_fit(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [CENT], "t2": [CUT_SHORT, CENT]})
    specs = [spec(tmp_path, "t1"), spec(tmp_path, "t2")]
    with engine(tmp_path / "s", adapter, budget=SpendBudget(usd=0.025), concurrency=1) as eng:
        eng.run_sync(specs)
        t2 = eng.store.task(specs[1].operation_id)
    assert t2 is not None
    assert t2.state is TaskState.PAUSED
    assert t2.attempts_used == 1  # the retry was never begun
    assert t2.reason.startswith("budget_exceeded: the batch USD budget $0.025")


def test_a_budget_paused_task_stays_untouched_until_the_budget_has_room(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({"t1": [CENT], "t2": [CENT]})
    specs = [spec(tmp_path, "t1"), spec(tmp_path, "t2", budget=SpendBudget(tokens=100))]
    state = tmp_path / "s"
    with engine(state, adapter, concurrency=1) as eng:
        eng.run_sync(specs)
        before = eng.store.task(specs[1].operation_id)
    with capture_events() as events, engine(state, adapter) as eng:
        eng.resume_sync()
        after = eng.store.task(specs[1].operation_id)
    assert before is not None
    assert after is not None
    assert after.state is TaskState.PAUSED
    assert after.updated_at == before.updated_at  # not requeued and paused again
    assert events.names == []
    assert len(adapter.calls) == 1


def test_raising_the_batch_budget_lets_a_resume_finish_the_paused_tasks(tmp_path: Path) -> None:
    adapter = ScriptedAdapter({f"t{i}": [CENT] for i in range(4)})
    specs = [spec(tmp_path, f"t{i}") for i in range(4)]
    state = tmp_path / "s"
    with engine(state, adapter, budget=SpendBudget(usd=0.025), concurrency=1) as eng:
        first = eng.run_sync(specs)
    with capture_events() as events, engine(state, adapter, budget=SpendBudget()) as eng:
        second = eng.resume_sync()
        totals = eng.spending()[0]
    assert first.budget_paused == 2
    assert second.count(TaskState.SUCCEEDED) == 4
    assert "task.resumed" in events.names
    assert totals.budget == SpendBudget()
    assert totals.spent == Spend(usd=pytest.approx(0.04), tokens=4 * 120)  # type: ignore[arg-type]


def test_an_interrupted_attempt_is_charged_its_estimate(tmp_path: Path) -> None:
    adapter = ScriptedAdapter()
    one = spec(tmp_path, "t1")
    state = tmp_path / "s"
    with engine(state, adapter) as eng:
        eng.store.register(one, at=eng.clock.now())
        assert eng.budgets.reserve(one, adapter, 1) is None
        eng.store.begin_attempt(
            one.operation_id,
            number=1,
            attempt_id=f"{one.operation_id}/1",
            output_dir="x",
            at=eng.clock.now(),
        )
    # The runner died there; a resume recovers the task and charges the open reservation.
    with engine(state, adapter) as eng:
        summary = eng.resume_sync()
        spent = eng.spending()[0].spent
    assert summary.count(TaskState.SUCCEEDED) == 1
    assert summary.attempts == 2
    # Attempt 1 at its estimate ("do the task": 3 tokens, and the default output); attempt
    # 2 succeeded using nothing (the scripted "ok").
    assert spent.tokens == 3 + DEFAULT_OUTPUT_TOKENS


def test_the_estimate_of_an_api_call_is_its_prompt_and_max_tokens_at_its_price(
    tmp_path: Path,
) -> None:
    prices = {"m": {"input_per_mtok": 1_000_000, "output_per_mtok": 2_000_000}}
    one = spec(tmp_path, adapter="anthropic-api", config={"max_tokens": 50, "prices": prices})
    estimate = estimate_attempt(one, AnthropicApiAdapter(), None)
    assert estimate == Spend(usd=3 * 1.0 + 50 * 2.0, tokens=53)  # "do the task": 3 tokens


def test_earlier_attempts_raise_the_input_estimate_of_an_agent(tmp_path: Path) -> None:
    earlier = EarlierUse(prompt_tokens=5000, output_tokens=700, usd=0.3)
    estimate = estimate_attempt(spec(tmp_path), ScriptedAdapter(), earlier)
    assert estimate == Spend(usd=0.3, tokens=5700)


def test_an_attempt_of_unknown_cost_that_used_tokens_is_charged_its_estimate(
    tmp_path: Path,
) -> None:
    used = Usage(input_tokens=10, output_tokens=5)
    charged = charge_for(spec(tmp_path), ScriptedAdapter(), used, Spend(usd=0.2, tokens=99))
    assert charged == Spend(usd=0.2, tokens=15)
    nothing = charge_for(spec(tmp_path), ScriptedAdapter(), Usage(), Spend(usd=0.2, tokens=9))
    assert nothing == Spend()


def test_a_reported_cost_is_charged_as_it_is(tmp_path: Path) -> None:
    charged = charge_for(spec(tmp_path), ScriptedAdapter(), CENT, Spend(usd=0.5, tokens=9))
    assert charged == Spend(usd=0.01, tokens=120)


def test_the_batch_budget_is_kept_in_the_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "s"
    with engine(state, ScriptedAdapter(), budget=SpendBudget(usd=2.0)):
        pass
    with engine(state, ScriptedAdapter()) as eng:
        assert eng.spend.budget(BATCH_SCOPE) == SpendBudget(usd=2.0)


def test_a_wrong_budget_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"tenant_budgets\.acme"):
        engine(tmp_path / "s", ScriptedAdapter(), tenant_budgets={"acme": 5})
