"""The gateway's own spending budget over requests that are not of an agent run
(``backstay.gateway.spending``): the windows, the rule, and an in-process ``Gateway`` in
front of the fake provider refusing, through the official SDKs, the request its budget has
no room for — with a 400 in the provider's format, unsent, one ``request.refused`` — and
settling each answered one (a stream once it is relayed) at the tokens its answer reported.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import anthropic
import httpx
import openai
import pytest
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    CANARY_KEY,
    FAST_POLICY,
    MESSAGES,
    OPENAI_MODEL,
    Served,
    anthropic_client,
    openai_client,
)

from backstay.cli._gateway_spend import table_price
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.spending import (
    BudgetWindow,
    GatewayBudget,
    GatewaySpending,
    MemoryRows,
    window_of,
)
from backstay.policy.spend import ScopeTotals, Spend, SpendBudget
from backstay.testing import capture_events

# About 250 prompt tokens a message (four characters a token).
LONG: Final = "Tell me about resilient systems. " * 30
MAX_MESSAGES: Final = 10


def _at(text: str) -> float:
    return _dt.datetime.fromisoformat(text).replace(tzinfo=_dt.UTC).timestamp()


@pytest.mark.parametrize(
    ("window", "now", "label", "ends"),
    [
        (BudgetWindow.HOUR, "2026-11-28T23:59:59", "2026-11-28T23", "2026-11-29T00:00:00"),
        (BudgetWindow.DAY, "2026-11-28T23:59:59", "2026-11-28", "2026-11-29T00:00:00"),
        (BudgetWindow.WEEK, "2026-11-29T12:00:00", "2026-W48", "2026-11-30T00:00:00"),
        (BudgetWindow.MONTH, "2026-12-31T23:00:00", "2026-12", "2027-01-01T00:00:00"),
    ],
)
def test_a_window_is_the_calendar_one_in_utc(
    window: BudgetWindow, now: str, label: str, ends: str
) -> None:
    assert window_of(window, _at(now)) == (label, _at(ends))


def test_a_total_budget_has_one_scope_that_never_ends() -> None:
    budget = GatewayBudget(tokens=10)
    assert budget.scope(_at("2026-01-01T00:00:00")) == ("gateway", None)
    daily = GatewayBudget(usd=5, window=BudgetWindow.DAY)
    assert daily.scope(_at("2026-03-04T05:06:07"))[0] == "gateway@day:2026-03-04"
    assert daily.describe() == "$5 a day"


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({}, "budget"),
        ({"tokens": -1}, "budget.tokens"),
        ({"tokens": 5, "window": "year"}, "budget.window"),
    ],
)
def test_a_budget_that_limits_nothing_or_is_wrong_is_refused(
    fields: dict[str, object], where: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        GatewayBudget(**fields)  # type: ignore[arg-type]
    assert raised.value.where == where


def test_memory_rows_hold_reservations_until_settled() -> None:
    rows = MemoryRows()
    budget = SpendBudget(tokens=100)
    assert rows.reserve("a", "gateway", budget, Spend(tokens=60), now=0, until=None) is None
    refused = rows.reserve("b", "gateway", budget, Spend(tokens=50), now=0, until=None)
    assert refused is not None
    assert refused.dimension == "tokens"
    rows.settle("a", Spend(tokens=30), scope="gateway", prompt_tokens=20, output_tokens=10)
    assert rows.reserve("b", "gateway", budget, Spend(tokens=50), now=0, until=None) is None
    totals = rows.totals("gateway", budget)
    assert (totals.spent.tokens, totals.reserved.tokens) == (30, 50)


def test_memory_rows_forget_a_scope_past_its_until_when_a_new_one_starts() -> None:
    rows = MemoryRows()
    budget = SpendBudget(tokens=100)
    assert rows.reserve("a", "w1", budget, Spend(tokens=10), now=0, until=50) is None
    assert rows.reserve("b", "w1", budget, Spend(tokens=10), now=0, until=50) is None
    rows.settle("a", Spend(tokens=7), scope="w1", prompt_tokens=5, output_tokens=2)
    assert rows.reserve("c", "w2", budget, Spend(tokens=10), now=49, until=150) is None
    assert rows.scopes() == 2  # w1 may not be forgotten yet
    assert rows.reserve("d", "w3", budget, Spend(tokens=10), now=51, until=250) is None
    assert rows.scopes() == 2  # w1 went, with its request in flight
    assert rows.totals("w1", budget).spent == Spend()
    rows.settle("b", Spend(tokens=9), scope="w1", prompt_tokens=5, output_tokens=4)
    assert rows.totals("w1", budget).spent == Spend()  # forgotten: nothing comes back


@contextlib.contextmanager
def _budgeted(tmp_path: Path, budget: GatewayBudget, rows: MemoryRows) -> Iterator[Served]:
    """A fake provider behind an in-process gateway whose requests are held to ``budget``
    (priced with the price table)."""
    log = tmp_path / "requests.jsonl"
    spending = GatewaySpending(budget, rows, table_price({}))
    with FakeProvider(Scenario(), log_path=log) as fake:
        settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url))
        with Gateway(settings, spending=spending) as gateway:
            yield Served(fake=fake, gateway=gateway, log=log)


def _reported(served: Served) -> int:
    """The tokens the provider's answers reported, from its request log."""
    return sum(
        int(entry["input_tokens"]) + int(entry["output_tokens"])
        for entry in served.logged()
        if entry.get("status") == 200 and "input_tokens" in entry
    )


