"""A request's body is parsed from JSON once (``routes.body_json``) and what is read from
the parsed body is what each reader finds in the bytes: its model (``route``), its
estimated tokens (``limits.estimate_body`` beside ``policy._paced.estimate_tokens``)."""

from __future__ import annotations

import pytest

from backstay.gateway.limits import estimate_body
from backstay.gateway.routes import NOT_JSON, body_json, route
from backstay.gateway.spans import recording
from backstay.policy._paced import estimate_tokens

BODIES = [
    b'{"model": "gpt-5", "messages": [{"role": "user", "content": "Say hello."}]}',
    b'{"model": "claude-x", "max_tokens": 512, "system": "be brief", "messages": []}',
    b'{"contents": [{"parts": [{"text": "hi"}]}], "generationConfig": {"maxOutputTokens": 9}}',
    b"null",
    b"[1, 2]",
    b'"text"',
    b"not json at all",
    b"{" * 5000 + b"}" * 5000,  # too deep for the parser: counted by its length
    b"",
]


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("output", [True, False])
def test_the_estimate_from_the_parsed_body_is_the_estimate_from_its_bytes(
    body: bytes, output: bool
) -> None:
    parsed = body_json(body) if body else NOT_JSON
    deep = body.startswith(b"{{")  # too deep for the parser: counted by its length
    expected = len(body) / 4.0 if deep else estimate_tokens(body, output=output)
    assert estimate_body(body, parsed, output=output) == expected


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions", "/v1/responses"])
def test_the_route_from_the_parsed_body_is_the_route_from_its_bytes(body: bytes, path: str) -> None:
    parsed = body_json(body)
    assert route("POST", path, {}, body, parsed=parsed) == route("POST", path, {}, body)


def test_a_body_that_is_not_json_is_told_apart_from_json_null() -> None:
    assert body_json(b"not json") is NOT_JSON
    assert body_json(b"null") is None


def test_no_span_is_recorded_while_no_tracer_provider_is_set() -> None:
    trace = pytest.importorskip("opentelemetry.trace")
    assert recording(trace.NoOpTracerProvider()) is False
    assert recording(trace.ProxyTracerProvider()) is False
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    provider = sdk.TracerProvider()
    try:
        assert recording(provider) is True
    finally:
        provider.shutdown()
