"""The gateway's ledger beside ``--store`` stays bounded (``backstay.store.sqlite.
gateway_spend``, ``backstay.store.redis.gateway_spend``): an in-process ``Gateway`` under an
hourly token budget, its clock injected, in front of the fake provider, the anthropic SDK
sending requests (some streamed) — on a real SQLite file and a real ``redis-server``: after
them the ledger keeps one scope and no request row (counted in the file, and as Redis
keys), its totals are what the provider's answers reported, and once the clock passes the
window's end and its margin the next request's new window forgets the ended one. A ledger
that does not answer gets its client a 503 in the provider's format, unsent."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import sqlite3
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, Final

import anthropic
import openai
import pytest
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    CANARY_KEY,
    FAST_POLICY,
    MESSAGES,
    OPENAI_MODEL,
    anthropic_client,
    openai_client,
)
from tests.redis_server import start_redis

from backstay.cli._gateway_spend import table_price
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.spending import (
    WINDOW_MARGIN_S,
    BudgetWindow,
    GatewayBudget,
    GatewayLedger,
    GatewaySpending,
    MemoryRows,
)
from backstay.policy.spend import Spend, SpendBudget
from backstay.store._gateway_sums import EVER
from backstay.store.location import StoreLocation, parse_store
from backstay.store.open import open_stores
from backstay.store.redis.gateway_spend import RedisGatewayLedger
from backstay.store.sqlite.gateway_spend import SQLiteGatewayLedger
from backstay.testing import capture_events

REQUESTS: Final = 24
STREAMED_EVERY: Final = 4
SETTLE_WAIT_S: Final = 10.0
START: Final = _dt.datetime(2026, 11, 28, 10, 30, tzinfo=_dt.UTC).timestamp()


class Clock:
    """The gateway's clock, moved by the test."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "redis"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StoreLocation:
    if request.param == "sqlite":
        state = tmp_path / "state"
        state.mkdir()
        return StoreLocation.sqlite(state)
    found: StoreLocation = request.getfixturevalue("redis_location")
    return found


@contextlib.contextmanager
def _ledger(location: StoreLocation, tmp_path: Path) -> Iterator[GatewayLedger]:
    bundle = open_stores(location, state_dir=tmp_path / "state")
    ledger: GatewayLedger = bundle.spend.beside("gateway-spend")  # type: ignore[attr-defined]
    try:
        yield ledger
    finally:
        ledger.close()
        bundle.close()


def _kept(ledger: GatewayLedger) -> tuple[list[str], int]:
    """The scopes the ledger keeps (by name; ``EVER``'s left out) and its request rows,
    counted in the store itself."""
    if isinstance(ledger, SQLiteGatewayLedger):
        with contextlib.closing(sqlite3.connect(ledger.path)) as conn:
            scopes = [r[0] for r in conn.execute("SELECT scope FROM backstay_gateway_scopes")]
            rows = conn.execute("SELECT count(*) FROM backstay_gateway_open").fetchone()[0]
        return sorted(s for s in scopes if s != EVER), int(rows)
    assert isinstance(ledger, RedisGatewayLedger)
    prefix = ledger.scope_key("")
    keys = ledger.keys()
    client = ledger._conn.client
    scoped = [k for k in keys if k.startswith(prefix)]
    fields = sum(int(client.hlen(k)) - 1 for k in scoped)  # each: its totals and its rows
    assert set(keys) - set(scoped) <= {prefix[: -len("scope:")] + n for n in ("ever", "until")}
    return sorted(k[len(prefix) :] for k in scoped), fields


def _settled(ledger: GatewayLedger) -> tuple[list[str], int]:
    """``_kept`` once no request is in flight (a stream settles just after its client has
    its last byte), waiting at most ``SETTLE_WAIT_S``."""
    deadline = time.monotonic() + SETTLE_WAIT_S
    kept = _kept(ledger)
    while kept[1] and time.monotonic() < deadline:
        time.sleep(0.01)
        kept = _kept(ledger)
    return kept


