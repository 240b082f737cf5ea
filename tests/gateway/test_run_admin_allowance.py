"""A run's allowance over a shared gateway's admin API (``backstay.gateway.run_admin``):
``GET /_backstay/runs/{token}`` says what the run holds, ``PUT …/allowance`` raises its
grant (authenticated as the other admin calls; monotonic), and the client's keeper thread
raises it while the run goes on (``backstay.gateway.run_topups``), with a
``run.allowance_raised`` event. An in-process gateway without a spend ledger
(``shared_runs(None)``); the budget handed to the client is a small stand-in for the
engine's ``AttemptBudget``."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any, Final

import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY

from backstay.cli._gateway_runs import shared_runs
from backstay.engine.run_allowance import allowance_json
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.run_admin import RUNS_PATH, RemoteRunGateway
from backstay.gateway.run_topups import RunAllowanceRaised
from backstay.policy.spend import BATCH_SCOPE, ScopeTotals, Spend, SpendBudget
from backstay.testing import capture_events

GATEWAY_TOKEN: Final = "shared-gateway-allowance-token-0123456789"
BATCH: Final = ScopeTotals(
    scope=BATCH_SCOPE, budget=SpendBudget(tokens=9_000), spent=Spend(), reserved=Spend()
)


class _Budget:
    """Stands in for an ``AttemptBudget``: granted 1,000 tokens, each top-up 1,000 more."""

    def __init__(self) -> None:
        self.granted = 1_000
        self.states: list[Mapping[str, Any]] = []
        self.refusal = None

    def shared(self) -> dict[str, Any]:
        return {
            "operation_id": "w:t0",
            "task_id": "t0",
            "adapter": "claude-code",
            "model": ANTHROPIC_MODEL,
            "held": {"usd": 0.0, "tokens": 0},
        }

    def allowance(self, parallel: int) -> dict[str, Any]:
        assert parallel == 3
        return {"allowance": allowance_json([BATCH]), "granted": {"tokens": self.granted}}

    def top_up(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        self.states.append(state)
        if self.granted >= 3_000:
            return None
        self.granted += 1_000
        return {"allowance": allowance_json([BATCH]), "granted": {"tokens": self.granted}}


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    settings = GatewaySettings(
        port=0, upstreams=Upstreams.all("http://127.0.0.1:9"), token=GATEWAY_TOKEN
    )
    with Gateway(settings, runs=shared_runs(None)) as started:
        yield started


def _call(url: str, method: str, body: object = None, token: str = GATEWAY_TOKEN) -> Any:
    request = urllib.request.Request(  # noqa: S310 - loopback
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"x-backstay-gateway-token": token, "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _open(remote: RemoteRunGateway, budget: object) -> str:
    return remote.open_run(
        provider="anthropic",
        key=CANARY_KEY,
        upstream=None,
        task="w:t0",
        attempt="w:t0/1",
        traceparent=None,
        model=ANTHROPIC_MODEL,
        budget=budget,  # type: ignore[arg-type]
    )


def test_a_runs_grant_is_read_and_raised_over_the_admin_api(gateway: Gateway) -> None:
    remote = RemoteRunGateway(gateway.url, GATEWAY_TOKEN, parallel=3, top_up_s=3600.0)
    token = _open(remote, _Budget())
    url = f"{gateway.url}{RUNS_PATH}/{token}"
    status, shown = _call(url, "GET")
    assert status == 200
    assert shown["requests"] == 0
    assert shown["allowance"]["granted"] == {"usd": None, "tokens": 1_000}
    assert shown["allowance"]["used"] == {"usd": 0.0, "tokens": 0}
    raised = {"allowance": allowance_json([BATCH]), "granted": {"tokens": 2_500}}
    for _ in range(2):  # idempotent
        status, state = _call(url + "/allowance", "PUT", raised)
        assert (status, state["granted"]["tokens"]) == (200, 2_500)
    status, state = _call(url + "/allowance", "PUT", {**raised, "granted": {"tokens": 10}})
    assert (status, state["granted"]["tokens"]) == (200, 2_500)  # never lowered
    status, error = _call(url + "/allowance", "PUT", {"granted": {"tokens": 10}})
    assert status == 400
    assert "body" in error["error"]
    assert _call(url, "GET", token="not-the-gateway-token-at-all")[0] == 401
    assert _call(url + "/allowance", "PUT", raised, token="wrong-token-0123456789")[0] == 401
    assert remote.close_run(token) is not None
    assert _call(url, "GET")[0] == 404
    assert _call(url + "/allowance", "PUT", raised)[0] == 404


def test_a_run_without_an_allowance_cannot_be_raised(gateway: Gateway) -> None:
    remote = RemoteRunGateway(gateway.url, GATEWAY_TOKEN)
    token = _open(remote, None)
    url = f"{gateway.url}{RUNS_PATH}/{token}"
    status, shown = _call(url, "GET")
    assert status == 200
    assert "allowance" not in shown
    assert remote.run_state(token) is None
    raised = {"allowance": [], "granted": {"tokens": 1}}
    assert _call(url + "/allowance", "PUT", raised)[0] == 409
    remote.close_run(token)


def test_the_keeper_raises_the_grant_while_the_run_goes_on(gateway: Gateway) -> None:
    budget = _Budget()
    remote = RemoteRunGateway(gateway.url, GATEWAY_TOKEN, parallel=3, top_up_s=0.02)
    with capture_events() as events:
        token = _open(remote, budget)
        for _ in range(500):  # bounded: until the grant stops growing
            state = remote.run_state(token)
            if state is not None and state["granted"]["tokens"] == 3_000:
                break
            time.sleep(0.01)
        looks = len(budget.states)
        remote.close_run(token)
    assert budget.states[0]["granted"]["tokens"] == 1_000
    raises = [e for e in events if isinstance(e, RunAllowanceRaised)]
    assert [(e.operation, e.task, e.attempt, e.tokens) for e in raises] == [
        ("w:t0", "w:t0", "w:t0/1", 2_000),
        ("w:t0", "w:t0", "w:t0/1", 3_000),
    ]
    # No look once the run is closed.
    time.sleep(0.1)
    assert len(budget.states) <= looks + 1
