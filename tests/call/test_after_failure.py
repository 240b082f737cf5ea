"""``backstay.call._after_failure.after_failure``: what the retry drivers do after a failed
attempt. Its short way for a plain failure under a policy that decides it plainly must give
exactly the answer of the general decision (``decide``) for every policy and failure."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backstay import Failure
from backstay.call import _after_failure as failure_path
from backstay.clock import seeded_unit
from backstay.events import Event, EventBus
from backstay.policy import Backoff, JitterMode, KindOverride, RetryPolicy, decide
from backstay.policy.retry import decide_delay
from backstay.taxonomy import CODES, FailureKind
from backstay.testing import FakeClock

_CODES = sorted(CODES)
_seconds = st.floats(min_value=0.0, max_value=30.0, allow_nan=False)


@st.composite
def _policies(draw: st.DrawFn) -> RetryPolicy:
    """Plain policies, and policies with one or more of what makes a policy not plain,
    seeded so draws repeat."""
    initial = draw(_seconds)
    plain = draw(st.booleans())

    def some(value: object, empty: object) -> object:
        return empty if plain else draw(st.sampled_from([empty, value]))

    return RetryPolicy(
        name=draw(st.sampled_from(["a", "b"])),
        max_attempts=draw(st.integers(min_value=1, max_value=70)),
        backoff=draw(st.sampled_from(list(Backoff))),
        initial_delay_s=initial,
        max_delay_s=initial + draw(_seconds),
        multiplier=draw(st.floats(min_value=1.0, max_value=4.0)),
        jitter_mode=draw(st.sampled_from(list(JitterMode))),
        jitter=draw(st.sampled_from([0.0, 0.25])),
        seed=7,
        retry_on=some(frozenset({"network"}), frozenset()),  # type: ignore[arg-type]
        never_retry_on=some(frozenset({"ERR_CONNECTION_RESET"}), frozenset()),  # type: ignore[arg-type]
        per_kind=some({FailureKind.NETWORK: KindOverride(max_attempts=2)}, {}),  # type: ignore[arg-type]
        deadline_s=draw(st.sampled_from([None, None, 5.0, 1_000.0])),
    )


_PLAIN = sorted(failure_path.PLAIN_CODES)
_failures = st.builds(
    Failure,
    code=st.one_of(st.sampled_from(_PLAIN), st.sampled_from(_CODES)),
    retry_after_s=st.sampled_from([None, None, None, 0.5, 3.0]),
)


@pytest.fixture
def silent_bus(monkeypatch: pytest.MonkeyPatch) -> EventBus:
    """A bus with no sink: under pytest the root logger has handlers, so the default bus is
    never silent here."""
    bus = EventBus()
    monkeypatch.setattr(failure_path, "BUS", bus)
    return bus


def _general(policy: RetryPolicy, failure: Failure, attempt: int, elapsed: float) -> float | None:
    """The delay ``decide`` gives (``None``: give up), with the draw the driver makes."""
    decision = decide(
        policy,
        failure,
        attempt=attempt,
        elapsed_s=elapsed,
        previous_delay_s=None,
        draw=seeded_unit(7, policy.name, attempt),
    )
    return decision.delay_s if decision.retry else None


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(policy=_policies(), failure=_failures, attempt=st.integers(min_value=1, max_value=72))
def test_every_answer_is_the_general_decision(
    silent_bus: EventBus, policy: RetryPolicy, failure: Failure, attempt: int
) -> None:
    clock = FakeClock()
    elapsed = 2.0
    started = clock.monotonic() - elapsed
    expected = _general(policy, failure, attempt, elapsed)
    exc = ConnectionError("reset")
    if expected is None:
        with pytest.raises(ConnectionError):
            failure_path.after_failure(
                policy, clock, None, attempt, started, None, exc, failure, None
            )
    else:
        got = failure_path.after_failure(
            policy, clock, None, attempt, started, None, exc, failure, None
        )
        assert got == expected


def test_a_plain_failure_under_a_plain_policy_is_not_decided_the_general_way(
    silent_bus: EventBus, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []

    def counting(*args: object) -> tuple[float, str | None]:
        asked.append(1)
        raise AssertionError("the general decision ran")

    monkeypatch.setattr(failure_path, "decide_delay", counting)
    policy = RetryPolicy(max_attempts=4, initial_delay_s=0.5, jitter_mode=JitterMode.NONE)
    reset = Failure(code="ERR_CONNECTION_RESET")
    clock = FakeClock()
    got = [
        failure_path.after_failure(
            policy, clock, None, n, clock.monotonic(), None, ConnectionError(), reset, None
        )
        for n in (1, 2, 3)
    ]
    assert got == [0.5, 1.0, 2.0]
    assert asked == []


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(Failure(code="ERR_UNKNOWN"), id="unknown-has-its-own-limit"),
        pytest.param(Failure(code="ERR_LLM_RATE_LIMITED", retry_after_s=2.0), id="retry-after"),
        pytest.param(Failure(code="ERR_LLM_CONTEXT_LENGTH"), id="not-retryable"),
    ],
)
def test_a_failure_that_is_not_plain_is_decided_the_general_way(
    silent_bus: EventBus, monkeypatch: pytest.MonkeyPatch, failure: Failure
) -> None:
    asked: list[int] = []
    real = decide_delay

    def counting(*args: object) -> tuple[float, str | None]:
        asked.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(failure_path, "decide_delay", counting)
    policy = RetryPolicy(max_attempts=4, jitter_mode=JitterMode.NONE)
    clock = FakeClock()
    with contextlib.suppress(ConnectionError):
        failure_path.after_failure(
            policy, clock, None, 1, clock.monotonic(), None, ConnectionError(), failure, None
        )
    assert asked == [1]


def test_a_sink_that_wants_events_gets_them_for_a_plain_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[Event] = []

    class Taking:
        min_level = 0

        def accepts(self, level: int) -> bool:
            return True

        def emit(self, event: Event) -> None:
            taken.append(event)

    monkeypatch.setattr(failure_path, "BUS", EventBus((Taking(),)))
    policy = RetryPolicy(max_attempts=3, jitter_mode=JitterMode.NONE)
    clock = FakeClock()
    failure_path.after_failure(
        policy,
        clock,
        "op",
        1,
        clock.monotonic(),
        None,
        ConnectionError(),
        Failure(code="ERR_CONNECTION_RESET"),
        None,
    )
    assert [event.name for event in taken] == ["retry.attempt_failed", "task.retrying"]