def _send(client: anthropic.Anthropic, number: int) -> None:
    if number % STREAMED_EVERY:
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
        return
    with client.messages.stream(
        model=ANTHROPIC_MODEL,
        max_tokens=20,
        messages=MESSAGES,  # type: ignore[arg-type]
    ) as stream:
        assert stream.get_final_text()


def _reported(log: Path) -> list[int]:
    """The tokens each answer reported, in the provider's request log, in order."""
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [
        int(e["input_tokens"]) + int(e["output_tokens"])
        for e in entries
        if e.get("status") == 200 and "input_tokens" in e
    ]


def test_the_ledger_keeps_a_scope_not_a_row_per_request_and_forgets_an_ended_window(
    tmp_path: Path, location: StoreLocation
) -> None:
    clock = Clock(START)
    budget = GatewayBudget(tokens=10_000_000, window=BudgetWindow.HOUR)
    log = tmp_path / "requests.jsonl"
    with _ledger(location, tmp_path) as ledger:
        spending = GatewaySpending(budget, ledger, table_price({}), clock=clock)
        with FakeProvider(Scenario(), log_path=log) as fake:
            settings = GatewaySettings(
                port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url)
            )
            with (
                Gateway(settings, spending=spending) as gateway,
                anthropic_client(gateway.url) as client,
            ):
                for number in range(REQUESTS):
                    _send(client, number)
                first = _settled(ledger)
                first_total = ledger.overview()
                # The next hour begins: the ended window is kept for its margin (its
                # last requests may settle); the hour after, a request of its new
                # window forgets the window whose margin has passed.
                clock.now = START + 1800 + 1
                _send(client, 1)
                both = _settled(ledger)
                clock.now = START + 1800 + WINDOW_MARGIN_S + 1
                _send(client, 1)
                last = _settled(ledger)
                last_total = ledger.overview()
        used = _reported(log)
        ttl = _ttl(ledger, "gateway@hour:2026-11-28T12")
    assert first == (["gateway@hour:2026-11-28T10"], 0)
    assert both == (["gateway@hour:2026-11-28T10", "gateway@hour:2026-11-28T11"], 0)
    assert last == (["gateway@hour:2026-11-28T11", "gateway@hour:2026-11-28T12"], 0)
    # The totals are what the provider's answers reported, every request's kept in EVER.
    total, window = first_total
    assert window.spent.tokens == total.spent.tokens
    assert (total.reserved, window.reserved) == (Spend(), Spend())
    assert window.spent.tokens == sum(used[:REQUESTS]) > 0
    assert [t.spent.tokens for t in last_total[1:]] == used[-2:]
    assert last_total[0].spent.tokens == sum(used)
    if ttl is not None:  # Redis: the window's key expires with its margin after its end
        ends = _dt.datetime(2026, 11, 28, 13, tzinfo=_dt.UTC).timestamp()
        assert ttl == pytest.approx(ends + WINDOW_MARGIN_S - clock.now, abs=2)


def _ttl(ledger: GatewayLedger, scope: str) -> float | None:
    """The seconds ``scope``'s Redis key has left (``None``: a SQLite ledger)."""
    if not isinstance(ledger, RedisGatewayLedger):
        return None
    client = ledger._conn.client
    return float(client.pttl(ledger.scope_key(scope))) / 1000


def test_requests_in_flight_are_held_exactly_while_others_fold_into_the_totals(
    tmp_path: Path, location: StoreLocation
) -> None:
    budget = SpendBudget(usd=1.0)
    at: dict[str, Any] = {"now": START, "until": START + 3600}
    with _ledger(location, tmp_path) as ledger:
        for n in range(30):
            assert ledger.reserve(f"r{n}", "w", budget, Spend(usd=0.01), **at) is None
        for n in range(0, 30, 2):  # half settle, at a tenth of a cent each
            ledger.settle(f"r{n}", Spend(usd=0.001), scope="w", prompt_tokens=0, output_tokens=0)
        total, scope = ledger.overview()
        kept = _kept(ledger)
        refused = ledger.reserve("big", "w", budget, Spend(usd=0.9), **at)
    assert kept == (["w"], 15)
    # Exact: 15 x 0.001 spent, 15 x 0.01 held, each rounded once from exact fractions.
    assert scope.spent.usd == float(15 * Fraction(0.001))
    assert scope.reserved.usd == float(15 * Fraction(0.01))
    assert total.spent == scope.spent
    assert total.reserved == scope.reserved
    assert refused is not None  # 0.015 + 0.15 + 0.9 > 1


