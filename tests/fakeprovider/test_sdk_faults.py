"""Every fault the server injects, received through each official SDK (JSON and stream),
is classified by ``backstay.classify`` to the kind its name promises."""

from __future__ import annotations

from typing import Final

import pytest
from tests.fakeprovider.sdk import (
    API_MODES,
    GEMINI_MODEL,
    PROMPT,
    PROVIDER,
    SDK_ERRORS,
    call,
    gemini_client,
)

from backstay import FailureKind, check_response, classify
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario

EXPECTED: Final = {
    FaultKind.RATE_LIMIT: FailureKind.RATE_LIMIT,
    FaultKind.SERVER_ERROR: FailureKind.SERVER_ERROR,
    FaultKind.BAD_GATEWAY: FailureKind.SERVER_ERROR,
    FaultKind.UNAVAILABLE: FailureKind.SERVER_ERROR,
    FaultKind.GATEWAY_TIMEOUT: FailureKind.TIMEOUT,
    FaultKind.OVERLOADED: FailureKind.SERVER_ERROR,
    FaultKind.UNAUTHORIZED: FailureKind.AUTH,
    FaultKind.FORBIDDEN: FailureKind.AUTH,
    FaultKind.CONTEXT_OVERFLOW: FailureKind.CONTEXT_LIMIT,
    FaultKind.CONTENT_POLICY: FailureKind.CONTENT_POLICY,
    FaultKind.QUOTA_EXHAUSTED: FailureKind.QUOTA_EXHAUSTED,
    FaultKind.STREAM_ERROR: FailureKind.SERVER_ERROR,
    FaultKind.HANG: FailureKind.TIMEOUT,
    FaultKind.STALL: FailureKind.TIMEOUT,
    FaultKind.RESET: FailureKind.NETWORK,
}
# Short client timeouts for the faults that only a timeout ends.
TIMEOUT_S: Final = {FaultKind.HANG: 0.5, FaultKind.STALL: 0.5}


def test_every_fault_but_slow_has_an_expected_kind() -> None:
    assert set(EXPECTED) == set(FaultKind) - {FaultKind.SLOW}


def _cases() -> list[tuple[FaultKind, str, bool]]:
    return [
        (kind, api, stream)
        for kind in EXPECTED
        for api, stream in API_MODES
        if stream or not kind.streams_only
        if not (kind is FaultKind.CONTENT_POLICY and api == "gemini")
    ]


@pytest.mark.parametrize(("kind", "api", "stream"), _cases())
def test_the_sdk_raises_an_error_classified_as_the_fault_kind(
    kind: FaultKind, api: str, stream: bool
) -> None:
    with FakeProvider(Scenario(faults=(Fault(kind=kind),))) as fake:
        with pytest.raises(SDK_ERRORS) as caught:
            call(api, fake.url, stream=stream, timeout_s=TIMEOUT_S.get(kind, 10.0))
        assert fake.stats().by_fault == {str(kind): 1}
    failure = classify(caught.value, provider=PROVIDER[api])
    assert failure.kind is EXPECTED[kind], (type(caught.value), failure)


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_content_policy_is_a_blocked_200_the_classifier_reads(stream: bool) -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.CONTENT_POLICY),))
    with FakeProvider(scenario) as fake, gemini_client(fake.url) as client:
        if stream:
            (response,) = client.models.generate_content_stream(model=GEMINI_MODEL, contents=PROMPT)
        else:
            response = client.models.generate_content(model=GEMINI_MODEL, contents=PROMPT)
    assert response.prompt_feedback is not None
    assert response.candidates is None
    body = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    failure = check_response(200, None, body, provider="gemini")
    assert failure is not None
    assert failure.kind is FailureKind.CONTENT_POLICY


@pytest.mark.parametrize(("api", "stream"), [m for m in API_MODES if not m[1]])
def test_stream_faults_leave_json_answers_alone(api: str, stream: bool) -> None:
    with FakeProvider(Scenario(faults=(Fault(kind=FaultKind.STREAM_ERROR),))) as fake:
        assert call(api, fake.url, stream=stream).startswith("Fake reply to:")
        assert fake.stats().by_fault == {}


@pytest.mark.parametrize("api", ["anthropic", "openai-chat", "openai-responses", "gemini"])
def test_a_stream_error_follows_the_output_already_sent(api: str) -> None:
    """The error comes after text deltas: a client sees partial output, then the error."""
    seen: list[str] = []
    fault = Fault(kind=FaultKind.STREAM_ERROR, after_events=5)
    with FakeProvider(Scenario(faults=(fault,))) as fake, pytest.raises(SDK_ERRORS) as caught:
        _collect_stream(api, fake.url, seen)
    assert "".join(seen).startswith("Fake reply")
    assert classify(caught.value, provider=PROVIDER[api]).kind is FailureKind.SERVER_ERROR


def _collect_stream(api: str, url: str, seen: list[str]) -> None:
    from tests.fakeprovider import sdk  # noqa: PLC0415

    if api == "anthropic":
        with (
            sdk.anthropic_client(url) as client,
            client.messages.stream(
                model=sdk.ANTHROPIC_MODEL,
                max_tokens=256,
                messages=[{"role": "user", "content": PROMPT}],
            ) as events,
        ):
            seen.extend(events.text_stream)
    elif api == "openai-chat":
        with sdk.openai_client(url) as client:
            chunks = client.chat.completions.create(
                model=sdk.OPENAI_MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True
            )
            seen.extend(chunk.choices[0].delta.content or "" for chunk in chunks)
    elif api == "openai-responses":
        with sdk.openai_client(url) as client:
            events = client.responses.create(model=sdk.OPENAI_MODEL, input=PROMPT, stream=True)
            seen.extend(e.delta for e in events if e.type == "response.output_text.delta")
    else:
        with gemini_client(url) as client:
            parts = client.models.generate_content_stream(model=GEMINI_MODEL, contents=PROMPT)
            seen.extend(part.text or "" for part in parts)
