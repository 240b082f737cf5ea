"""The shared rate limiter: the in-process limiter's behaviour, from one Redis hash that
every process's handle shares (real server, and fakeredis with Lua for the unit level)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import fakeredis
import pytest

from backstay.failure import Failure
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.store.location import StoreLocation, parse_store
from backstay.store.redis._client import RedisConnection
from backstay.store.redis.limiter import RedisRateLimiter, credential_fingerprint

# 10 at once, then one a second: slow enough that a loaded machine's delays between calls
# (tenths of a second) cannot refill the bucket in the middle of a test.
SETTINGS = RateLimitSettings(requests_per_minute=60, burst_s=10.0)
Limiter = RedisRateLimiter | RateLimiter
Maker = Callable[[RateLimitSettings], Limiter]


@pytest.fixture(params=["memory", "fakeredis", "redis"])
def make(request: pytest.FixtureRequest) -> Iterator[Maker]:
    """Makes handles on ONE limiter (memory: the same object, as threads share it)."""
    if request.param == "memory":
        made: dict[str, RateLimiter] = {}

        def memory(settings: RateLimitSettings) -> Limiter:
            return made.setdefault("p/m", RateLimiter.from_settings("p/m", settings))

        yield memory
        return
    if request.param == "fakeredis":
        location = parse_store("redis://fake:6379/0?namespace=unit")
        server = fakeredis.FakeServer()
        conns = [RedisConnection(location, client=fakeredis.FakeRedis(server=server))]
    else:
        location = request.getfixturevalue("redis_location")
        conns = []

    def shared(settings: RateLimitSettings) -> Limiter:
        conn = (
            RedisConnection(location, client=fakeredis.FakeRedis(server=server))
            if request.param == "fakeredis"
            else RedisConnection(location)
        )
        conns.append(conn)
        return RedisRateLimiter("p/m", conn, settings=settings)

    yield shared
    for conn in conns:
        conn.close()


def test_a_full_bucket_admits_its_burst_at_once_then_paces(make: Maker) -> None:
    limiter = make(SETTINGS)
    waits = [limiter.reserve() for _ in range(11)]
    assert waits[:10] == [0.0] * 10
    assert 0.5 < waits[10] <= 1.0 + 1e-6


def test_two_handles_queue_in_one_line(make: Maker) -> None:
    one, two = make(SETTINGS), make(SETTINGS)
    for _ in range(5):
        assert one.reserve() == 0.0
        assert two.reserve() == 0.0
    assert one.reserve() > 0.5
    assert two.reserve() > 1.5


def test_a_rate_limit_with_a_wait_blocks_every_handle(make: Maker) -> None:
    one, two = make(SETTINGS), make(SETTINGS)
    one.observe(Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=2.0))
    # the block, then one refill: callers resume at the rate, not all at once
    assert 2.8 < two.reserve() <= 3.05


def test_a_failure_that_is_not_a_rate_limit_changes_nothing(make: Maker) -> None:
    limiter = make(SETTINGS)
    limiter.observe(Failure(code="ERR_HTTP_503_UNAVAILABLE"))
    assert limiter.reserve() == 0.0


def test_a_long_wait_is_capped_at_max_block(make: Maker) -> None:
    one = make(RateLimitSettings(requests_per_minute=600, max_block_s=1.0))
    one.observe(Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=3600.0))
    assert 0.8 < make(RateLimitSettings(requests_per_minute=600, max_block_s=1.0)).reserve() <= 1.1


def test_limits_learned_from_headers_pace_every_handle(make: Maker) -> None:
    unlimited = RateLimitSettings(probe_timeout_s=0.0)
    one, two = make(unlimited), make(unlimited)
    assert two.reserve() == 0.0
    one.update_from_headers(
        {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}
    )
    assert 0.9 < two.reserve() <= 1.05  # 60 a minute: the next one a second later


def test_remaining_from_headers_lowers_the_level_and_never_raises_it(make: Maker) -> None:
    one = make(SETTINGS)
    one.update_from_headers(
        {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "2"}
    )
    assert [one.reserve() for _ in range(2)] == [0.0, 0.0]
    assert one.reserve() > 0.5
    one.update_from_headers(
        {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "50"}
    )
    assert one.reserve() > 1.5


def test_each_limiter_is_one_key_tagged_by_provider_model_and_credential(
    redis_location: StoreLocation,
) -> None:
    conn = RedisConnection(redis_location)
    try:
        fingerprint = credential_fingerprint("sk-canary-credential-value")
        limiter = RedisRateLimiter(
            "anthropic/claude", conn, settings=SETTINGS, credential=fingerprint
        )
        limiter.reserve()
        keys = [k.decode() for k in conn.client.scan_iter(f"{{{redis_location.namespace}:*")]
        assert keys == [f"{{{redis_location.namespace}:lim:anthropic/claude@{fingerprint}}}"]
        assert "sk-canary" not in keys[0]
    finally:
        conn.close()


def test_headers_answering_a_reservation_set_the_level_even_upwards(make: Maker) -> None:
    limiter = make(SETTINGS)
    for _ in range(11):
        last = limiter.reservation()
    assert last.wait_s > 0.5
    limiter.update_from_headers(
        {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "5"},
        answering=last,
    )
    assert limiter.reserve() == 0.0  # the provider had 5 left after our last: go now


# -- discovery: no limit configured nor learned yet ----------------------------------------

DISCOVERING = RateLimitSettings(probe_timeout_s=5.0)


def test_the_first_reservation_is_the_probe_and_the_others_are_held(make: Maker) -> None:
    one, two = make(DISCOVERING), make(DISCOVERING)
    probe = one.reservation()
    assert (probe.probe, probe.wait_s, probe.recheck_s) == (True, 0.0, None)
    held = two.reservation()
    assert held.recheck_s is not None
    assert not held.probe
    assert 4.0 < held.wait_s <= 5.0  # what is left of the probe's time
    assert two.recheck(held).recheck_s is not None  # still held


@pytest.mark.parametrize("end", ["settled", "headers", "rate_limited", "failed"])
def test_the_probes_answer_lets_the_held_ones_go(make: Maker, end: str) -> None:
    one, two = make(DISCOVERING), make(DISCOVERING)
    probe = one.reservation()
    held = two.reservation()
    if end == "settled":
        one.settle(probe)
    elif end == "headers":
        one.update_from_headers(
            {"x-ratelimit-limit-requests": "6000", "x-ratelimit-remaining-requests": "5999"},
            answering=probe,
        )
    elif end == "rate_limited":
        one.observe(Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=0.0))
    else:
        one.observe(Failure(code="ERR_HTTP_503_UNAVAILABLE"))
    placed = two.recheck(held)
    assert placed.recheck_s is None
    assert placed.wait_s == 0.0
    assert two.reservation().recheck_s is None  # discovery is over for every handle


def test_a_probe_that_never_answers_holds_the_others_only_for_its_time(make: Maker) -> None:
    quick = RateLimitSettings(probe_timeout_s=0.2)
    one, two = make(quick), make(quick)
    one.reservation()
    held = two.reservation()
    assert held.recheck_s is not None
    deadline = time.monotonic() + 10.0
    while held.recheck_s is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        held = two.recheck(held)
    assert held.recheck_s is None


def test_a_configured_limit_or_reserve_is_never_held(make: Maker) -> None:
    configured = make(SETTINGS)
    assert [r.recheck_s for r in (configured.reservation(), configured.reservation())] == [
        None,
        None,
    ]
    discovering = make(RateLimitSettings(probe_timeout_s=5.0))
    assert discovering.reserve() == 0.0
    assert discovering.reserve() == 0.0
