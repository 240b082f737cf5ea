"""Shared by the gateway's rate-limit tests: a provider whose bucket someone else has
already used up, and raw requests (Anthropic Messages or Gemini generateContent) sent to
gateways from several threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import httpx
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, GEMINI_MODEL, TIMEOUT_S

from backstay.fakeprovider import FakeProvider

# Per API: the path, the headers and the body of one small request.
REQUESTS: Final[dict[str, tuple[str, dict[str, str], dict[str, Any]]]] = {
    "anthropic": (
        "/v1/messages",
        {"x-api-key": CANARY_KEY, "anthropic-version": "2023-06-01"},
        {
            "model": ANTHROPIC_MODEL,
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}],
        },
    ),
    "gemini": (
        f"/v1beta/models/{GEMINI_MODEL}:generateContent",
        {"x-goog-api-key": CANARY_KEY},
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
}
# A drain that needs more than this many requests is a provider without a limit.
DRAIN_LIMIT: Final = 5_000


def drain(fake: FakeProvider, api: str = "anthropic") -> int:
    """Use the provider's bucket up: requests straight to it until the first 429. The
    number sent."""
    path, headers, body = REQUESTS[api]
    with httpx.Client(base_url=fake.url, timeout=TIMEOUT_S) as client:
        for sent in range(1, DRAIN_LIMIT + 1):
            if client.post(path, json=body, headers=headers).status_code == 429:
                return sent
    raise AssertionError(f"the provider's bucket was not empty after {DRAIN_LIMIT} requests")


def send(urls: list[str], count: int, *, api: str = "anthropic", threads: int = 8) -> list[int]:
    """``count`` requests, the i-th to ``urls[i % len(urls)]``, from ``threads`` threads
    at once; the status each got."""
    path, headers, body = REQUESTS[api]

    def one(i: int) -> int:
        url = urls[i % len(urls)]
        return httpx.post(url + path, json=body, headers=headers, timeout=60.0).status_code

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))
