"""Fallback beyond one model (``GatewaySettings.fallbacks`` with a model given twice,
``backstay gateway --fallback MODEL=A,B``): a chain, each model only while the ones before
it are unavailable, never a model whose own circuit is open; and the batches' own
``FallbackRules`` applied to each request (``fallback_rules``, ``--fallback-rules``): a
spent quota or a long Retry-After moves on at once, a context overflow never moves, the
failing model cools down for the request's key.

Through the real parts: the official anthropic SDK (its retries off), an in-process
gateway or one ``backstay gateway`` process, and the fake provider with faults per model.
"""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Final

import anthropic
import pytest
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    CANARY_KEY,
    FAST_POLICY,
    GEMINI_MODEL,
    MESSAGES,
    gemini_client,
    served,
)

from backstay.breaker import BreakerSettings, CircuitState
from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.fakeprovider import Fault, FaultKind
from backstay.fallback import CandidateCooledDown, FallbackRules, Move
from backstay.gateway import GatewaySettings, RequestFellBack
from backstay.taxonomy import FailureKind
from backstay.testing import capture_events

PRIMARY: Final = ANTHROPIC_MODEL
SECOND: Final = "claude-haiku-4-5"
THIRD: Final = "claude-opus-4-1"
CHAIN: Final = ((PRIMARY, SECOND), (PRIMARY, THIRD))
OTHER_KEY: Final = "sk-ant-api03-OTHERgateway0123456789abcdefABCDEFghijkl"
WAIT_S: Final = 30.0
_OVERLOADED: Final = Failure(code="ERR_HTTP_529_OVERLOADED")


# Two failures in a row open a circuit, for an hour.
BREAKER: Final = BreakerSettings(
    failure_threshold=2, failure_rate_threshold=None, open_duration_s=3600.0
)


def _sent(url: str, key: str = CANARY_KEY) -> anthropic.types.Message:
    with anthropic.Anthropic(base_url=url, api_key=key, max_retries=0, timeout=WAIT_S) as c:
        return c.messages.create(model=PRIMARY, max_tokens=20, messages=MESSAGES)  # type: ignore[arg-type]


def _fell(events: list[object]) -> list[tuple[str, str, str]]:
    return [(e.model, e.fallback_model, e.reason) for e in events if isinstance(e, RequestFellBack)]


def _seen(logged: list[dict[str, object]]) -> list[tuple[object, object]]:
    """The provider's requests, in order: (model, status)."""
    return [(entry["model"], entry["status"]) for entry in logged]


# -- the settings --------------------------------------------------------------------------


def test_a_model_given_twice_has_a_chain_in_the_order_given() -> None:
    settings = GatewaySettings(fallbacks=(*CHAIN, (SECOND, THIRD)))
    assert settings.fallback_chains() == {PRIMARY: (SECOND, THIRD), SECOND: (THIRD,)}


def test_fallback_rules_must_be_fallback_rules() -> None:
    with pytest.raises(ConfigError, match="must be FallbackRules"):
        GatewaySettings(fallback_rules={"moves": {}})  # type: ignore[arg-type]


# -- a chain, by the circuit ---------------------------------------------------------------


def test_a_request_goes_along_the_chain_while_each_model_before_is_down(tmp_path: Path) -> None:
    """The first and second models are down: the first request's 529s open each circuit
    in turn and it is answered by the third; the next one skips both open circuits and is
    sent to the third at once."""
    down = (
        Fault(kind=FaultKind.OVERLOADED, model=PRIMARY),
        Fault(kind=FaultKind.OVERLOADED, model=SECOND),
    )
    with capture_events() as events:
        with served(tmp_path, *down, fallbacks=CHAIN, breaker=BREAKER) as s:
            first, second = _sent(s.url), _sent(s.url)
        logged = s.logged()
    assert (first.model, second.model) == (THIRD, THIRD)
    assert _seen(logged) == [
        (PRIMARY, 529),
        (PRIMARY, 529),
        (SECOND, 529),
        (SECOND, 529),
        (THIRD, 200),
        (THIRD, 200),
    ]
    assert _fell(events) == [
        (PRIMARY, SECOND, "circuit_opened"),
        (SECOND, THIRD, "circuit_opened"),
        (PRIMARY, THIRD, "circuit_open"),
    ]


def test_with_every_model_of_the_chain_open_a_request_stays_on_its_own(tmp_path: Path) -> None:
    """No model of its chain is available: it is not moved, and meets its own model's open
    circuit (told when the probe is, an hour away); nothing reaches the provider."""
    with served(tmp_path, fallbacks=CHAIN, breaker=BREAKER) as s, capture_events() as events:
        for model in (PRIMARY, SECOND, THIRD):
            breaker = s.gateway.breakers.breaker_for(("anthropic", model))
            for _ in range(2):
                breaker.acquire().failure(_OVERLOADED)
            assert breaker.state is CircuitState.OPEN
        with pytest.raises(anthropic.APIStatusError) as raised:
            _sent(s.url)
        stats = s.fake.stats()
    assert raised.value.status_code == 503
    assert f"circuit 'anthropic/{PRIMARY}' is open" in raised.value.message
    assert stats.requests == 0
    assert _fell(events) == []


