"""A rate limit of one API key: ``anthropic#<fingerprint>`` (or ``provider/model#…``) in
``retry.rate_limits`` paces the gateway's requests sent with that key — a client's own or a
run's real key — at a limiter of their own, named by the key's fingerprint, never the key;
every other key's requests go to the provider's limiter (fake provider, real HTTP)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

import httpx
import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, FAST_POLICY, TIMEOUT_S
from tests.gateway.limits_support import REQUESTS
from tests.gateway.test_cli import WAIT_S, _command

from backstay.adapters.gateway_wiring import current_gateway
from backstay.cli._gateway_runs import agent_gateway
from backstay.config import load_config
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Scenario
from backstay.gateway import Gateway, GatewaySettings, Upstreams
from backstay.gateway.limits import RequestPaced
from backstay.gateway.runs import RunTicket, RunTokens
from backstay.policy.limit_keys import credential_limits, key_fingerprint, provider_limits
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.ratelimit import RateLimitSettings
from backstay.testing import capture_events

OTHER_KEY: Final = "sk-ant-api03-OTHERgateway0123456789abcdefABCDEFghijkl"
# One request a second and no burst beyond it: a second request waits about a second.
ONE_PER_S: Final = RateLimitSettings(requests_per_minute=60.0, burst_s=1.0)


def test_a_keys_limit_is_renamed_for_the_registrys_lookup() -> None:
    fp = key_fingerprint(CANARY_KEY)
    assert len(fp) == 12
    assert CANARY_KEY not in fp
    renamed = credential_limits(
        {"anthropic": 1, f"anthropic#{fp}": 2, f"openai/gpt-5#{fp}": 3, "gemini/x": 4}
    )
    assert renamed == {"anthropic": 1, f"anthropic#{fp}": 2, f"openai#{fp}/gpt-5": 3, "gemini/x": 4}
    with pytest.raises(ConfigError, match="12 lowercase hex digits"):
        credential_limits({"anthropic#NOT-A-FINGERPRINT": 1})


def test_the_fingerprint_is_the_one_the_redis_limiters_key_by() -> None:
    from backstay.store.redis.limiter import credential_fingerprint  # noqa: PLC0415

    assert key_fingerprint(CANARY_KEY) == credential_fingerprint(CANARY_KEY)


def test_the_configuration_takes_a_keys_limit_and_refuses_a_bad_fingerprint(
    tmp_path: Path,
) -> None:
    fp = key_fingerprint(CANARY_KEY)
    good = tmp_path / "good.yaml"
    good.write_text(
        f"retry:\n  rate_limits:\n    'anthropic#{fp}': {{requests_per_minute: 50}}\n"
        f"    'openai/gpt-5#{fp}': {{tokens_per_minute: 9000}}\n",
        encoding="utf-8",
    )
    assert sorted(load_config(good).rate_limits) == [f"anthropic#{fp}", f"openai/gpt-5#{fp}"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("retry:\n  rate_limits:\n    'anthropic#abc': {requests_per_minute: 5}\n")
    with pytest.raises(ConfigError, match=r"retry\.rate_limits"):
        load_config(bad)


def _post(url: str, key: str) -> int:
    path, headers, body = REQUESTS["anthropic"]
    sent = {**headers, "x-api-key": key}
    return httpx.post(url + path, json=body, headers=sent, timeout=TIMEOUT_S).status_code


def test_requests_with_a_limited_key_wait_at_its_own_limiter_and_others_do_not() -> None:
    fp = key_fingerprint(CANARY_KEY)
    limits = credential_limits(provider_limits({f"anthropic#{fp}": ONE_PER_S}))
    runs = RunTokens()
    run_token = runs.open(RunTicket(provider="anthropic", key=CANARY_KEY, task="op-key"))
    with FakeProvider(Scenario()) as fake, capture_events() as events:
        settings = GatewaySettings(port=0, upstreams=Upstreams.all(fake.url), policy=FAST_POLICY)
        with Gateway(settings, limiters=RateLimiterRegistry(limits)) as gateway:
            # The other key first, twice: its provider's limiter has no limit.
            others = [_post(gateway.url, OTHER_KEY) for _ in range(2)]
            limited = [_post(gateway.url, CANARY_KEY) for _ in range(2)]
        with Gateway(settings, runs=runs, limiters=RateLimiterRegistry(limits)) as gateway:
            # A run's requests are paced by its real key, not by its token.
            runs_own = [_post(gateway.url, run_token) for _ in range(2)]
    assert others + limited + runs_own == [200] * 6
    paced = [e for e in events if isinstance(e, RequestPaced)]
    keyed = f"anthropic#{fp}/{ANTHROPIC_MODEL}"
    assert [(e.limiter, e.operation) for e in paced] == [
        (keyed, f"gateway:anthropic/{ANTHROPIC_MODEL}"),
        (keyed, "op-key"),
    ]
    assert all(e.wait_s > 0.0 for e in paced)
    assert all(CANARY_KEY not in repr(e) for e in events)


def test_the_gateway_command_prints_a_keys_fingerprint() -> None:
    env = {**os.environ, "S5_KEY": CANARY_KEY}
    done = subprocess.run(
        _command("--fingerprint-env", "S5_KEY"),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
        env=env,
    )
    assert (done.returncode, done.stdout) == (0, key_fingerprint(CANARY_KEY) + "\n")
    env.pop("S5_KEY")
    unset = subprocess.run(
        _command("--fingerprint-env", "S5_KEY"),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
        env=env,
    )
    assert unset.returncode == 2
    assert "$S5_KEY is not set" in unset.stderr
    assert "Traceback" not in unset.stderr


def test_the_gateway_of_agent_runs_paces_at_the_configurations_limits() -> None:
    """``backstay run`` / ``batch`` / ``resume`` hand their gateway ``retry.rate_limits``:
    a run's requests wait at the limit of its real key."""
    fp = key_fingerprint(CANARY_KEY)
    with (
        FakeProvider(Scenario()) as fake,
        capture_events() as events,
        agent_gateway(["claude-code"], rate_limits={f"anthropic#{fp}": ONE_PER_S}) as url,
    ):
        gateway = current_gateway()
        assert gateway is not None
        assert url is not None
        token = gateway.open_run(
            provider="anthropic",
            key=CANARY_KEY,
            upstream=fake.url,
            task="op-run",
            attempt=None,
            traceparent=None,
            model=ANTHROPIC_MODEL,
        )
        statuses = [_post(url, token) for _ in range(2)]
    assert statuses == [200, 200]
    paced = [e for e in events if isinstance(e, RequestPaced)]
    assert [(e.limiter, e.operation) for e in paced] == [
        (f"anthropic#{fp}/{ANTHROPIC_MODEL}", "op-run")
    ]
