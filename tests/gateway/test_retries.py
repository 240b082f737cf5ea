"""Non-streaming requests through the gateway, from the official SDKs with their own
retries off: what is retryable is retried (one Idempotency-Key for all the attempts),
what is not comes back as the provider sent it."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from google.genai import errors as genai_errors
from tests.gateway.helpers import (
    ANTHROPIC_MODEL,
    FAST_POLICY,
    MESSAGES,
    anthropic_client,
    chat,
    claude,
    gemini,
    responses,
    served,
)

from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario
from backstay.gateway import RequestRetried
from backstay.testing import capture_events


def test_a_529_then_a_success_reaches_the_anthropic_sdk_as_the_success(tmp_path: Path) -> None:
    with served(tmp_path, Fault(kind=FaultKind.OVERLOADED, first=1)) as s:
        text = claude(s.url)
        stats = s.fake.stats()
    assert text.startswith("Fake reply to:")
    assert stats.requests == 2
    assert stats.by_fault == {"overloaded": 1}


def test_every_attempt_of_one_request_carries_the_same_idempotency_key(tmp_path: Path) -> None:
    with served(tmp_path, Fault(kind=FaultKind.SERVER_ERROR, first=2)) as s:
        claude(s.url)
    keys = [line["idempotency_key"] for line in s.logged()]
    assert len(keys) == 3
    assert keys[0] is not None
    assert keys[0].startswith("backstay-gw-")
    assert set(keys) == {keys[0]}


def test_two_requests_get_two_idempotency_keys(tmp_path: Path) -> None:
    with served(tmp_path) as s:
        claude(s.url)
        claude(s.url)
    keys = [line["idempotency_key"] for line in s.logged()]
    assert len(set(keys)) == 2


def test_a_client_idempotency_key_is_kept(tmp_path: Path) -> None:
    with served(tmp_path, Fault(kind=FaultKind.SERVER_ERROR, first=1)) as s:
        httpx.post(
            s.url + "/v1/messages",
            json={"model": ANTHROPIC_MODEL, "max_tokens": 50, "messages": MESSAGES},
            headers={"x-api-key": "test-key-123456", "Idempotency-Key": "client-key-1"},
            timeout=20,
        ).raise_for_status()
    assert [line["idempotency_key"] for line in s.logged()] == ["client-key-1"] * 2


def test_a_429_waits_at_least_its_retry_after(tmp_path: Path) -> None:
    with (
        served(tmp_path, Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=0.2)) as s,
        capture_events() as events,
    ):
        text = chat(s.url)
        stats = s.fake.stats()
    assert text
    assert stats.requests == 2
    [scheduled] = events.named("task.retrying")
    assert scheduled.delay_s >= 0.2  # type: ignore[attr-defined]
    assert scheduled.failure.kind == "rate_limit"  # type: ignore[attr-defined]


def test_a_retry_after_beyond_the_policy_returns_the_providers_429(tmp_path: Path) -> None:
    fault = Fault(kind=FaultKind.RATE_LIMIT, first=1, retry_after_s=3600)
    with served(tmp_path, fault) as s, pytest.raises(openai.RateLimitError) as raised:
        chat(s.url)
    assert raised.value.response.headers["retry-after"] == "3600"
    assert s.fake.stats().requests == 1


@pytest.mark.parametrize("call", [responses, gemini], ids=["openai-responses", "gemini"])
def test_an_unavailable_upstream_is_retried_for_every_api(tmp_path: Path, call: object) -> None:
    with served(tmp_path, Fault(kind=FaultKind.UNAVAILABLE, first=2)) as s:
        text = call(s.url)  # type: ignore[operator]
        stats = s.fake.stats()
    assert text
    assert stats.requests == 3


def _raw_error(url: str) -> httpx.Response:
    return httpx.post(
        url + "/v1/messages",
        json={"model": ANTHROPIC_MODEL, "max_tokens": 50, "messages": MESSAGES},
        headers={"x-api-key": "test-key-123456", "anthropic-version": "2023-06-01"},
        timeout=20,
    )


def test_a_non_retryable_400_is_passed_through_unchanged(tmp_path: Path) -> None:
    fault = Fault(kind=FaultKind.CONTEXT_OVERFLOW)
    with FakeProvider(Scenario(faults=(fault,))) as direct:
        expected = _raw_error(direct.url)
    with served(tmp_path, fault) as s:
        got = _raw_error(s.url)
        stats = s.fake.stats()
    assert got.status_code == expected.status_code == 400
    assert got.content == expected.content
    assert got.headers["content-type"] == expected.headers["content-type"]
    assert got.headers["request-id"] == expected.headers["request-id"]
    assert stats.requests == 1


def test_the_sdk_raises_its_own_error_for_a_passed_through_400(tmp_path: Path) -> None:
    with (
        served(tmp_path, Fault(kind=FaultKind.CONTEXT_OVERFLOW)) as s,
        pytest.raises(anthropic.BadRequestError, match="prompt is too long"),
    ):
        claude(s.url)


def test_a_gemini_bad_key_is_not_retried(tmp_path: Path) -> None:
    with (
        served(tmp_path, Fault(kind=FaultKind.UNAUTHORIZED)) as s,
        pytest.raises(genai_errors.ClientError, match="API key not valid"),
    ):
        gemini(s.url)
    assert s.fake.stats().requests == 1


def test_a_retried_request_emits_one_request_retried_event(tmp_path: Path) -> None:
    with (
        served(tmp_path, Fault(kind=FaultKind.OVERLOADED, first=2)) as s,
        capture_events() as events,
    ):
        claude(s.url)
    [event] = events.named("request.retried")
    assert isinstance(event, RequestRetried)
    assert (event.provider, event.model, event.endpoint) == (
        "anthropic",
        ANTHROPIC_MODEL,
        "/v1/messages",
    )
    assert (event.attempts, event.status, event.outcome) == (3, 200, "succeeded")
    assert event.failure is not None
    assert event.failure.kind == "server_error"


def test_a_request_that_succeeds_at_once_emits_no_request_event(tmp_path: Path) -> None:
    with served(tmp_path) as s, capture_events() as events:
        claude(s.url)
    assert events.named("request.retried") == []


def test_attempts_run_out_and_the_last_upstream_answer_is_returned(tmp_path: Path) -> None:
    policy = FAST_POLICY.derive(max_attempts=2)
    with (
        served(tmp_path, Fault(kind=FaultKind.OVERLOADED), policy=policy) as s,
        capture_events() as events,
        pytest.raises(anthropic.InternalServerError) as raised,
    ):
        claude(s.url)
    assert raised.value.status_code == 529
    assert s.fake.stats().requests == 2
    [event] = events.named("request.retried")
    assert event.outcome == "gave_up"  # type: ignore[attr-defined]


def test_the_model_listings_pass_through(tmp_path: Path) -> None:
    with served(tmp_path) as s:
        openai_models = httpx.get(
            s.url + "/v1/models", headers={"authorization": "Bearer k-123456789"}, timeout=20
        )
        anthropic_models = httpx.get(
            s.url + "/v1/models",
            headers={"x-api-key": "k-123456789", "anthropic-version": "2023-06-01"},
            timeout=20,
        )
        gemini_models = httpx.get(
            s.url + "/v1beta/models", headers={"x-goog-api-key": "k-123456789"}, timeout=20
        )
    assert "gpt-5" in openai_models.text
    assert "claude-sonnet-4-6" in anthropic_models.text
    assert "gemini-2.5-flash" in gemini_models.text


def test_anthropic_count_tokens_is_forwarded(tmp_path: Path) -> None:
    with served(tmp_path) as s, anthropic_client(s.url) as client:
        counted = client.messages.count_tokens(model=ANTHROPIC_MODEL, messages=MESSAGES)  # type: ignore[arg-type]
    assert counted.input_tokens > 0


def test_a_path_it_does_not_serve_is_a_404(tmp_path: Path) -> None:
    with served(tmp_path) as s:
        answer = httpx.post(s.url + "/v1/embeddings", json={}, timeout=20)
    assert answer.status_code == 404
    assert "not a provider endpoint" in answer.json()["error"]["message"]