def test_a_request_whose_last_allowed_attempt_opens_its_circuit_gets_its_answer(
    tmp_path: Path,
) -> None:
    """Its two allowed attempts are the 529s that open the primary's circuit, and the
    chain has a model to move to: it gets that 529 (no wait for the probe), and the next
    request goes to the second model at once."""
    down = (Fault(kind=FaultKind.OVERLOADED, model=PRIMARY),)
    policy = FAST_POLICY.derive(max_attempts=2)
    with capture_events() as events:
        with served(tmp_path, *down, fallbacks=CHAIN, breaker=BREAKER, policy=policy) as s:
            with pytest.raises(anthropic.APIStatusError) as raised:
                _sent(s.url)
            answer = _sent(s.url)
        logged = s.logged()
    assert raised.value.status_code == 529
    assert answer.model == SECOND
    assert _seen(logged) == [(PRIMARY, 529), (PRIMARY, 529), (SECOND, 200)]
    assert _fell(events) == [(PRIMARY, SECOND, "circuit_open")]


# -- the fallback rules --------------------------------------------------------------------


def test_a_spent_quota_moves_on_at_once_and_cools_the_model_down_for_that_key(
    tmp_path: Path,
) -> None:
    """The primary's quota is spent (Anthropic's 400 "credit balance is too low"): one
    refusal and the request is answered by the next model
    in the same client request; the primary cools down for that key, so its next request
    goes to the next model at once. Another key's request still goes to the primary."""
    spent = (Fault(kind=FaultKind.QUOTA_EXHAUSTED, model=PRIMARY),)
    rules = FallbackRules()
    with capture_events() as events:
        with served(tmp_path, *spent, fallbacks=CHAIN, fallback_rules=rules) as s:
            first, second = _sent(s.url), _sent(s.url)
            other = _sent(s.url, OTHER_KEY)
        logged = s.logged()
    assert (first.model, second.model, other.model) == (SECOND, SECOND, SECOND)
    assert _seen(logged) == [
        (PRIMARY, 400),
        (SECOND, 200),
        (SECOND, 200),
        (PRIMARY, 400),
        (SECOND, 200),
    ]
    assert _fell(events) == [
        (PRIMARY, SECOND, "quota_exhausted"),
        (PRIMARY, SECOND, "cooling_down"),
        (PRIMARY, SECOND, "quota_exhausted"),
    ]
    cooled = [e for e in events if isinstance(e, CandidateCooledDown)]
    assert [e.candidate for e in cooled] == [f"anthropic/{PRIMARY}"] * 2
    assert all(e.kind == "quota_exhausted" for e in cooled)
    text = json.dumps([str(e) for e in events])
    assert CANARY_KEY not in text
    assert OTHER_KEY not in text


def test_a_context_overflow_never_moves(tmp_path: Path) -> None:
    too_long = (Fault(kind=FaultKind.CONTEXT_OVERFLOW, model=PRIMARY),)
    rules = FallbackRules()
    with capture_events() as events:
        with (
            served(tmp_path, *too_long, fallbacks=CHAIN, fallback_rules=rules) as s,
            pytest.raises(anthropic.BadRequestError),
        ):
            _sent(s.url)
        logged = s.logged()
    assert _seen(logged) == [(PRIMARY, 400)]
    assert _fell(events) == []


@pytest.mark.parametrize(
    ("retry_after_s", "expected"),
    [
        (30.0, [(PRIMARY, 429), (SECOND, 200)]),  # longer than long_wait_s: moves at once
        (0.2, [(PRIMARY, 429), (PRIMARY, 200)]),  # shorter: waited out on the same model
    ],
    ids=["long_wait", "short_wait"],
)
def test_a_rate_limit_moves_on_only_when_its_wait_is_long(
    tmp_path: Path, retry_after_s: float, expected: list[tuple[str, int]]
) -> None:
    limited = (
        Fault(kind=FaultKind.RATE_LIMIT, model=PRIMARY, first=1, retry_after_s=retry_after_s),
    )
    rules = FallbackRules(long_wait_s=10.0)
    with capture_events() as events:
        with served(tmp_path, *limited, fallbacks=CHAIN, fallback_rules=rules) as s:
            answer = _sent(s.url)
        logged = s.logged()
    assert _seen(logged) == expected
    assert answer.model == expected[-1][0]
    moved = [(PRIMARY, SECOND, "rate_limit")] if expected[-1][0] == SECOND else []
    assert _fell(events) == moved


def test_a_kind_configured_never_is_retried_on_its_own_model(tmp_path: Path) -> None:
    """``server_error: never``: a 529 is retried where it is, as without rules."""
    overloaded = (Fault(kind=FaultKind.OVERLOADED, model=PRIMARY, first=1),)
    rules = FallbackRules(moves={FailureKind.SERVER_ERROR: Move.NEVER})
    with capture_events() as events:
        with served(tmp_path, *overloaded, fallbacks=CHAIN, fallback_rules=rules) as s:
            answer = _sent(s.url)
        logged = s.logged()
    assert answer.model == PRIMARY
    assert _seen(logged) == [(PRIMARY, 529), (PRIMARY, 200)]
    assert _fell(events) == []


