"""Goodput under a provider's rate limit: M calls by N concurrent workers against the fake
provider enforcing R requests per minute (and a tokens-per-minute variant), through three
clients in the same run:

* ``backstay``: ``async_openai_client`` with the ``standard`` policy and one
  ``RateLimiter`` shared by every worker, configured with nothing: it learns the limit
  from the provider's ``x-ratelimit-*`` headers and its 429s, as a user would run it;
* ``openai SDK``: ``AsyncOpenAI`` with its default retries (``max_retries=2``);
* ``tenacity``: ``AsyncOpenAI(max_retries=0)`` inside ``AsyncRetrying`` with
  ``wait_random_exponential(min=1, max=60)`` and ``stop_after_attempt(6)``, retrying
  ``openai.RateLimitError`` (the recipe OpenAI's own rate-limit guide gives).

The fake provider runs in its own process (``backstay fake-provider serve``, started and
stopped by PID), a fresh one for every run. Its bucket starts full — a minute's worth —
so each run first uses that minute up (requests until the first 429, before the clock
starts): from an empty bucket, M calls cannot finish before ``M / R``, the ideal every
row is divided by. Requests and 429s are the provider's own counts (``/_backstay/stats``);
wasted = 429s / requests; failed = calls that raised after their client gave up.

Run alone with ``.venv/bin/python bench/goodput.py``, or in ``make bench``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, Final

import httpx
import openai
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

import provider_process
from backstay.integrations import async_openai_client
from backstay.policy import RateLimiter

CALLS: Final = 200  # M
WORKERS: Final = 16  # N
RPM: Final = 1200  # R, the binding limit of the requests variant
# The tokens variant: requests are allowed five times as many, tokens bind (a call costs
# 78 tokens there: 60 in, 18 out, so 96,000 a minute is about 1,230 calls a minute).
TPM_RPM: Final = RPM * 5
TPM: Final = 96_000
PROMPT_WORDS: Final = 60
TARGET_RATIO: Final = 1.05
TARGET_WASTED: Final = 0.05
START_TIMEOUT_S: Final = 30.0
RUN_TIMEOUT_S: Final = 120.0
DRAIN_LIMIT: Final = 20_000
API_KEY: Final = "sk-bench-goodput-000000000000"
MODEL: Final = "gpt-5"
# 60 words of four letters: the fake provider's tokenizer counts one token each.
PROMPT: Final = " ".join(["word"] * PROMPT_WORDS)


@dataclasses.dataclass(frozen=True, slots=True)
class Limit:
    """One variant: the provider's limits, and the ideal time for the calls."""

    name: str
    rpm: int
    tpm: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class Result:
    client: str
    elapsed_s: float
    ideal_s: float
    requests: int
    rejected: int
    succeeded: int
    failed: int

    @property
    def ratio(self) -> float:
        return self.elapsed_s / self.ideal_s

    @property
    def wasted(self) -> float:
        return self.rejected / max(1, self.requests)


# ---- the provider, in its own process ---------------------------------------------------


def _provider(limit: Limit) -> AbstractContextManager[str]:
    """``backstay fake-provider serve`` with ``limit`` in a child process; its URL."""
    flags = ["--rpm", str(limit.rpm)]
    if limit.tpm is not None:
        flags += ["--tpm", str(limit.tpm)]
    return provider_process.serve(*flags)


def _stats(url: str) -> dict[str, Any]:
    response = httpx.get(url + "/_backstay/stats", timeout=START_TIMEOUT_S)
    response.raise_for_status()
    stats: dict[str, Any] = response.json()
    return stats


def _body() -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]}


def _drain(url: str) -> None:
    """Use the provider's minute up: requests until the first 429 (bounded in count)."""
    with httpx.Client(timeout=START_TIMEOUT_S) as client:
        for _ in range(DRAIN_LIMIT):
            response = client.post(
                url + "/v1/chat/completions",
                json=_body(),
                headers={"authorization": f"Bearer {API_KEY}"},
            )
            if response.status_code == 429:
                return
    raise RuntimeError(f"the provider's bucket was not empty after {DRAIN_LIMIT} requests")


# ---- the clients --------------------------------------------------------------------------

Create = Callable[[], Awaitable[object]]


def _backstay(url: str) -> tuple[Create, Callable[[], Awaitable[None]]]:
    limiter = RateLimiter("openai")
    client = async_openai_client(
        policy="standard", limiter=limiter, base_url=url + "/v1", api_key=API_KEY
    )

    async def create() -> object:
        return await client.chat.completions.create(model=MODEL, messages=_body()["messages"])

    return create, client.close


