"""TokenRatio: charged per estimated token, from successive answers' ``remaining``."""

from __future__ import annotations

import pytest

from backstay.policy._token_ratio import MAX_RATIO, MIN_PAIRS, MIN_RATIO, TokenRatio

LIMIT = 60_000.0  # a thousand tokens a second


def _chain(steps: list[tuple[float, float, float]], **kw: float) -> TokenRatio:
    """Answers of (estimated_through, remaining, at)."""
    ratio = TokenRatio()
    for estimated, remaining, at in steps:
        ratio = ratio.answered(
            estimated_through=estimated, remaining=remaining, limit=LIMIT, at=at, **kw
        )
    return ratio


def test_the_ratio_is_one_until_enough_pairs_were_seen() -> None:
    steps = [(100.0 * n, 50_000.0 - 150.0 * n, 0.0) for n in range(1, MIN_PAIRS + 1)]
    assert _chain(steps).ratio == 1.0  # MIN_PAIRS answers make one pair fewer
    steps.append((100.0 * (MIN_PAIRS + 1), 50_000.0 - 150.0 * (MIN_PAIRS + 1), 0.0))
    assert _chain(steps).ratio == pytest.approx(1.5)


def test_the_refill_between_two_answers_counts_as_charged_capacity() -> None:
    # Each 100 estimated costs 130; a second passes between answers: 1,000 refilled.
    steps = [(100.0 * n, 50_000.0 - 130.0 * n + 1000.0 * n, float(n)) for n in range(8)]
    assert _chain(steps).ratio == pytest.approx(1.3)


def test_the_ratio_is_bounded() -> None:
    high = [(10.0 * n, 50_000.0 - 500.0 * n, 0.0) for n in range(8)]
    low = [(1000.0 * n, 50_000.0 - 10.0 * n, 0.0) for n in range(8)]
    assert (_chain(high).ratio, _chain(low).ratio) == (MAX_RATIO, MIN_RATIO)


def test_an_answer_to_an_earlier_request_is_skipped() -> None:
    steps = [(100.0 * n, 50_000.0 - 110.0 * n, 0.0) for n in range(8)]
    steps.insert(4, (150.0, 10.0, 0.0))  # late, and absurd: it must not count
    assert _chain(steps).ratio == pytest.approx(1.1)


def test_a_pair_over_which_the_providers_bucket_may_have_been_full_says_nothing() -> None:
    # Charged 300 each, but refilled to the top again between answers: the refill that
    # overflowed is not known, so neither is the charge.
    steps = [(100.0 * n, LIMIT - 10.0, 0.5 * n) for n in range(8)]
    assert _chain(steps).ratio == 1.0


def test_refused_requests_are_not_counted_as_estimated() -> None:
    # Every request estimated at 100 is charged 100, but every other one was refused (a
    # 429 charges nothing): counting them would halve the ratio.
    ratio = TokenRatio()
    remaining = 50_000.0
    for n in range(1, 12):
        refused = n % 2 == 0
        if not refused:
            remaining -= 100.0
        ratio = ratio.answered(
            estimated_through=100.0 * n,
            remaining=remaining,
            limit=LIMIT,
            at=0.0,
            refused=100.0 if refused else 0.0,
        )
    assert ratio.ratio == pytest.approx(1.0)