def test_the_moves_share_one_budget_of_attempts(tmp_path: Path) -> None:
    """Every model of the chain answers 529 and the policy allows 2 attempts: one on the
    primary, one on the second model, then the client gets the last 529."""
    down = tuple(Fault(kind=FaultKind.OVERLOADED, model=m) for m in (PRIMARY, SECOND, THIRD))
    policy = FAST_POLICY.derive(max_attempts=2)
    with capture_events() as events:
        with (
            served(
                tmp_path, *down, fallbacks=CHAIN, fallback_rules=FallbackRules(), policy=policy
            ) as s,
            pytest.raises(anthropic.APIStatusError) as raised,
        ):
            _sent(s.url)
        logged = s.logged()
    assert raised.value.status_code == 529
    assert raised.value.response.headers["x-backstay-attempts"] == "2"
    assert _seen(logged) == [(PRIMARY, 529), (SECOND, 529)]
    assert _fell(events) == [(PRIMARY, SECOND, "server_error")]


# -- backstay gateway ----------------------------------------------------------------------


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", "from backstay.cli import main; main()", "gateway", *args]


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(WAIT_S):
            return ""
    return proc.stdout.readline()


def test_the_command_moves_a_request_along_its_chain_by_the_rules(tmp_path: Path) -> None:
    """``--fallback PRIMARY=SECOND,THIRD --fallback-rules``: the primary's quota is spent
    and the second model is overloaded; the request moves at each failure and the third
    model answers. ``--events`` has each move with its reason."""
    faults = (
        Fault(kind=FaultKind.QUOTA_EXHAUSTED, model=PRIMARY),
        Fault(kind=FaultKind.OVERLOADED, model=SECOND),
    )
    events_file = tmp_path / "events.jsonl"
    with served(tmp_path, *faults) as s:
        proc = subprocess.Popen(
            _command(
                "--port",
                "0",
                "--upstream",
                s.fake.url,
                "--fallback",
                f"{PRIMARY}={SECOND},{THIRD}",
                "--fallback-rules",
                "--events",
                str(events_file),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = _first_line(proc)
            assert line.startswith("gateway listening on http://127.0.0.1:"), line
            answer = _sent(line.split()[-1])
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=WAIT_S)
    logged = s.logged()
    assert proc.returncode == 0, err
    assert answer.model == THIRD
    assert _seen(logged) == [(PRIMARY, 400), (SECOND, 529), (THIRD, 200)]
    records = [json.loads(text) for text in events_file.read_text().splitlines()]
    fell = [r for r in records if r["event"] == "request.fell_back"]
    assert [(r["model"], r["fallback_model"], r["reason"]) for r in fell] == [
        (PRIMARY, SECOND, "quota_exhausted"),
        (SECOND, THIRD, "server_error"),
    ]
    assert CANARY_KEY not in line + out + err + events_file.read_text()


@pytest.mark.parametrize(
    ("args", "flag", "message"),
    [
        (("--fallback", f"{PRIMARY}={SECOND},"), "--fallback", "must be MODEL=FALLBACK"),
        (("--fallback-move", "sunspots=next"), "--fallback-move", "is not a failure kind"),
        (("--fallback-move", "rate_limit=sideways"), "--fallback-move", "must be one of"),
        (("--fallback-move", "rate_limit"), "--fallback-move", "must be KIND=MOVE"),
        (("--fallback-move", "cancelled=next"), "--fallback-move", "a cancelled call never"),
    ],
)
def test_the_command_refuses_bad_fallback_flags(
    args: tuple[str, ...], flag: str, message: str
) -> None:
    done = subprocess.run(
        _command(*args), capture_output=True, text=True, timeout=WAIT_S, check=False
    )
    assert done.returncode == 2
    assert flag in done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_gemini_request_moves_along_its_chain_by_its_path(tmp_path: Path) -> None:
    """Gemini names the model in the path: the rules move a spent quota there too, with
    the official google-genai client."""
    pro = "gemini-2.5-pro"
    spent = (Fault(kind=FaultKind.QUOTA_EXHAUSTED, model=GEMINI_MODEL),)
    with capture_events() as events:
        with served(
            tmp_path, *spent, fallbacks=((GEMINI_MODEL, pro),), fallback_rules=FallbackRules()
        ) as s:
            client = gemini_client(s.url)
            answer = client.models.generate_content(
                model=GEMINI_MODEL, contents="Write a haiku about resilient systems."
            )
        logged = s.logged()
    assert answer.text
    assert [entry["model"] for entry in logged] == [GEMINI_MODEL, pro]
    assert logged[-1]["status"] == 200
    assert _fell(events) == [(GEMINI_MODEL, pro, "quota_exhausted")]
