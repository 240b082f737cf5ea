"""What crosses the gateway in headers (``backstay.gateway.headers``)."""

from __future__ import annotations

from backstay.gateway import TOKEN_HEADER
from backstay.gateway.headers import (
    ATTEMPTS_HEADER,
    client_keys,
    downstream_headers,
    idempotency_key,
    upstream_headers,
)


def test_anthropic_and_openai_posts_get_a_fresh_key() -> None:
    first = idempotency_key("POST", "anthropic", {})
    assert first is not None
    assert first != idempotency_key("POST", "openai", {})


def test_the_clients_own_key_is_kept() -> None:
    assert idempotency_key("POST", "openai", {"Idempotency-Key": "mine"}) == "mine"


def test_gets_and_gemini_get_no_key() -> None:
    assert idempotency_key("GET", "openai", {}) is None
    assert idempotency_key("POST", "gemini", {}) is None


def test_upstream_keeps_the_api_key_and_drops_hop_by_hop_and_the_token() -> None:
    given = [
        ("x-api-key", "sk-1"),
        ("Authorization", "Bearer sk-2"),
        ("Host", "127.0.0.1:1"),
        ("Connection", "keep-alive"),
        ("Content-Length", "10"),
        ("Accept-Encoding", "br"),
        (TOKEN_HEADER, "t" * 20),
        ("Idempotency-Key", "old"),
        ("anthropic-version", "2023-06-01"),
    ]
    assert upstream_headers(given, "k-1") == [
        ("x-api-key", "sk-1"),
        ("Authorization", "Bearer sk-2"),
        ("anthropic-version", "2023-06-01"),
        ("Idempotency-Key", "k-1"),
    ]


def test_downstream_drops_framing_and_adds_the_attempts() -> None:
    given = [
        ("Content-Type", "text/event-stream"),
        ("Transfer-Encoding", "chunked"),
        ("Content-Encoding", "gzip"),
        ("retry-after", "3"),
    ]
    assert downstream_headers(given, 2) == [
        ("Content-Type", "text/event-stream"),
        ("retry-after", "3"),
        (ATTEMPTS_HEADER, "2"),
    ]


def test_every_kind_of_client_key_is_found() -> None:
    headers = {
        "X-Api-Key": "sk-a",
        "x-goog-api-key": "g-b",
        "authorization": "Bearer sk-c",
        TOKEN_HEADER: "tok",
    }
    assert client_keys(headers, "alt=sse&key=g-d") == ["sk-a", "g-b", "sk-c", "tok", "g-d"]


def test_aiohttps_headers_are_read_in_any_case() -> None:
    from multidict import CIMultiDict, CIMultiDictProxy  # noqa: PLC0415 - aiohttp's own

    given = CIMultiDictProxy(CIMultiDict([("IDEMPOTENCY-KEY", "mine"), ("X-Api-Key", "sk-a")]))
    assert idempotency_key("POST", "openai", given) == "mine"
    assert client_keys(given, "") == ["sk-a"]
    assert client_keys({"X-API-KEY": "sk-b"}, "") == ["sk-b"]
