"""One driver process of the shared-limiter tests and benchmark: ``requests`` Anthropic
Messages calls to the fake provider at ``base_url`` from ``threads`` threads, each through
backstay's ``RetryTransport`` in an httpx client, paced by one rate limiter: the shared
Redis one (``--redis URL``) or one of its own (in-process). Prints one JSON line: how
many calls succeeded and how long the process took.

    python limiter_driver.py BASE_URL --requests N [--threads T] [--rpm R] [--burst-s S]
                             [--redis URL] [--wait-go]

``--wait-go``: set everything up, print ``ready``, and start only on a line on stdin (a
benchmark starts every process at once, after its own preparation).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time

import httpx

from backstay.integrations import RetryTransport
from backstay.policy.protocols import RateLimiterLike
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.policy.retry import RetryPolicy

POLICY = RetryPolicy(
    name="driver", max_attempts=20, initial_delay_s=0.2, max_delay_s=2.0, jitter=0.1
)
BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}


def _limiter(args: argparse.Namespace) -> RateLimiterLike:
    settings = RateLimitSettings(
        requests_per_minute=args.rpm, burst_s=args.burst_s, probe_timeout_s=0.0
    )
    if args.redis is None:
        return RateLimiter.from_settings("fake/claude", settings)
    from backstay.store.location import parse_store  # noqa: PLC0415 - only with --redis
    from backstay.store.redis._client import RedisConnection  # noqa: PLC0415
    from backstay.store.redis.limiter import RedisRateLimiter  # noqa: PLC0415

    return RedisRateLimiter(
        "fake/claude", RedisConnection(parse_store(args.redis)), settings=settings
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--rpm", type=float, default=None)
    parser.add_argument("--burst-s", type=float, default=10.0)
    parser.add_argument("--redis", default=None)
    parser.add_argument(
        "--wait-go", action="store_true", help="say ready, then start on a line on stdin"
    )
    args = parser.parse_args()
    transport = RetryTransport(
        httpx.HTTPTransport(), policy=POLICY, limiter=_limiter(args), provider="anthropic"
    )
    client = httpx.Client(base_url=args.base_url, transport=transport, timeout=30.0)
    headers = {"x-api-key": "test-key", "anthropic-version": "2023-06-01"}
    counter = itertools.count()
    ok = [0] * args.threads

    def worker(index: int) -> None:
        while next(counter) < args.requests:
            response = client.post("/v1/messages", json=BODY, headers=headers)
            if response.status_code == 200:
                ok[index] += 1

    if args.wait_go:
        print("ready", flush=True)
        sys.stdin.readline()
    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    client.close()
    print(json.dumps({"ok": sum(ok), "wall_s": time.monotonic() - started}))


if __name__ == "__main__":
    main()
