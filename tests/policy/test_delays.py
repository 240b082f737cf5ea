"""Per-policy delay tables (``backstay.policy._delays``): what ``decide`` looks up for a
policy without jitter is exactly what ``next_delay`` computes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from backstay import Failure
from backstay.policy import Backoff, JitterMode, RetryPolicy, decide
from backstay.policy._delays import fixed_delays, needs_draw
from backstay.policy.backoff import next_delay

RESET = Failure(code="ERR_CONNECTION_RESET")

_seconds = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)


@st.composite
def _unjittered(draw: st.DrawFn) -> RetryPolicy:
    initial = draw(_seconds)
    return RetryPolicy(
        max_attempts=draw(st.integers(min_value=1, max_value=80)),
        backoff=draw(st.sampled_from(list(Backoff))),
        initial_delay_s=initial,
        max_delay_s=initial + draw(_seconds),
        multiplier=draw(st.floats(min_value=1.0, max_value=10.0)),
        jitter_mode=draw(st.sampled_from([JitterMode.NONE, JitterMode.PROPORTIONAL])),
        jitter=0.0,
    )


@settings(max_examples=200, deadline=None)
@given(_unjittered())
def test_a_policy_without_jitter_waits_what_its_backoff_computes(policy: RetryPolicy) -> None:
    for attempt in range(1, policy.max_attempts):
        expected = next_delay(
            policy.backoff,
            attempt,
            initial_s=policy.initial_delay_s,
            multiplier=policy.multiplier,
            max_s=max(policy.max_delay_s, policy.initial_delay_s),
            jitter=policy.jitter,
            jitter_mode=policy.jitter_mode,
            previous_s=None,
            draw=0.7,
        )
        got = decide(policy, RESET, attempt=attempt, elapsed_s=0.0, previous_delay_s=None, draw=0.7)
        assert got.retry
        assert got.delay_s == expected


def test_a_jittered_policy_has_no_table_and_draws() -> None:
    policy = RetryPolicy(jitter_mode="full")
    assert needs_draw(policy)
    assert fixed_delays(policy) is None


def test_proportional_jitter_of_zero_draws_nothing() -> None:
    assert not needs_draw(RetryPolicy(jitter=0.0))
    assert needs_draw(RetryPolicy(jitter=0.1))


def test_a_derived_policy_gets_its_own_table() -> None:
    base = RetryPolicy(initial_delay_s=1.0, max_delay_s=10.0, jitter_mode="none")
    derived = base.derive(initial_delay_s=2.0)
    assert fixed_delays(base) == (1.0, 2.0)
    assert fixed_delays(derived) == (2.0, 4.0)
