"""Backoff: the next delay as a pure function of (shape, attempt, previous delay, a draw).

Shapes (``n`` is the retry number, from 1):

* ``constant``: ``initial``
* ``linear``: ``initial · n``
* ``exponential``: ``initial · multiplier^(n−1)``

then capped at ``max_delay_s``, then jittered:

* ``none``: as computed
* ``proportional``: ``d · (1 + jitter · (2u − 1))``: ± ``jitter`` around ``d``
* ``full``: ``u · d`` (AWS "full jitter")
* ``decorrelated``: ``min(cap, initial + u · (3 · previous − initial))`` (AWS), stateful
  through ``previous``
* ``sha256``: the error contract's seeded formula, in whole milliseconds:
  ``int(d · (1 + jitter · (2h − 1)))`` with ``h`` the first 4 bytes of
  ``sha256(f"{seed}:{n − 1}")`` over 2³², so a replay with the same seed waits the same
  milliseconds (no second cap: the contract has none)

and capped again. ``u`` is a uniform draw in [0, 1) supplied by the caller (seeded or not).
"""

from __future__ import annotations

import enum
import math
from typing import Final

__all__ = ["Backoff", "JitterMode", "jittered", "next_delay", "sha256_draw"]


class Backoff(enum.StrEnum):
    CONSTANT = "constant"
    LINEAR = "linear"
    EXPONENTIAL = "exponential"


class JitterMode(enum.StrEnum):
    NONE = "none"
    PROPORTIONAL = "proportional"
    FULL = "full"
    DECORRELATED = "decorrelated"
    SHA256 = "sha256"


# Members read as module constants: looking a member up on its enum costs more than the
# arithmetic of a delay.
_CONSTANT: Final = Backoff.CONSTANT
_LINEAR: Final = Backoff.LINEAR
_PROPORTIONAL: Final = JitterMode.PROPORTIONAL
_FULL: Final = JitterMode.FULL
_DECORRELATED: Final = JitterMode.DECORRELATED
_SHA256: Final = JitterMode.SHA256

# 2.0 ** 1100 overflows; long before that the cap applies, so stop growing early.
_MAX_EXPONENT = 1000


def base_delay(
    backoff: Backoff, retry: int, *, initial_s: float, multiplier: float, max_s: float
) -> float:
    """The un-jittered delay before retry number ``retry`` (from 1), capped at ``max_s``."""
    if backoff is _CONSTANT:
        delay = initial_s
    elif backoff is _LINEAR:
        delay = initial_s * retry
    else:
        exponent = min(retry - 1, _MAX_EXPONENT)
        try:
            delay = initial_s * multiplier**exponent
        except OverflowError:
            delay = math.inf
    return min(delay, max_s)


def sha256_draw(seed: int, attempt: int) -> float:
    """The error contract's deterministic draw in [0, 1) for retry ``attempt`` (from 0)."""
    import hashlib  # noqa: PLC0415 - seeded draws only; not paid at import

    digest = hashlib.sha256(f"{seed}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def next_delay(
    backoff: Backoff,
    retry: int,
    *,
    initial_s: float,
    multiplier: float,
    max_s: float,
    jitter: float,
    jitter_mode: JitterMode,
    previous_s: float | None,
    draw: float,
    seed: int | None = None,
) -> float:
    """The delay before retry number ``retry`` (from 1); ``draw`` is uniform in [0, 1).

    Under ``sha256`` jitter the draw comes from ``seed`` (0 when ``None``) and ``retry``."""
    if jitter_mode is _DECORRELATED:
        prev = initial_s if previous_s is None else max(previous_s, initial_s)
        return min(max_s, initial_s + draw * (3.0 * prev - initial_s))
    delay = base_delay(backoff, retry, initial_s=initial_s, multiplier=multiplier, max_s=max_s)
    return jittered(jitter_mode, delay, retry, jitter, max_s, draw, seed)


def jittered(  # noqa: PLR0917 - the drivers' hot path: positional is cheapest
    jitter_mode: JitterMode,
    delay: float,
    retry: int,
    jitter: float,
    max_s: float,
    draw: float,
    seed: int | None,
) -> float:
    """``delay`` (the un-jittered, capped delay before retry ``retry``) under any jitter
    mode but ``decorrelated``, which does not start from it."""
    if jitter_mode is _FULL:
        return draw * delay
    if jitter_mode is _SHA256:
        h = sha256_draw(0 if seed is None else seed, retry - 1)
        base_ms = delay * 1000.0
        return float(int(base_ms + base_ms * jitter * (2.0 * h - 1.0))) / 1000.0
    if jitter_mode is _PROPORTIONAL and jitter > 0.0:
        out = delay * (1.0 + jitter * (2.0 * draw - 1.0))
        return max_s if out > max_s else (out if out > 0.0 else 0.0)
    return delay
