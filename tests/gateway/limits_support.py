"""Shared by the gateway's rate-limit tests: a provider whose bucket someone else has
already used up, and raw Messages requests sent to the gateway from several threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import httpx
from tests.gateway.helpers import ANTHROPIC_MODEL, CANARY_KEY, TIMEOUT_S

from backstay.fakeprovider import FakeProvider

HEADERS: Final = {"x-api-key": CANARY_KEY, "anthropic-version": "2023-06-01"}
BODY: Final[dict[str, Any]] = {
    "model": ANTHROPIC_MODEL,
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}
# A drain that needs more than this many requests is a provider without a limit.
DRAIN_LIMIT: Final = 5_000


def drain(fake: FakeProvider) -> int:
    """Use the provider's bucket up: requests straight to it until the first 429. The
    number sent."""
    with httpx.Client(base_url=fake.url, timeout=TIMEOUT_S) as client:
        for sent in range(1, DRAIN_LIMIT + 1):
            if client.post("/v1/messages", json=BODY, headers=HEADERS).status_code == 429:
                return sent
    raise AssertionError(f"the provider's bucket was not empty after {DRAIN_LIMIT} requests")


def send(urls: list[str], count: int, *, threads: int = 8) -> list[int]:
    """``count`` Messages requests, the i-th to ``urls[i % len(urls)]``, from ``threads``
    threads at once; the status each got."""

    def one(i: int) -> int:
        url = urls[i % len(urls)]
        answer = httpx.post(f"{url}/v1/messages", json=BODY, headers=HEADERS, timeout=60.0)
        return answer.status_code

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))
