"""The enforced rate limit: the provider's headers on every answer, 429s with the wait
when a bucket is empty, and the injected 429's headers."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import anthropic
import openai
import pytest
from google.genai import errors as genai_errors
from tests.fakeprovider import sdk
from tests.fakeprovider.sdk import PROMPT, SDK_ERRORS

from backstay import FailureKind, classify
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, RateLimit, Scenario, count_tokens
from backstay.policy._limit_headers import read_limits

TWO_PER_MINUTE = Scenario(rate_limit=RateLimit(requests_per_minute=2))


def _raw_anthropic(client: anthropic.Anthropic) -> Any:
    return client.messages.with_raw_response.create(
        model=sdk.ANTHROPIC_MODEL, max_tokens=64, messages=[{"role": "user", "content": PROMPT}]
    )


def _raw_chat(client: openai.OpenAI) -> Any:
    return client.chat.completions.with_raw_response.create(
        model=sdk.OPENAI_MODEL, messages=[{"role": "user", "content": PROMPT}]
    )


def _limits(headers: Any) -> dict[str, Any]:
    lower = {k.lower(): v for k, v in headers.items()}
    return read_limits(lower, _dt.datetime.now(_dt.UTC))


def test_anthropic_answers_carry_anthropic_rate_limit_headers() -> None:
    scenario = Scenario(rate_limit=RateLimit(requests_per_minute=10, tokens_per_minute=10_000))
    with FakeProvider(scenario) as fake, sdk.anthropic_client(fake.url) as client:
        raw = _raw_anthropic(client)
    assert raw.headers["anthropic-ratelimit-requests-limit"] == "10"
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "9"
    assert raw.headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    limits = _limits(raw.headers)
    assert limits["requests"].remaining == 9
    assert 0 < (limits["requests"].reset_s or 0) <= 7  # a sixth of a minute, rounded up
    used = count_tokens(PROMPT) + count_tokens(f"Fake reply to: {PROMPT}")
    assert limits["tokens"].remaining == 10_000 - used


def test_openai_answers_carry_openai_rate_limit_headers() -> None:
    scenario = Scenario(rate_limit=RateLimit(requests_per_minute=60, tokens_per_minute=6000))
    with FakeProvider(scenario) as fake, sdk.openai_client(fake.url) as client:
        raw = _raw_chat(client)
    assert raw.headers["x-ratelimit-limit-requests"] == "60"
    assert raw.headers["x-ratelimit-remaining-requests"] == "59"
    assert raw.headers["x-ratelimit-reset-requests"] in {"1s", "999ms", "1000ms"}
    limits = _limits(raw.headers)
    assert limits["tokens"].limit == 6000
    assert limits["requests"].reset_s == pytest.approx(1.0, abs=0.01)


def test_no_rate_limit_headers_without_a_limit() -> None:
    with FakeProvider() as fake, sdk.openai_client(fake.url) as client:
        raw = _raw_chat(client)
    assert not [name for name in raw.headers if name.lower().startswith("x-ratelimit")]


@pytest.mark.parametrize("api", ["anthropic", "openai-chat", "openai-responses", "gemini"])
def test_requests_over_the_limit_get_the_providers_429(api: str) -> None:
    with FakeProvider(TWO_PER_MINUTE) as fake:
        sdk.call(api, fake.url, stream=False)
        sdk.call(api, fake.url, stream=True)
        with pytest.raises(SDK_ERRORS) as caught:
            sdk.call(api, fake.url, stream=False)
        stats = fake.stats()
    assert stats.by_fault == {"rate_limit_enforced": 1}
    assert stats.by_status == {200: 2, 429: 1}
    failure = classify(caught.value, provider=sdk.PROVIDER[api])
    assert failure.kind is FailureKind.RATE_LIMIT
    # One request refills in 30 s: the wait asked for is about that.
    assert failure.retry_after_s is not None
    assert 25 <= failure.retry_after_s <= 31


def test_the_enforced_429_says_how_long_to_wait_in_seconds_and_ms() -> None:
    with FakeProvider(TWO_PER_MINUTE) as fake, sdk.anthropic_client(fake.url) as client:
        _raw_anthropic(client)
        _raw_anthropic(client)
        with pytest.raises(anthropic.RateLimitError) as caught:
            _raw_anthropic(client)
    headers = caught.value.response.headers
    assert 29_000 <= int(headers["retry-after-ms"]) <= 30_000
    assert headers["retry-after"] == "30"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"


def test_a_request_larger_than_the_token_budget_is_refused_as_never_fitting() -> None:
    scenario = Scenario(rate_limit=RateLimit(tokens_per_minute=5))
    with (
        FakeProvider(scenario) as fake,
        sdk.openai_client(fake.url) as client,
        pytest.raises(openai.RateLimitError) as caught,
    ):
        _raw_chat(client)
    assert "Request too large" in caught.value.message
    assert classify(caught.value).kind is FailureKind.INVALID_REQUEST


def test_gemini_rate_limits_carry_retry_info_and_no_headers() -> None:
    fault = Fault(kind=FaultKind.RATE_LIMIT, retry_after_s=2.5)
    with (
        FakeProvider(Scenario(faults=(fault,))) as fake,
        sdk.gemini_client(fake.url) as client,
        pytest.raises(genai_errors.ClientError) as caught,
    ):
        client.models.generate_content(model=sdk.GEMINI_MODEL, contents=PROMPT)
    details = caught.value.details["error"]["details"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.5s"} in details
    assert classify(caught.value).retry_after_s == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("api", "header"),
    [
        ("anthropic", "anthropic-ratelimit-requests-remaining"),
        ("openai", "x-ratelimit-remaining-requests"),
    ],
)
def test_an_injected_429_carries_retry_after_and_the_providers_headers(
    api: str, header: str
) -> None:
    fault = Fault(kind=FaultKind.RATE_LIMIT, retry_after_s=1.5)
    with FakeProvider(Scenario(faults=(fault,))) as fake:
        error: anthropic.RateLimitError | openai.RateLimitError
        if api == "anthropic":
            with (
                sdk.anthropic_client(fake.url) as claude,
                pytest.raises(anthropic.RateLimitError) as caught_a,
            ):
                _raw_anthropic(claude)
            error = caught_a.value
        else:
            with (
                sdk.openai_client(fake.url) as gpt,
                pytest.raises(openai.RateLimitError) as caught_o,
            ):
                _raw_chat(gpt)
            error = caught_o.value
    headers = error.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"], headers[header]) == (
        "2",
        "1500",
        "0",
    )
    assert classify(error).retry_after_s == pytest.approx(1.5)