def test_a_ledger_that_does_not_answer_gets_the_client_a_503_unsent(tmp_path: Path) -> None:
    server = start_redis()
    log = tmp_path / "requests.jsonl"
    try:
        location = parse_store(f"{server.url}?namespace=unreachable")
        bundle = open_stores(location, state_dir=tmp_path)
        ledger: GatewayLedger = bundle.spend.beside("gateway-spend")  # type: ignore[attr-defined]
        spending = GatewaySpending(GatewayBudget(tokens=100_000), ledger, table_price({}))
        with FakeProvider(Scenario(), log_path=log) as fake:
            settings = GatewaySettings(
                port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url)
            )
            with Gateway(settings, spending=spending) as gateway, capture_events() as events:
                with anthropic_client(gateway.url) as client:
                    client.messages.create(model=ANTHROPIC_MODEL, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]
                    server.stop()
                    with pytest.raises(anthropic.InternalServerError) as raised:
                        client.with_options(max_retries=0).messages.create(
                            model=ANTHROPIC_MODEL,
                            max_tokens=20,
                            messages=MESSAGES,  # type: ignore[arg-type]
                        )
                with (
                    openai_client(gateway.url) as other,
                    pytest.raises(openai.InternalServerError) as openai_raised,
                ):
                    other.with_options(max_retries=0).chat.completions.create(
                        model=OPENAI_MODEL,
                        messages=MESSAGES,  # type: ignore[arg-type]
                    )
            requests = fake.stats().requests
        bundle.close()
    finally:
        server.stop()
    assert raised.value.status_code == 503
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "overloaded_error"
    message = body["error"]["message"]
    assert message.startswith("backstay gateway: budget_unavailable: the spending budget's")
    assert f"the shared store {location.display} does not answer" in message
    assert "the request was not sent" in message
    assert raised.value.response.headers["retry-after"] == "1"
    assert openai_raised.value.status_code == 503
    assert requests == 1  # only the one before the store went
    unreachable = events.named("budget.unreachable")
    assert [e.stage for e in unreachable] == ["reserve", "reserve"]  # type: ignore[attr-defined]
    assert CANARY_KEY not in message + repr(list(events))


class _SettleFails(MemoryRows):
    """Rows whose settlements fail, as a store gone between a reservation and its end."""

    def settle(self, request_id: str, charged: Spend, **_: Any) -> None:
        del request_id, charged
        raise ConnectionError("the store went away")


def test_an_answer_whose_settlement_fails_is_relayed_and_told(tmp_path: Path) -> None:
    spending = GatewaySpending(GatewayBudget(tokens=100_000), _SettleFails(), table_price({}))
    with FakeProvider(Scenario(), log_path=tmp_path / "requests.jsonl") as fake:
        settings = GatewaySettings(port=0, policy=FAST_POLICY, upstreams=Upstreams.all(fake.url))
        with (
            Gateway(settings, spending=spending) as gateway,
            capture_events() as events,
            anthropic_client(gateway.url) as client,
        ):
            for number in (1, STREAMED_EVERY):  # a plain answer, then a stream
                _send(client, number)
            deadline = time.monotonic() + SETTLE_WAIT_S
            while len(events.named("budget.unreachable")) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
    told = events.named("budget.unreachable")
    assert [e.stage for e in told] == ["settle", "settle"]  # type: ignore[attr-defined]
    assert all("the store went away" in e.reason for e in told)  # type: ignore[attr-defined]
