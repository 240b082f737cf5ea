"""Waiting for the probe: a request whose own failures met its model's open circuit (and
that has no fallback model to move to) waits for the circuit's next probe when the
gateway's policy lets it wait that long, and is then sent again, as the probe.

What it may wait, read as the retry driver reads a provider's ``Retry-After``
(``backstay.policy.retry.decide_delay``):

* the wait for the probe is one retry's wait: at most the policy's ``max_retry_after_s``
  (counted from when the request met the open circuit);
* the request's ``deadline_s`` (counted from its first attempt) must hold the wait;
* the probe is one more attempt: the request must have one left of ``max_attempts``;
* a request waits at most ``MAX_PROBE_WAITS`` times (a probe it lost to another request
  is not an attempt of its own).

``probe_wait`` is the pure decision; ``await_probe`` sleeps it, asking the breaker again
after each sleep (another request's probe may have closed the circuit, or failed and
opened it again; while every probe is out, it asks again every ``PROBE_POLL_S``). A
request let through is sent again under ``remaining_policy``: what is left of the
gateway's attempts and deadline.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from backstay.breaker import CircuitBreaker, CircuitState
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.errors import CircuitOpen
from backstay.policy.retry import RETRY_AFTER_MARGIN_S, RetryPolicy

__all__ = [
    "MAX_PROBE_WAITS",
    "PROBE_POLL_S",
    "ProbeWaited",
    "Probing",
    "await_probe",
    "probe_wait",
    "remaining_policy",
]

# While every half-open probe is out (another request's), how often the circuit is asked
# again: the probe's answer closes it or opens it again.
PROBE_POLL_S: Final = 0.25
# The most times one request waits for a probe.
MAX_PROBE_WAITS: Final = 16


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Probing:
    """A request sent again after waiting for its circuit's probe: ``since``, when its
    first attempt started (monotonic); ``policy``, what is left of the gateway's policy
    for it; ``waits``, how many times it has waited."""

    since: float
    policy: RetryPolicy
    waits: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProbeWaited:
    """How a wait for the probe ended: ``probing``, the circuit lets a call go now (closed,
    or a probe is free) and the request goes again so; else (``None``) ``retry_after_s``,
    the wait still ahead of the next probe (``None``: every probe is out), past what the
    request may wait."""

    probing: Probing | None
    retry_after_s: float | None


def probe_wait(
    policy: RetryPolicy,
    retry_after_s: float | None,
    *,
    attempts: int,
    elapsed_s: float,
    waited_s: float = 0.0,
    waits: int = 0,
) -> float | None:
    """The sleep before asking the circuit again, for a request that made ``attempts``
    attempts over ``elapsed_s``, waited ``waits`` times before and ``waited_s`` for this
    probe already, when the next probe is ``retry_after_s`` away (``None``: every probe is
    out, asked again in ``PROBE_POLL_S``); ``None`` when that is past what ``policy`` lets
    it wait."""
    if attempts >= policy.max_attempts or waits >= MAX_PROBE_WAITS:
        return None
    ahead = PROBE_POLL_S if retry_after_s is None else max(0.0, retry_after_s)
    if waited_s + ahead > policy.max_retry_after_s:
        return None
    wait = ahead + RETRY_AFTER_MARGIN_S  # timers fire early: a little past the probe's time
    deadline = policy.deadline_s
    if deadline is not None and elapsed_s + wait > deadline:
        return None
    return wait


def remaining_policy(policy: RetryPolicy, *, attempts: int, elapsed_s: float) -> RetryPolicy:
    """``policy`` for a request's next attempts after ``attempts`` over ``elapsed_s``: the
    attempts and the deadline it has left (at least one attempt, a deadline of at least 0)."""
    deadline = policy.deadline_s
    return policy.derive(
        max_attempts=max(1, policy.max_attempts - attempts),
        deadline_s=None if deadline is None else max(0.0, deadline - elapsed_s),
    )


async def await_probe(  # noqa: PLR0917 - one request's state
    breaker: CircuitBreaker,
    policy: RetryPolicy,
    refused: CircuitOpen,
    attempts: int,
    waits: int,
    since: float,
    *,
    clock: Clock = SYSTEM_CLOCK,
) -> ProbeWaited:
    """Sleep until ``breaker`` lets a call go, while ``probe_wait`` allows, for a request
    under ``policy`` that started at ``since`` (``clock.monotonic``), made ``attempts``
    attempts, waited ``waits`` times before, and was just ``refused``."""
    retry_after_s = refused.retry_after_s
    waited = 0.0
    while True:  # each turn sleeps at least RETRY_AFTER_MARGIN_S, within the bounds
        elapsed = clock.monotonic() - since
        wait = probe_wait(
            policy,
            retry_after_s,
            attempts=attempts,
            elapsed_s=elapsed,
            waited_s=waited,
            waits=waits,
        )
        if wait is None:
            return ProbeWaited(probing=None, retry_after_s=retry_after_s)
        await clock.asleep(wait)
        waited += wait
        snapshot = breaker.snapshot()
        if snapshot.state is CircuitState.CLOSED or snapshot.retry_after_s == 0.0:
            elapsed = clock.monotonic() - since
            left = remaining_policy(policy, attempts=attempts, elapsed_s=elapsed)
            return ProbeWaited(
                probing=Probing(since=since, policy=left, waits=waits + 1), retry_after_s=None
            )
        retry_after_s = snapshot.retry_after_s
