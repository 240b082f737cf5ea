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
from backstay.cli.gateway import fallback_pairs, fallback_rules
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.fallback import FallbackRules, Move
from backstay.gateway import Gateway, GatewaySettings, RequestFellBack, Upstreams
from backstay.gateway.fallbacks import GatewayFallbacks, candidates_of
from backstay.taxonomy import FailureKind
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


# -- the chain's pure parts (gateway/fallbacks.py, cli/gateway.py) -------------------------


@pytest.mark.parametrize(
    ("run_fallback", "chains", "expected"),
    [
        (None, {}, (ANTHROPIC_MODEL,)),
        (FALLBACK, {}, (ANTHROPIC_MODEL, FALLBACK)),
        (None, {ANTHROPIC_MODEL: (FALLBACK, THIRD)}, (ANTHROPIC_MODEL, FALLBACK, THIRD)),
        # The run's comes first; a model is a candidate once; another model's chain is not.
        (THIRD, {ANTHROPIC_MODEL: (FALLBACK, THIRD)}, (ANTHROPIC_MODEL, THIRD, FALLBACK)),
        (ANTHROPIC_MODEL, {FALLBACK: (THIRD,)}, (ANTHROPIC_MODEL,)),
    ],
)
def test_a_requests_candidates_are_its_model_its_runs_fallback_then_the_gateways_chain(
    run_fallback: str | None, chains: dict[str, tuple[str, ...]], expected: tuple[str, ...]
) -> None:
    assert candidates_of(ANTHROPIC_MODEL, run_fallback, chains) == expected


def _chained(rules: FallbackRules | None) -> tuple[GatewayFallbacks, BreakerRegistry]:
    breakers = _breakers()
    return GatewayFallbacks({ANTHROPIC_MODEL: (FALLBACK,)}, rules, breakers), breakers


def test_while_a_fallback_is_available_the_kinds_that_move_are_not_retried_in_place() -> None:
    fallbacks, _ = _chained(FallbackRules(long_wait_s=10.0))
    chain = fallbacks.chain("anthropic", ANTHROPIC_MODEL, None, CANARY_KEY)
    assert chain is not None
    policy = fallbacks.attempt_policy(FAST_POLICY, chain, 0)
    assert {"server_error", "quota_exhausted", "timeout", "network"} <= policy.never_retry_on
    assert "rate_limit" not in policy.never_retry_on  # moves only when its wait is long
    assert "context_limit" not in policy.never_retry_on
    assert policy.max_retry_after_s == 10.0
    assert (policy.name, policy.max_attempts) == (FAST_POLICY.name, FAST_POLICY.max_attempts)


def test_with_no_fallback_available_or_no_rules_the_policy_is_the_gateways() -> None:
    fallbacks, breakers = _chained(FallbackRules())
    chain = fallbacks.chain("anthropic", ANTHROPIC_MODEL, None, CANARY_KEY)
    assert chain is not None
    breaker = breakers.breaker_for(("anthropic", FALLBACK))
    for _ in range(2):
        breaker.acquire().failure(Failure(code="ERR_HTTP_529_OVERLOADED"))
    assert fallbacks.attempt_policy(FAST_POLICY, chain, 0) is FAST_POLICY
    plain, _ = _chained(None)
    plain_chain = plain.chain("anthropic", ANTHROPIC_MODEL, None, CANARY_KEY)
    assert plain_chain is not None
    assert plain.attempt_policy(FAST_POLICY, plain_chain, 0) is FAST_POLICY
    assert plain.chain("anthropic", THIRD, None, CANARY_KEY) is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([f"{ANTHROPIC_MODEL}={FALLBACK}"], ((ANTHROPIC_MODEL, FALLBACK),)),
        (
            [f"{ANTHROPIC_MODEL}= {FALLBACK} , {THIRD}"],
            ((ANTHROPIC_MODEL, FALLBACK), (ANTHROPIC_MODEL, THIRD)),
        ),
        (
            [f"{ANTHROPIC_MODEL}={FALLBACK}", f"{ANTHROPIC_MODEL}={THIRD}"],
            ((ANTHROPIC_MODEL, FALLBACK), (ANTHROPIC_MODEL, THIRD)),
        ),
    ],
)
def test_fallback_flags_are_pairs_a_models_chain_in_order(
    given: list[str], expected: tuple[tuple[str, str], ...]
) -> None:
    assert fallback_pairs(given) == expected


def test_the_rules_flags_build_the_batches_table() -> None:
    off = {"long_wait_s": None, "quota_cooldown_s": None}
    assert fallback_rules(False, [], off) is None
    assert fallback_rules(True, [], off) == FallbackRules()
    rules = fallback_rules(False, ["server_error=never"], {**off, "long_wait_s": 30.0})
    assert rules == FallbackRules(moves={FailureKind.SERVER_ERROR: Move.NEVER}, long_wait_s=30.0)
