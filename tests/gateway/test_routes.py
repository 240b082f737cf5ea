"""Which provider and model a request is for (``backstay.gateway.routes``)."""

from __future__ import annotations

import pytest

from backstay.gateway import Route, route

BODY = b'{"model": "m-1", "messages": []}'


@pytest.mark.parametrize(
    ("method", "path", "headers", "expected"),
    [
        (
            "POST",
            "/v1/messages",
            {},
            Route(provider="anthropic", model="m-1", endpoint="/v1/messages"),
        ),
        (
            "POST",
            "/v1/messages/count_tokens",
            {},
            Route(provider="anthropic", model="m-1", endpoint="/v1/messages/count_tokens"),
        ),
        (
            "POST",
            "/v1/chat/completions",
            {},
            Route(provider="openai", model="m-1", endpoint="/v1/chat/completions"),
        ),
        (
            "POST",
            "/v1/responses",
            {},
            Route(provider="openai", model="m-1", endpoint="/v1/responses"),
        ),
        (
            "POST",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            {},
            Route(
                provider="gemini",
                model="gemini-2.5-flash",
                endpoint="/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            ),
        ),
        (
            "POST",
            "/v1/models/gemini-2.5-pro:generateContent",
            {},
            Route(
                provider="gemini",
                model="gemini-2.5-pro",
                endpoint="/v1/models/gemini-2.5-pro:generateContent",
            ),
        ),
        (
            "GET",
            "/v1beta/models",
            {},
            Route(provider="gemini", model="*", endpoint="/v1beta/models"),
        ),
        (
            "GET",
            "/v1/models",
            {"anthropic-version": "2023-06-01"},
            Route(provider="anthropic", model="*", endpoint="/v1/models"),
        ),
        (
            "GET",
            "/v1/models",
            {"x-goog-api-key": "k"},
            Route(provider="gemini", model="*", endpoint="/v1/models"),
        ),
        (
            "GET",
            "/v1/models/gpt-5",
            {},
            Route(provider="openai", model="*", endpoint="/v1/models/gpt-5"),
        ),
    ],
)
def test_each_endpoint_is_routed_to_its_provider(
    method: str, path: str, headers: dict[str, str], expected: Route
) -> None:
    assert route(method, path, headers, BODY) == expected


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/embeddings"),
        ("GET", "/v1/messages"),
        ("DELETE", "/v1/models/x"),
        ("POST", "/"),
    ],
)
def test_other_requests_are_not_routed(method: str, path: str) -> None:
    assert route(method, path, {}, BODY) is None


@pytest.mark.parametrize("body", [b"", b"not json", b"[1]", b'{"model": 5}', b'{"model": ""}'])
def test_a_body_without_a_model_routes_to_any_model(body: bytes) -> None:
    found = route("POST", "/v1/messages", {}, body)
    assert found is not None
    assert found.model == "*"
