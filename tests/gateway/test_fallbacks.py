"""The gateway's own fallback models (``GatewaySettings.fallbacks``, ``backstay gateway
--fallback MODEL=FALLBACK``): any request for a model whose circuit is open — not only a
run's — moves to that model's fallback, once at most; a run's own fallback model comes
first. Through the official anthropic SDK (its retries off), a real gateway and the fake
provider, whose model is down."""

from __future__ import annotations

import subprocess
import sys
from typing import Final

import anthropic
import pytest
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, FAST_POLICY, MESSAGES

from backstay.breaker import BreakerRegistry, BreakerSettings
from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway import Gateway, GatewaySettings, RequestFellBack, Upstreams
from backstay.testing import capture_events

FALLBACK: Final = "claude-haiku-4-5"
THIRD: Final = "claude-opus-4-1"


def _breakers() -> BreakerRegistry:
    return BreakerRegistry(
        settings=BreakerSettings(
            failure_threshold=2, failure_rate_threshold=None, open_duration_s=3600.0
        )
    )


def _sent(url: str) -> anthropic.types.Message:
    with anthropic.Anthropic(base_url=url, api_key=CANARY_KEY, max_retries=0) as client:
        return client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=20,
            messages=MESSAGES,  # type: ignore[arg-type]
        )


def test_a_request_whose_model_is_down_is_answered_by_its_fallback() -> None:
    """The first request's 529s open its model's circuit and it moves to the fallback in
    the same client request; the next one goes there at once."""
    down = (Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),)
    with capture_events() as events, FakeProvider(Scenario(faults=down), log_path=None) as fake:
        settings = GatewaySettings(
            port=0,
            policy=FAST_POLICY,
            upstreams=Upstreams.all(fake.url),
            fallbacks=((ANTHROPIC_MODEL, FALLBACK),),
        )
        with Gateway(settings, breakers=_breakers()) as gateway:
            first, second = _sent(gateway.url), _sent(gateway.url)
        stats = fake.stats()
    assert (first.model, second.model) == (FALLBACK, FALLBACK)
    assert dict(stats.by_status) == {529: 2, 200: 2}
    fell = [e for e in events if isinstance(e, RequestFellBack)]
    assert [(e.model, e.fallback_model, e.reason, e.task) for e in fell] == [
        (ANTHROPIC_MODEL, FALLBACK, "circuit_opened", None),
        (ANTHROPIC_MODEL, FALLBACK, "circuit_open", None),
    ]


def test_a_request_moves_once_at_most() -> None:
    """Its model and its fallback both down, the fallback's own fallback configured too:
    the request moves once, and is told the fallback's open circuit."""
    down = (
        Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),
        Fault(kind=FaultKind.OVERLOADED, model=FALLBACK),
    )
    with FakeProvider(Scenario(faults=down), log_path=None) as fake:
        settings = GatewaySettings(
            port=0,
            policy=FAST_POLICY,
            upstreams=Upstreams.all(fake.url),
            fallbacks=((ANTHROPIC_MODEL, FALLBACK), (FALLBACK, ANTHROPIC_MODEL)),
        )
        with (
            Gateway(settings, breakers=_breakers()) as gateway,
            pytest.raises(anthropic.APIStatusError) as raised,
        ):
            _sent(gateway.url)
        stats = fake.stats()
    assert raised.value.status_code == 503
    assert f"circuit 'anthropic/{FALLBACK}' is open" in raised.value.message
    assert dict(stats.by_status) == {529: 4}


def test_without_a_fallback_the_open_circuit_is_told() -> None:
    down = (Fault(kind=FaultKind.OVERLOADED, model=ANTHROPIC_MODEL),)
    with FakeProvider(Scenario(faults=down), log_path=None) as fake:
        settings = GatewaySettings(
            port=0,
            policy=FAST_POLICY,
            upstreams=Upstreams.all(fake.url),
            fallbacks=((THIRD, FALLBACK),),  # another model's
        )
        with (
            Gateway(settings, breakers=_breakers()) as gateway,
            pytest.raises(anthropic.APIStatusError) as raised,
        ):
            _sent(gateway.url)
    assert raised.value.status_code == 503


@pytest.mark.parametrize(
    ("fallbacks", "message"),
    [
        (((ANTHROPIC_MODEL, ANTHROPIC_MODEL),), "cannot fall back to itself"),
        (((ANTHROPIC_MODEL, FALLBACK), (ANTHROPIC_MODEL, FALLBACK)), "falls back to"),
        (((ANTHROPIC_MODEL, " "),), "must be a (model, fallback) pair"),
        ({ANTHROPIC_MODEL: FALLBACK}, "must be (model, fallback) pairs"),
    ],
)
def test_bad_fallbacks_are_refused(fallbacks: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GatewaySettings(fallbacks=fallbacks)  # type: ignore[arg-type]


def test_the_command_refuses_a_fallback_that_is_not_model_equals_fallback() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from backstay.cli import main; main()",
            "gateway",
            "--fallback",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "--fallback" in done.stderr
    assert "must be MODEL=FALLBACK" in done.stderr
    assert "Traceback" not in done.stderr