def _settled(rows: MemoryRows, scope: str, limit: SpendBudget) -> ScopeTotals:
    """The scope's totals once nothing is reserved (a stream settles just after the client
    has its last byte), waiting at most 10 s."""
    deadline = time.monotonic() + 10.0
    totals = rows.totals(scope, limit)
    while totals.reserved != Spend() and time.monotonic() < deadline:
        time.sleep(0.01)
        totals = rows.totals(scope, limit)
    return totals


def _send_until_refused(url: str, statuses: list[int]) -> str:
    with anthropic_client(url) as client:
        for _ in range(MAX_MESSAGES):
            try:
                client.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=20,
                    messages=[{"role": "user", "content": LONG}],
                )
            except anthropic.BadRequestError as err:
                statuses.append(err.status_code)
                return err.message
            statuses.append(200)
    return ""


def test_a_request_with_no_room_is_refused_unsent_in_its_providers_format(
    tmp_path: Path,
) -> None:
    rows = MemoryRows()
    budget = GatewayBudget(tokens=1_000, window=BudgetWindow.DAY)
    statuses: list[int] = []
    with _budgeted(tmp_path, budget, rows) as s, capture_events() as events:
        message = _send_until_refused(s.url, statuses)
        requests = s.fake.stats().requests
        scope, _ = budget.scope(_dt.datetime.now(_dt.UTC).timestamp())
    assert statuses[-1] == 400, statuses
    assert set(statuses[:-1]) == {200}, statuses
    assert requests == len(statuses) - 1 >= 1
    assert "backstay gateway: budget_exceeded: the gateway's budget of 1000 tokens a day" in (
        message
    )
    assert "it starts afresh at " in message
    [event] = events.named("request.refused")
    assert event.scope == scope  # type: ignore[attr-defined]
    assert event.dimension == "tokens"  # type: ignore[attr-defined]
    # Each answered request settled at what its answer reported; nothing left reserved.
    totals = rows.totals(scope, budget.limit)
    assert totals.spent.tokens == _reported(s) <= budget.tokens
    assert totals.reserved == Spend()
    assert CANARY_KEY not in message + repr(list(events))


def test_a_stream_is_settled_once_relayed_and_openai_is_refused_in_its_format(
    tmp_path: Path,
) -> None:
    rows = MemoryRows()
    budget = GatewayBudget(tokens=200)
    with _budgeted(tmp_path, budget, rows) as s, openai_client(s.url) as client:
        chunks = client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text
        # Token counts cost nothing: not held.
        counted = httpx.post(
            s.url + "/v1/messages/count_tokens",
            json={"model": ANTHROPIC_MODEL, "messages": MESSAGES},
            headers={"x-api-key": "test-key-123456", "anthropic-version": "2023-06-01"},
            timeout=20,
        )
        assert counted.status_code == 200
        spent = _settled(rows, "gateway", budget.limit)
        with pytest.raises(openai.BadRequestError) as raised:
            client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=[{"role": "user", "content": LONG * 3}],
            )
    assert 0 < spent.spent.tokens == _reported(s)
    assert spent.reserved == Spend()
    error = raised.value.body
    assert isinstance(error, dict)
    assert error["type"] == "invalid_request_error"
    assert "budget_exceeded: the gateway's budget of 200 tokens in total" in error["message"]


def test_a_usd_budget_refuses_a_model_without_a_price(tmp_path: Path) -> None:
    rows = MemoryRows()
    budget = GatewayBudget(usd=1.0)
    with _budgeted(tmp_path, budget, rows) as s, anthropic_client(s.url) as client:
        with pytest.raises(anthropic.BadRequestError) as raised:
            client.messages.create(model="no-such-model-x", max_tokens=20, messages=MESSAGES)
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)
        requests = s.fake.stats().requests
    assert "no price is known for anthropic model 'no-such-model-x'" in raised.value.message
    assert requests == 1
    assert rows.totals("gateway", budget.limit).spent.usd > 0
