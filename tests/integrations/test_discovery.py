"""A limiter configured with nothing, against the fake provider enforcing a limit whose
bucket is already empty: the first wave of concurrent calls no longer floods it. The
provider's own 429 count is checked, never the time."""

from __future__ import annotations

import asyncio

import httpx

from backstay.fakeprovider import FakeProvider, RateLimit, Scenario
from backstay.integrations import async_openai_client
from backstay.policy.ratelimit import RateLimiter

RPM = 600
WORKERS = 8
KEY = "sk-test-discovery-0000000000000000"
MESSAGES = [{"role": "user", "content": "Say something short."}]
BOUND_S = 60.0


def _drain(url: str) -> None:
    """Use the provider's minute up: requests until the first 429 (bounded in count)."""
    with httpx.Client(timeout=BOUND_S) as client:
        for _ in range(RPM * 2):
            response = client.post(
                url + "/v1/chat/completions",
                json={"model": "gpt-5", "messages": MESSAGES},
                headers={"authorization": f"Bearer {KEY}"},
            )
            if response.status_code == 429:
                return
    raise AssertionError("the provider's bucket did not run out")


async def _wave(url: str) -> list[object]:
    limiter = RateLimiter("openai")
    client = async_openai_client(
        policy="standard", limiter=limiter, base_url=url + "/v1", api_key=KEY
    )
    try:
        async with asyncio.timeout(BOUND_S):
            return await asyncio.gather(
                *(
                    client.chat.completions.create(model="gpt-5", messages=MESSAGES)  # type: ignore[arg-type]
                    for _ in range(WORKERS)
                )
            )
    finally:
        await client.close()


def test_the_first_wave_into_an_empty_bucket_is_not_a_burst_of_429s() -> None:
    with FakeProvider(Scenario(rate_limit=RateLimit(requests_per_minute=RPM))) as fake:
        _drain(fake.url)
        before = fake.stats().by_status.get(429, 0)
        answers = asyncio.run(_wave(fake.url))
        refused = fake.stats().by_status.get(429, 0) - before
    assert len(answers) == WORKERS
    # Without discovery all eight go at once and most are refused; the probe alone may be.
    assert refused <= 1
