"""The gateway paces every request at the rate limiter of its provider and model, the one
API tasks and CLI sessions of that provider use too: under a provider's limit its requests
wait their turn instead of collecting 429s (fake provider, real HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.adapters.support import CANARY_KEY as TASK_KEY
from tests.gateway.helpers import ANTHROPIC_MODEL, FAST_POLICY, claude
from tests.gateway.limits_support import drain, send

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.limits import RequestPaced
from backstay.gateway.runs import RunTicket, RunTokens
from backstay.policy.ratelimit import RateLimitSettings
from backstay.testing import FakeClock, capture_events

RPM: Final = 360
REQUESTS: Final = 30
# One request a second and no burst beyond it: a second request waits a second.
ONE_PER_S: Final = RateLimitSettings(requests_per_minute=60.0, burst_s=1.0)


def _settings(url: str) -> GatewaySettings:
    return GatewaySettings(port=0, upstreams=Upstreams.all(url), policy=FAST_POLICY)


def test_requests_wait_their_turn_at_a_providers_used_up_limit(tmp_path: Path) -> None:
    # The provider's bucket is empty (others used it): 30 requests at 6 a second from 8
    # threads. Unpaced, most of them would be refused.
    scenario = Scenario(rate_limit=RateLimit(requests_per_minute=RPM))
    with FakeProvider(scenario) as fake:
        drain(fake)
        before = fake.stats()
        with capture_events() as events, Gateway(_settings(fake.url)) as gateway:
            statuses = send([gateway.url], REQUESTS)
            limiter = gateway.limits.registry.limiter_for("anthropic", ANTHROPIC_MODEL)
        after = fake.stats()
    assert statuses == [200] * REQUESTS
    sent = after.requests - before.requests
    refused = after.by_status.get(429, 0) - before.by_status.get(429, 0)
    assert sent - refused == REQUESTS
    assert refused <= 0.05 * sent
    paced = [e for e in events if isinstance(e, RequestPaced)]
    # How many had to wait depends on the machine: a request that arrives after its slot
    # goes at once. That some waited, and (above) that almost none were refused, does not.
    assert paced
    assert {e.limiter for e in paced} == {f"anthropic/{ANTHROPIC_MODEL}"}
    assert all(e.wait_s > 0.0 and e.provider == "anthropic" for e in paced)
    # The limit was learned from the provider's headers: RPM a minute.
    snapshot = limiter.snapshot()
    assert snapshot.requests is not None
    assert snapshot.requests.refill_per_s == pytest.approx(RPM / 60.0)


def test_listings_and_token_counts_are_not_paced(tmp_path: Path) -> None:
    with FakeProvider(Scenario()) as fake, Gateway(_settings(fake.url)) as gateway:
        limits = gateway.limits
        import httpx  # noqa: PLC0415 - this test only

        httpx.get(f"{gateway.url}/v1/models", headers={"anthropic-version": "2023-06-01"})
        httpx.post(
            f"{gateway.url}/v1/messages/count_tokens",
            json={"model": ANTHROPIC_MODEL, "messages": [{"role": "user", "content": "hi"}]},
            headers={"anthropic-version": "2023-06-01"},
        )
        made = dict(getattr(limits.registry, "limiters")())  # noqa: B009 - RateLimiterRegistry
    assert made == {}


def test_an_api_task_waits_behind_a_gateway_request_at_its_providers_one_limiter(
    tmp_path: Path,
) -> None:
    # An old adapter-named key (claude-code) limits the provider: the API task of the
    # engine and the gateway's request meet at the limiter anthropic/<model>.
    clock = FakeClock()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeProvider(Scenario()) as fake:
        spec = TaskSpec(
            workflow_id="shared",
            task_id="t1",
            adapter="anthropic-api",
            model=ANTHROPIC_MODEL,
            workspace=workspace,
            timeout_s=20.0,
            prompt="Say hello",
            env={"ANTHROPIC_API_KEY": TASK_KEY},
            config={"base_url": fake.url},
        )
        with Engine(
            tmp_path / "state",
            adapters={"anthropic-api": AnthropicApiAdapter()},
            env={"ANTHROPIC_API_KEY": TASK_KEY},
            clock=clock,
            rate_limits={"claude-code": ONE_PER_S},
        ) as engine:
            assert engine.pacing is not None
            limiters = engine.pacing.limiters
            assert limiters is not None
            with Gateway(_settings(fake.url), limiters=limiters) as gateway:
                claude(gateway.url)  # takes the one request the limiter had
                summary = engine.run_sync([spec])
                shared = gateway.limits.registry.limiter_for("anthropic", ANTHROPIC_MODEL)
            assert shared is limiters.limiter_for("anthropic", ANTHROPIC_MODEL)
    assert summary.count(TaskState.SUCCEEDED) == 1
    assert clock.sleeps[:1] == [pytest.approx(1.0, abs=0.01)]


def test_a_runs_paced_request_is_an_event_of_its_task(tmp_path: Path) -> None:
    # A run's request.paced is told under its task's operation, as the batch's event log
    # keeps it; a request of no run under the gateway's own.
    runs = RunTokens()
    token = runs.open(RunTicket(provider="anthropic", key=TASK_KEY, task="op-paced"))
    scenario = Scenario(rate_limit=RateLimit(requests_per_minute=RPM))
    with FakeProvider(scenario) as fake:
        drain(fake)
        with (
            capture_events() as events,
            Gateway(_settings(fake.url), runs=runs) as gateway,
            anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0) as client,
        ):
            for _ in range(4):
                client.messages.create(
                    model=ANTHROPIC_MODEL,
                    max_tokens=20,
                    messages=[{"role": "user", "content": "hi"}],
                )
    paced = [e for e in events if isinstance(e, RequestPaced)]
    assert paced
    assert {e.operation for e in paced} == {"op-paced"}
