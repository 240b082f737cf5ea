"""A rate limit of one API key (``anthropic#<fingerprint>`` in ``retry.rate_limits``) paces
the engine's API tasks that send that key, at the limiter the gateway paces that key's
requests at (``backstay.policy.limit_keys.key_limit``): two keys in one batch each take
their own limit, and an API task and a gateway request with one key share one bucket, in
this process (SQLite store) and in Redis. The Anthropic adapter through the official SDK,
against the fake provider (one per key: its count is the key's)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx
import pytest
from tests.gateway.helpers import FAST_POLICY
from tests.gateway.limits_support import REQUESTS

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.cli.claude_code import ClaudeCodeAdapter
from backstay.adapters.cli.codex import CodexAdapter
from backstay.adapters.gateway_wiring import current_gateway
from backstay.cli._gateway_runs import agent_gateway, pacing_limiters
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.limits import RequestPaced
from backstay.policy.limit_keys import key_fingerprint, key_limit
from backstay.policy.ratelimit import RateLimitSettings
from backstay.policy.retry import RetryPolicy
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.testing import capture_events

MODEL: Final = "claude-sonnet-4-6"
KEY_A: Final = "sk-ant-api03-KEYAengine0123456789abcdefABCDEFghijklmnop"
KEY_B: Final = "sk-ant-api03-KEYBengine0123456789abcdefABCDEFghijklmnop"
FP_A: Final = key_fingerprint(KEY_A)
FP_B: Final = key_fingerprint(KEY_B)
# One request a second, no burst beyond it: a second request waits about a second.
ONE_PER_S: Final = RateLimitSettings(requests_per_minute=60.0, burst_s=1.0)
# One request each 3 s: what one caller took, the next waits for (the gateway's test).
ONE_PER_3S: Final = RateLimitSettings(requests_per_minute=20.0, burst_s=3.0)
ROOMY: Final = RateLimitSettings(requests_per_minute=6000.0, burst_s=1.0)
TIMEOUT_S: Final = 20.0


@pytest.fixture(params=["sqlite", "redis"])
def location(request: pytest.FixtureRequest) -> Iterator[StoreLocation | None]:
    if request.param == "sqlite":
        yield None
    else:
        yield request.getfixturevalue("redis_location")


def _engine(tmp_path: Path, location: StoreLocation | None, limits: dict[str, object]) -> Engine:
    state = tmp_path / "state"
    state.mkdir()
    stores = None if location is None else open_stores(location, state_dir=state)
    return Engine(
        state,
        adapters={"anthropic-api": AnthropicApiAdapter()},
        breaker=None,
        rate_limits=limits,  # type: ignore[arg-type]
        stores=stores,
    )


def _spec(tmp_path: Path, name: str, key: str, url: str) -> TaskSpec:
    return TaskSpec(
        workflow_id="keys",
        task_id=name,
        adapter="anthropic-api",
        model=MODEL,
        workspace=tmp_path,
        timeout_s=TIMEOUT_S,
        prompt="Say hi",
        env={"ANTHROPIC_API_KEY": key},
        inherit_env=False,
        config={"base_url": url, "max_tokens": 8},
        policy=RetryPolicy(name="once", max_attempts=1),
    )


def test_the_key_rule_is_one_for_a_provider_a_model_and_no_key() -> None:
    keys = {f"anthropic#{FP_A}", f"openai#{FP_A}/gpt-5", "anthropic"}
    assert key_limit(keys, provider="anthropic", model=MODEL, credential=KEY_A) == (
        f"anthropic#{FP_A}"
    )
    assert key_limit(keys, provider="openai", model="gpt-5", credential=KEY_A) == f"openai#{FP_A}"
    # Another model of that key, another key, no key: the provider's limiter.
    assert key_limit(keys, provider="openai", model="gpt-4o", credential=KEY_A) is None
    assert key_limit(keys, provider="anthropic", model=MODEL, credential=KEY_B) is None
    assert key_limit(keys, provider="anthropic", model=MODEL, credential=None) is None


def test_two_keys_in_one_batch_each_take_their_own_limit(
    tmp_path: Path, location: StoreLocation | None
) -> None:
    limits = {f"anthropic#{FP_A}": ONE_PER_S, f"anthropic#{FP_B}": ROOMY, "anthropic": ONE_PER_S}
    engine = _engine(tmp_path, location, limits)
    try:
        with FakeProvider(Scenario()) as fake_a, FakeProvider(Scenario()) as fake_b:
            specs = [_spec(tmp_path, f"a{i}", KEY_A, fake_a.url) for i in range(2)]
            specs += [_spec(tmp_path, f"b{i}", KEY_B, fake_b.url) for i in range(3)]
            summary = engine.run_sync(specs)
            counts = (fake_a.stats().requests, fake_b.stats().requests)
        assert summary.by_state[TaskState.SUCCEEDED] == 5
        assert counts == (2, 3)
        assert engine.pacing is not None
        registry = engine.pacing.limiters
        assert registry is not None
        # Key A's limit is spent by its two tasks; key B's three took none of it, nor of
        # the provider's (one request a second: three tasks there would have spent it).
        assert registry.limiter_for(f"anthropic#{FP_A}", MODEL).reserve() > 0.0
        assert registry.limiter_for(f"anthropic#{FP_B}", MODEL).reserve() == 0.0
        assert registry.limiter_for("anthropic", MODEL).reserve() == 0.0
    finally:
        engine.close()


def _post(url: str, key: str) -> int:
    path, headers, body = REQUESTS["anthropic"]
    sent = {**headers, "x-api-key": key}
    return httpx.post(url + path, json=body, headers=sent, timeout=TIMEOUT_S).status_code


def test_an_api_task_and_a_gateway_request_with_one_key_share_one_bucket(
    tmp_path: Path, location: StoreLocation | None
) -> None:
    limits = {f"anthropic#{FP_A}": ONE_PER_3S}
    engine = _engine(tmp_path, location, limits)
    try:
        assert engine.pacing is not None
        registry = engine.pacing.limiters
        assert registry is not None
        if location is not None:  # another handle on the same Redis, as another process has
            registry = engine.stores.rate_limiter_registry(dict(registry.limits))  # type: ignore[attr-defined]
        with FakeProvider(Scenario()) as fake, capture_events() as events:
            settings = GatewaySettings(
                port=0, upstreams=Upstreams.all(fake.url), policy=FAST_POLICY
            )
            with Gateway(settings, limiters=registry) as gateway:
                summary = engine.run_sync([_spec(tmp_path, "api", KEY_A, fake.url)])
                statuses = [_post(gateway.url, KEY_A)]
        assert summary.by_state[TaskState.SUCCEEDED] == 1
        assert statuses == [200]
        paced = [e for e in events if isinstance(e, RequestPaced)]
        # The gateway's request waited for what the API task took from the key's bucket.
        assert [e.limiter for e in paced] == [f"anthropic#{FP_A}/{MODEL}"]
        assert paced[0].wait_s > 0.0
        assert all(KEY_A not in repr(e) for e in events)
    finally:
        engine.close()


def test_the_gateway_of_a_batch_paces_at_the_engines_limiters(
    tmp_path: Path, location: StoreLocation | None
) -> None:
    """``backstay batch`` / ``resume`` hand their gateway the engine's limiters
    (``pacing_limiters``): a CLI session's request waits for what an API task with its
    key took; the CLI's attempt itself is not paced by the engine (the gateway paces each
    of its requests)."""
    limits = {f"anthropic#{FP_A}": ONE_PER_3S, "anthropic": ROOMY}
    engine = _engine(tmp_path, location, limits)
    cli_spec = dataclasses.replace(
        _spec(tmp_path, "cli", KEY_A, "http://127.0.0.1:9"), adapter="claude-code", config={}
    )
    try:
        assert engine.pacing is not None
        assert engine.pacing.limiter(cli_spec, ClaudeCodeAdapter()) is not None
        with FakeProvider(Scenario()) as fake, capture_events() as events:
            summary = engine.run_sync([_spec(tmp_path, "api", KEY_A, fake.url)])
            with agent_gateway(
                ["claude-code"], rate_limits=limits, limiters=pacing_limiters(engine)
            ) as url:
                gateway = current_gateway()
                assert url is not None
                assert gateway is not None
                assert engine.pacing.limiter(cli_spec, ClaudeCodeAdapter()) is None
                token = gateway.open_run(
                    provider="anthropic",
                    key=KEY_A,
                    upstream=fake.url,
                    task="op-cli",
                    attempt=None,
                    traceparent=None,
                    model=MODEL,
                )
                statuses = [_post(url, token)]
        assert summary.by_state[TaskState.SUCCEEDED] == 1
        assert statuses == [200]
        paced = [e for e in events if isinstance(e, RequestPaced)]
        assert [(e.limiter, e.operation) for e in paced] == [
            (f"anthropic#{FP_A}/{MODEL}", "op-cli")
        ]
        assert paced[0].wait_s > 0.0
    finally:
        engine.close()


def test_a_cli_attempt_sent_straight_to_its_provider_is_paced_by_the_engine(
    tmp_path: Path,
) -> None:
    """The engine leaves an agent CLI's pacing to the gateway only where the attempt goes
    through it (``gateway_wiring.through_gateway``, as ``open_run`` decides): a Codex task
    whose base URL the gateway cannot stand in for (no ``/v1``: an Azure deployment) is
    sent straight to its provider, so the engine paces its attempt."""
    engine = _engine(tmp_path, None, {"openai": ROOMY})
    straight = TaskSpec(
        workflow_id="keys",
        task_id="azure",
        adapter="codex",
        model="gpt-5",
        workspace=tmp_path,
        timeout_s=TIMEOUT_S,
        prompt="Say hi",
        env={"OPENAI_API_KEY": "sk-straight-0123456789abcdef"},
        inherit_env=False,
        config={"base_url": "https://example.openai.azure.com/openai/deployments/gpt-5"},
    )
    proxied = dataclasses.replace(straight, task_id="proxied", config={})
    try:
        assert engine.pacing is not None
        with agent_gateway(["codex"], rate_limits={"openai": ROOMY}) as url:
            assert url is not None
            assert engine.pacing.limiter(proxied, CodexAdapter()) is None
            assert engine.pacing.limiter(straight, CodexAdapter()) is not None
    finally:
        engine.close()
