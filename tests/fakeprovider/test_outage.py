"""Outage windows through the server: every request in the window fails, before and after
it the provider answers."""

from __future__ import annotations

import time

import anthropic
import pytest
from tests.fakeprovider import sdk

from backstay.classify import classify
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Outage, Scenario
from backstay.taxonomy import FailureKind

WINDOW_S = 0.6


def _outcome(url: str) -> str:
    try:
        sdk.call("anthropic", url, stream=False)
    except anthropic.APIStatusError as err:
        return f"{err.status_code} {classify(err, provider='anthropic').kind}"
    return "ok"


def _wait_past(started: float, seconds: float) -> None:
    time.sleep(max(0.0, started + seconds - time.monotonic()))


def test_an_outage_from_a_request_fails_everything_in_its_window() -> None:
    outage = Outage(start_request=2, duration_s=WINDOW_S)
    scenario = Scenario(faults=(Fault(kind=FaultKind.OVERLOADED, outage=outage),))
    with FakeProvider(scenario) as fake:
        first = _outcome(fake.url)
        started = time.monotonic()
        inside = [_outcome(fake.url) for _ in range(3)]
        _wait_past(started, WINDOW_S + 0.2)
        after = _outcome(fake.url)
        stats = fake.stats()
    assert first == "ok"
    assert inside == [f"529 {FailureKind.SERVER_ERROR}"] * 3
    assert after == "ok"
    assert stats.by_fault == {"overloaded": 3}


@pytest.mark.parametrize("api", ["openai-chat", "gemini"])
def test_an_outage_from_the_start_ends_when_its_time_is_up(api: str) -> None:
    outage = Outage(start_s=0.0, duration_s=WINDOW_S)
    scenario = Scenario(faults=(Fault(kind=FaultKind.UNAVAILABLE, outage=outage),))
    with FakeProvider(scenario) as fake:
        started = time.monotonic()
        with pytest.raises(sdk.SDK_ERRORS):
            sdk.call(api, fake.url, stream=False)
        _wait_past(started, WINDOW_S + 0.2)
        answer = sdk.call(api, fake.url, stream=False)
        stats = fake.stats()
    assert "Fake reply" in answer
    assert stats.by_fault == {"unavailable": 1}
    assert stats.requests == 2
