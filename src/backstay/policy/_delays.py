"""Per-policy constants the retry drivers would otherwise recompute on every failure.

A policy without jitter (``jitter_mode="none"``, or proportional jitter of 0) has a fixed
delay before each retry: ``next_delay`` of its backoff with no draw. Those delays are worked
out once per policy object and looked up afterwards. Policies are frozen, so a policy's
table never goes stale; the table is found by the policy's identity and checked against
it, so a policy that was freed and whose ``id`` was reused is never confused with another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from backstay.policy.backoff import JitterMode, base_delay

if TYPE_CHECKING:
    from backstay.policy.retry import RetryPolicy

__all__ = ["Entry", "base_delays", "fixed_delays", "needs_draw", "plain_retries", "table"]

# Retries beyond this many are computed each time (a policy of 1,000 attempts keeps a
# short table).
_MAX_TABLE: Final = 64
_MAX_POLICIES: Final = 1024

# Per policy: (the policy, its fixed delays or ``None`` when drawn, its un-jittered delays,
# how many retries its plain decision covers — see ``plain_retries`` —, the cap jitter
# keeps a delay under).
Entry = tuple["RetryPolicy | None", tuple[float, ...] | None, tuple[float, ...], int, float]
_tables: dict[int, Entry] = {}
_last: list[Entry] = [(None, None, (), 0, 0.0)]


def needs_draw(policy: RetryPolicy) -> bool:
    """Whether the policy's delays use the random draw at all (jitter of some kind)."""
    mode = policy.jitter_mode
    if mode is JitterMode.PROPORTIONAL:
        return policy.jitter > 0.0
    return mode is not JitterMode.NONE


def table(policy: RetryPolicy) -> Entry:
    """The policy's entry: (the policy, ``fixed_delays``, ``base_delays``, its plain
    retries, its jitter cap); the retry drivers read ``_last[0]`` first when it is the same
    policy."""
    last = _last[0]  # the policy asked last: most loops ask about one policy
    if last[0] is policy:
        return last
    found = _tables.get(id(policy))
    if found is None or found[0] is not policy:
        initial, maximum = policy.initial_delay_s, policy.max_delay_s
        base = tuple(
            base_delay(
                policy.backoff,
                retry,
                initial_s=initial,
                multiplier=policy.multiplier,
                max_s=max(maximum, initial),
            )
            for retry in range(1, min(policy.max_attempts, _MAX_TABLE))
        )
        # Without a draw, ``next_delay`` is the un-jittered delay itself.
        found = (
            policy,
            None if needs_draw(policy) else base,
            base,
            plain_retries(policy, base),
            max(maximum, initial),
        )
        if len(_tables) >= _MAX_POLICIES:
            _tables.clear()
        _tables[id(policy)] = found
    _last[0] = found
    return found


def plain_retries(policy: RetryPolicy, base: tuple[float, ...]) -> int:
    """How many retries (from the first) the policy decides plainly for a *plain* failure —
    a retryable code of a kind other than ``unknown`` and ``cancelled``, with no
    retry-after: retry, after the table's delay (``base``, jittered unless fixed). That is
    every retry the table holds when nothing else of the policy takes part: no
    ``retry_on`` / ``never_retry_on``, no per-kind or per-category override, no deadline,
    and a jitter that needs no previous delay (not decorrelated); otherwise none."""
    plain = (
        not policy.retry_on
        and not policy.never_retry_on
        and not policy.per_kind
        and not policy.per_category
        and policy.deadline_s is None
        and policy.jitter_mode is not JitterMode.DECORRELATED
    )
    return len(base) if plain else 0


def fixed_delays(policy: RetryPolicy) -> tuple[float, ...] | None:
    """The delay before retry 1, 2, … (index 0, 1, …) with the policy's own settings, or
    ``None`` when its delays are drawn (jitter)."""
    return table(policy)[1]


def base_delays(policy: RetryPolicy) -> tuple[float, ...]:
    """The un-jittered delay before retry 1, 2, … (index 0, 1, …) with the policy's own
    settings, capped: what jitter starts from (as far as the table goes)."""
    return table(policy)[2]
