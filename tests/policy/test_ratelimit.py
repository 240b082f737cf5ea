"""RateLimiter: pacing, fair queueing, blocks from rate-limit failures, provider headers."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from backstay import ConfigError, Failure
from backstay.policy.protocols import RateLimiterLike
from backstay.policy.ratelimit import RateLimiter, RateLimitSettings
from backstay.testing import FakeClock

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # FakeClock's wall time at its start


def _limited(seconds: float | None = None, **kw: object) -> Failure:
    return Failure(code="ERR_HTTP_429_RATE_LIMITED", retry_after_s=seconds, **kw)  # type: ignore[arg-type]


def _reserve_n(limiter: RateLimiter, n: int, tokens: float = 1.0) -> list[float]:
    return [limiter.reserve(tokens) for _ in range(n)]


def _at(seconds: float) -> str:
    return (START + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


# -- pacing -------------------------------------------------------------------------------


def test_a_limiter_without_limits_never_waits() -> None:
    limiter = RateLimiter("api", clock=FakeClock())
    assert _reserve_n(limiter, 100) == [0.0] * 100


def test_requests_go_at_once_up_to_the_burst_then_one_per_interval() -> None:
    limiter = RateLimiter("api", requests_per_minute=60, burst_s=3.0, clock=FakeClock())
    assert _reserve_n(limiter, 5) == [0.0, 0.0, 0.0, 1.0, 2.0]


def test_the_burst_holds_at_least_one_request() -> None:
    limiter = RateLimiter("api", requests_per_minute=6, burst_s=1.0, clock=FakeClock())
    assert _reserve_n(limiter, 2) == [0.0, 10.0]


def test_tokens_per_minute_paces_by_the_tokens_reserved() -> None:
    limiter = RateLimiter("api", tokens_per_minute=6000, burst_s=10.0, clock=FakeClock())
    assert _reserve_n(limiter, 3, tokens=500.0) == [0.0, 0.0, 5.0]


def test_the_wait_is_the_longer_of_the_two_buckets() -> None:
    limiter = RateLimiter(
        "api", requests_per_minute=60, tokens_per_minute=600, burst_s=1.0, clock=FakeClock()
    )
    assert _reserve_n(limiter, 2, tokens=1.0) == [0.0, 1.0]  # the requests bucket's wait
    assert limiter.reserve(tokens=50.0) == 4.2  # the tokens bucket's: 42 owed at 10 a second


def test_waiting_out_a_reservation_frees_the_next_slot() -> None:
    clock = FakeClock()
    limiter = RateLimiter("api", requests_per_minute=60, burst_s=1.0, clock=clock)
    limiter.reserve()
    clock.advance(1.0)
    assert limiter.reserve() == 0.0


def test_concurrent_callers_get_distinct_slots_in_a_fair_queue() -> None:
    limiter = RateLimiter("api", requests_per_minute=120, burst_s=1.0, clock=FakeClock())
    start = threading.Barrier(12)
    waits: list[float] = []
    lock = threading.Lock()

    def caller() -> None:
        start.wait(timeout=10)
        wait = limiter.reserve()
        with lock:
            waits.append(wait)

    threads = [threading.Thread(target=caller) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(waits) == [0.0, 0.0] + [0.5 * k for k in range(1, 11)]


def test_reserving_a_bad_amount_names_the_argument() -> None:
    with pytest.raises(ConfigError) as info:
        RateLimiter("api", clock=FakeClock()).reserve(-1.0)
    assert info.value.where == "tokens"


# -- rate-limit failures ------------------------------------------------------------------


def test_a_429_with_retry_after_blocks_every_caller_until_then() -> None:
    limiter = RateLimiter("api", clock=FakeClock())
    limiter.observe(_limited(30.0))
    assert _reserve_n(limiter, 3) == [30.0, 30.0, 30.0]


def test_the_block_ends_when_the_wait_is_over() -> None:
    clock = FakeClock()
    limiter = RateLimiter("api", clock=clock)
    limiter.observe(_limited(30.0))
    clock.advance(30.0)
    assert limiter.reserve() == 0.0


def test_a_429_with_a_reset_time_blocks_until_the_reset() -> None:
    limiter = RateLimiter("api", clock=FakeClock())
    limiter.observe(_limited(resets_at=START + dt.timedelta(seconds=45)))
    assert limiter.reserve() == 45.0


def test_after_a_block_callers_resume_one_by_one() -> None:
    limiter = RateLimiter("api", requests_per_minute=60, burst_s=10.0, clock=FakeClock())
    limiter.observe(_limited(30.0))
    assert _reserve_n(limiter, 3) == [31.0, 32.0, 33.0]


def test_a_429_without_a_wait_empties_the_buckets() -> None:
    limiter = RateLimiter("api", requests_per_minute=60, burst_s=10.0, clock=FakeClock())
    limiter.observe(_limited())
    assert limiter.reserve() == 1.0


def test_a_huge_wait_blocks_only_up_to_the_maximum() -> None:
    limiter = RateLimiter("api", max_block_s=120.0, clock=FakeClock())
    limiter.observe(_limited(86_400.0))
    assert limiter.reserve() == 120.0


def test_a_shorter_wait_does_not_cut_a_longer_block() -> None:
    limiter = RateLimiter("api", clock=FakeClock())
    limiter.observe(_limited(30.0))
    limiter.observe(_limited(5.0))
    assert limiter.reserve() == 30.0


def test_failures_other_than_rate_limits_change_nothing() -> None:
    limiter = RateLimiter("api", requests_per_minute=60, burst_s=10.0, clock=FakeClock())
    limiter.observe(Failure(code="ERR_HTTP_503_UNAVAILABLE", retry_after_s=30.0))
    assert limiter.reserve() == 0.0


# -- provider headers ---------------------------------------------------------------------


def test_anthropic_headers_size_an_unconfigured_limiter() -> None:
    limiter = RateLimiter("anthropic", burst_s=10.0, clock=FakeClock())
    limiter.update_from_headers(
        {
            "anthropic-ratelimit-requests-limit": "60",
            "anthropic-ratelimit-requests-remaining": "59",
            "anthropic-ratelimit-requests-reset": _at(1.0),
        }
    )
    bucket = limiter.snapshot().requests
    assert bucket is not None
    assert (bucket.capacity, bucket.refill_per_s, bucket.tokens) == (10.0, 1.0, 10.0)


def test_remaining_lowers_the_level() -> None:
    limiter = RateLimiter("openai", requests_per_minute=600, burst_s=10.0, clock=FakeClock())
    limiter.update_from_headers({"x-ratelimit-remaining-requests": "2"})
    assert _reserve_n(limiter, 4) == [0.0, 0.0, 0.1, 0.2]


def test_remaining_never_raises_the_level() -> None:
    limiter = RateLimiter("openai", requests_per_minute=60, burst_s=1.0, clock=FakeClock())
    limiter.reserve()
    limiter.update_from_headers({"x-ratelimit-remaining-requests": "500"})
    assert limiter.reserve() == 1.0


def test_an_exhausted_dimension_with_a_known_limit_is_paced_not_blocked_until_its_reset() -> None:
    # The reset is when the bucket is full again (60 s from empty); 1,000 tokens fit after 1 s.
    limiter = RateLimiter("anthropic", clock=FakeClock())
    limiter.update_from_headers(
        {
            "anthropic-ratelimit-tokens-limit": "60000",
            "anthropic-ratelimit-tokens-remaining": "0",
            "anthropic-ratelimit-tokens-reset": _at(60.0),
        }
    )
    assert limiter.snapshot().blocked_for_s == 0.0
    assert limiter.reserve(tokens=1000.0) == 1.0


def test_an_exhausted_openai_dimension_with_a_known_limit_is_paced_at_its_rate() -> None:
    limiter = RateLimiter("openai", clock=FakeClock())
    limiter.update_from_headers(
        {
            "x-ratelimit-limit-requests": "1200",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "1m0s",
        }
    )
    assert _reserve_n(limiter, 3) == [0.05, 0.1, 0.15]


def test_an_exhausted_anthropic_dimension_without_a_limit_blocks_until_its_reset() -> None:
    limiter = RateLimiter("anthropic", clock=FakeClock())
    limiter.update_from_headers(
        {
            "anthropic-ratelimit-tokens-remaining": "0",
            "anthropic-ratelimit-tokens-reset": _at(20.0),
        }
    )
    assert limiter.reserve(tokens=1000.0) == 20.0


def test_an_exhausted_openai_dimension_blocks_for_its_relative_reset() -> None:
    limiter = RateLimiter("openai", clock=FakeClock())
    limiter.update_from_headers(
        {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}
    )
    assert limiter.reserve() == 360.0


def test_headers_never_raise_a_configured_rate() -> None:
    limiter = RateLimiter("openai", requests_per_minute=60, clock=FakeClock())
    limiter.update_from_headers({"x-ratelimit-limit-requests": "10000"})
    bucket = limiter.snapshot().requests
    assert bucket is not None
    assert bucket.refill_per_s == 1.0


def test_headers_lower_a_configured_rate() -> None:
    limiter = RateLimiter("openai", requests_per_minute=600, burst_s=10.0, clock=FakeClock())
    limiter.update_from_headers({"x-ratelimit-limit-requests": "60"})
    bucket = limiter.snapshot().requests
    assert bucket is not None
    assert (bucket.capacity, bucket.refill_per_s) == (10.0, 1.0)


def test_anthropic_input_tokens_stand_in_for_tokens() -> None:
    limiter = RateLimiter("anthropic", burst_s=60.0, clock=FakeClock())
    limiter.update_from_headers({"anthropic-ratelimit-input-tokens-limit": "30000"})
    bucket = limiter.snapshot().tokens
    assert bucket is not None
    assert bucket.capacity == 30000.0


def test_header_names_and_shapes_do_not_matter() -> None:
    limiter = RateLimiter("openai", requests_per_minute=600, burst_s=10.0, clock=FakeClock())
    limiter.update_from_headers([(b"X-RateLimit-Remaining-Requests", b"0")])
    assert limiter.reserve() == 0.1


@pytest.mark.parametrize(
    "headers",
    [
        {},
        None,
        {"content-type": "application/json"},
        {"x-ratelimit-remaining-requests": "-1", "x-ratelimit-limit-requests": "-1"},
        {"x-ratelimit-remaining-requests": "lots"},
        {"anthropic-ratelimit-requests-reset": "soon"},
    ],
)
def test_headers_that_say_nothing_readable_change_nothing(headers: object) -> None:
    limiter = RateLimiter("api", clock=FakeClock())
    limiter.update_from_headers(headers)
    snap = limiter.snapshot()
    assert (snap.requests, snap.tokens, snap.blocked_for_s) == (None, None, 0.0)


def test_a_bucket_learned_during_a_block_starts_empty_at_its_end() -> None:
    limiter = RateLimiter("openai", burst_s=10.0, clock=FakeClock())
    limiter.observe(_limited(30.0))
    limiter.update_from_headers({"x-ratelimit-limit-requests": "60"})
    assert _reserve_n(limiter, 2) == [31.0, 32.0]


# -- reservations read against the provider's remaining ------------------------------------


def test_a_reservation_counts_the_requests_and_tokens_reserved_through_it() -> None:
    limiter = RateLimiter("api", requests_per_minute=60, burst_s=1.0, clock=FakeClock())
    first = limiter.reservation(tokens=40.0)
    second = limiter.reservation(tokens=25.0)
    assert (first.wait_s, first.requests_through, first.tokens_through) == (0.0, 1.0, 40.0)
    assert (second.wait_s, second.requests_through, second.tokens_through) == (1.0, 2.0, 65.0)


def test_remaining_answering_a_reservation_raises_the_level() -> None:
    limiter = RateLimiter("openai", requests_per_minute=600, burst_s=10.0, clock=FakeClock())
    limiter.update_from_headers({"x-ratelimit-remaining-requests": "0"})
    answered = limiter.reservation()
    _reserve_n(limiter, 4)
    limiter.update_from_headers({"x-ratelimit-remaining-requests": "50"}, answering=answered)
    # The provider had 50 left after the answered request; the 4 reserved after it are owed.
    bucket = limiter.snapshot().requests
    assert bucket is not None
    assert bucket.tokens == 46.0


def test_remaining_answering_a_reservation_counts_at_most_the_burst() -> None:
    limiter = RateLimiter("openai", requests_per_minute=600, burst_s=10.0, clock=FakeClock())
    answered = limiter.reservation()
    _reserve_n(limiter, 120)
    limiter.update_from_headers({"x-ratelimit-remaining-requests": "1000"}, answering=answered)
    bucket = limiter.snapshot().requests
    assert bucket is not None
    assert bucket.tokens == 100.0 - 120.0


def test_remaining_answering_a_reservation_lowers_by_what_was_reserved_after_it() -> None:
    limiter = RateLimiter("openai", tokens_per_minute=60_000, burst_s=10.0, clock=FakeClock())
    answered = limiter.reservation(tokens=100.0)
    limiter.reservation(tokens=300.0)
    limiter.update_from_headers({"x-ratelimit-remaining-tokens": "200"}, answering=answered)
    assert limiter.reserve(tokens=400.0) == 0.5  # 200 - 300 - 400 = -500 at 1,000 a second


# -- the object itself --------------------------------------------------------------------


def test_a_rate_limiter_is_what_the_driver_expects() -> None:
    assert isinstance(RateLimiter("api", clock=FakeClock()), RateLimiterLike)


def test_a_limiter_is_made_from_settings() -> None:
    settings = RateLimitSettings(requests_per_minute=30, burst_s=2.0)
    limiter = RateLimiter.from_settings("api", settings, clock=FakeClock())
    assert limiter.settings == settings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("requests_per_minute", 0),
        ("requests_per_minute", -5.0),
        ("tokens_per_minute", float("nan")),
        ("tokens_per_minute", "1000"),
        ("burst_s", 0.0),
        ("max_block_s", -1.0),
        ("max_block_s", float("inf")),
    ],
)
def test_bad_settings_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        RateLimitSettings(**{field: value})  # type: ignore[arg-type]
    assert info.value.where == f"RateLimitSettings.{field}"


def test_a_limiter_needs_a_name() -> None:
    with pytest.raises(ConfigError) as info:
        RateLimiter("", clock=FakeClock())
    assert info.value.where == "RateLimiter.name"


def test_a_limiter_is_made_only_from_rate_limit_settings() -> None:
    with pytest.raises(ConfigError) as info:
        RateLimiter.from_settings("api", {"requests_per_minute": 60})  # type: ignore[arg-type]
    assert info.value.where == "RateLimiter.settings"