def _openai(url: str) -> tuple[Create, Callable[[], Awaitable[None]]]:
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=API_KEY)

    async def create() -> object:
        return await client.chat.completions.create(model=MODEL, messages=_body()["messages"])

    return create, client.close


def _tenacity(url: str) -> tuple[Create, Callable[[], Awaitable[None]]]:
    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=API_KEY, max_retries=0)

    async def create() -> object:
        async for attempt in AsyncRetrying(
            wait=wait_random_exponential(min=1, max=60),
            stop=stop_after_attempt(6),
            retry=retry_if_exception_type(openai.RateLimitError),
            reraise=True,
        ):
            with attempt:
                return await client.chat.completions.create(
                    model=MODEL, messages=_body()["messages"]
                )
        raise AssertionError("unreachable: tenacity re-raises the last error")

    return create, client.close


CLIENTS: Final = (("backstay", _backstay), ("openai SDK", _openai), ("tenacity", _tenacity))


async def _work(create: Create, calls: int, workers: int) -> tuple[int, int, float]:
    """``calls`` calls by ``workers`` workers; (succeeded, failed, wall seconds)."""
    left = calls
    succeeded = failed = 0

    async def worker() -> None:
        nonlocal left, succeeded, failed
        while left > 0:
            left -= 1
            try:
                await create()
            except openai.APIError:
                failed += 1
            else:
                succeeded += 1

    started = time.perf_counter()
    async with asyncio.timeout(RUN_TIMEOUT_S):
        await asyncio.gather(*(worker() for _ in range(workers)))
    return succeeded, failed, time.perf_counter() - started


def measure(name: str, build: Any, limit: Limit, calls: int, workers: int) -> Result:
    with _provider(limit) as url:
        create, close = build(url)
        _drain(url)
        before = _stats(url)
        succeeded, failed, elapsed = asyncio.run(_run(create, close, calls, workers))
        after = _stats(url)
    requests = after["requests"] - before["requests"]
    rejected = after["by_status"].get("429", 0) - before["by_status"].get("429", 0)
    if limit.tpm is None:
        ideal = calls / limit.rpm * 60.0
    else:  # what one call costs, as the provider charged the calls of the drain
        per_call = (before["input_tokens"] + before["output_tokens"]) / before["by_status"]["200"]
        ideal = calls * per_call / limit.tpm * 60.0
    return Result(name, elapsed, ideal, requests, rejected, succeeded, failed)


async def _run(
    create: Create, close: Callable[[], Awaitable[None]], calls: int, workers: int
) -> tuple[int, int, float]:
    try:
        return await _work(create, calls, workers)
    finally:
        await close()


def _row(result: Result) -> None:
    print(
        f"  {result.client:<12} {result.elapsed_s:7.2f} s {result.ratio:6.2f}x "
        f"{result.requests:8d} {result.rejected:6d} {result.wasted:7.1%} {result.failed:7d}"
    )


def report() -> None:
    """Print the goodput section."""
    limits = (
        Limit("requests per minute", RPM, None),
        Limit("tokens per minute", TPM_RPM, TPM),
    )
    print(
        f"\n== Goodput under a rate limit: M = {CALLS} calls, N = {WORKERS} workers, "
        f"fake provider in its own process, bucket used up before each run; one run each =="
    )
    for limit in limits:
        tpm = "" if limit.tpm is None else f", TPM = {limit.tpm:,}"
        print(f"\n  {limit.name}: RPM = {limit.rpm:,}{tpm}")
        print(
            f"  {'client':<12} {'wall':>9} {'/ideal':>7} {'requests':>8} {'429s':>6} "
            f"{'wasted':>7} {'failed':>7}"
        )
        results = [measure(name, build, limit, CALLS, WORKERS) for name, build in CLIENTS]
        print(f"  ideal: {results[0].ideal_s:.2f} s")
        for result in results:
            _row(result)
        ours = results[0]
        met = ours.ratio <= TARGET_RATIO and ours.wasted < TARGET_WASTED and not ours.failed
        print(
            f"  target for backstay: <= {TARGET_RATIO}x the ideal, < {TARGET_WASTED:.0%} "
            f"wasted: {'met' if met else 'MISSED'}"
        )


if __name__ == "__main__":
    report()
