"""The engine's pacing learns from the provider's answers: the API adapters record the
rate-limit headers of each attempt's answer, and the engine feeds them to the attempt's
limiter (``backstay.engine.pacing``), in memory (SQLite store) and in Redis. The witness
is the Anthropic adapter, through the official SDK, against the fake provider enforcing
a lower rate than the one configured."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from tests.adapters.support import CANARY_KEY

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.engine import Engine, TaskSpec, TaskState
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.fakeprovider.scenario import RateLimit
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.policy.retry import RetryPolicy
from backstay.store.location import StoreLocation
from backstay.store.open import open_stores
from backstay.store.redis import RedisRateLimiter

MODEL: Final = "claude-haiku-4-5"
ENV: Final = {"ANTHROPIC_API_KEY": CANARY_KEY}
# Configured far above what the provider allows: only its headers can say 30 a minute.
CONFIGURED: Final = RateLimitSettings(requests_per_minute=6000, burst_s=1.0)
PROVIDER_RPM: Final = 30


def _specs(tmp_path: Path, url: str, count: int) -> list[TaskSpec]:
    return [
        TaskSpec(
            workflow_id="paced",
            task_id=f"t{i}",
            adapter="anthropic-api",
            model=MODEL,
            workspace=tmp_path,
            timeout_s=20.0,
            prompt="Say hi",
            env=ENV,
            config={"base_url": url, "max_tokens": 8},
            policy=RetryPolicy(name="once", max_attempts=1),
        )
        for i in range(count)
    ]


def _run(tmp_path: Path, location: StoreLocation | None) -> Engine:
    state = tmp_path / "state"
    state.mkdir()
    stores = None if location is None else open_stores(location, state_dir=state)
    engine = Engine(
        state,
        adapters={"anthropic-api": AnthropicApiAdapter()},
        env=ENV,
        breaker=None,
        rate_limits={"anthropic": CONFIGURED},
        stores=stores,
    )
    scenario = Scenario(rate_limit=RateLimit(requests_per_minute=PROVIDER_RPM))
    with FakeProvider(scenario) as fake:
        summary = engine.run_sync(_specs(tmp_path, fake.url, 2))
    assert summary.by_state[TaskState.SUCCEEDED] == 2
    return engine


def test_an_attempts_answer_teaches_the_in_process_limiter_the_providers_rate(
    tmp_path: Path,
) -> None:
    engine = _run(tmp_path, None)
    try:
        assert engine.pacing is not None
        assert engine.pacing.limiters is not None
        limiter = engine.pacing.limiters.limiter_for("anthropic", MODEL)
        assert isinstance(limiter, RateLimiter)
        requests = limiter.snapshot().requests
        assert requests is not None
        assert requests.refill_per_s == pytest.approx(PROVIDER_RPM / 60.0)
    finally:
        engine.close()


def test_an_attempts_answer_teaches_the_shared_limiter_the_providers_rate(
    tmp_path: Path, redis_location: StoreLocation
) -> None:
    engine = _run(tmp_path, redis_location)
    try:
        assert engine.pacing is not None
        assert engine.pacing.limiters is not None
        limiter = engine.pacing.limiters.limiter_for("anthropic", MODEL)
        assert isinstance(limiter, RedisRateLimiter)
        assert limiter.state()["r_rate"] == pytest.approx(PROVIDER_RPM / 60.0)
    finally:
        engine.close()
