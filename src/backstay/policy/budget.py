"""Retry budgets: retries may be at most a fraction of recent calls, plus a small floor.

Over a sliding window of ``window_s`` seconds a budget allows

    retries ≤ ratio · calls + min_retries_per_s · window_s

where ``calls`` counts logical calls (first attempts) and ``retries`` every retry granted,
both inside the window. The ratio stops retry storms: when a provider falls over, the
retries of many callers cannot multiply its load by more than ``1 + ratio``. The floor
lets a caller with little traffic still retry.

The window is a ring of ``buckets`` counters, each ``window_s / buckets`` wide, so memory
is fixed and each operation costs O(1) amortised (a jump in time clears at most
``buckets`` counters). An event leaves the window between ``window_s − width`` and
``window_s`` after it happened.

``BudgetWindow`` is the deterministic core: it reads no clock and takes no lock; every
method takes ``now``. ``RetryBudget`` wraps it with a clock and a lock, and is what the
retry driver talks to (``RetryBudgetLike``).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Any, Final

from backstay._checks import check_name, check_number
from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.errors import ConfigError

__all__ = ["BudgetSettings", "BudgetSnapshot", "BudgetWindow", "RetryBudget"]

DEFAULT_RATIO: Final = 0.2
DEFAULT_MIN_RETRIES_PER_S: Final = 1.0
DEFAULT_WINDOW_S: Final = 10.0
DEFAULT_BUCKETS: Final = 10
# A bound on the ring's memory; a finer window buys nothing a person could notice.
MAX_BUCKETS: Final = 1000
# ratio · calls is a float: 0.1 · 30 is 3.0000000000000004, and that must allow 3 retries.
_EPSILON: Final = 1e-9


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSettings:
    """How many retries a budget allows. Validated on construction (``ConfigError``)."""

    ratio: float = DEFAULT_RATIO
    min_retries_per_s: float = DEFAULT_MIN_RETRIES_PER_S
    window_s: float = DEFAULT_WINDOW_S
    buckets: int = DEFAULT_BUCKETS

    def __post_init__(self) -> None:
        check_number(self.ratio, where="BudgetSettings.ratio")
        check_number(self.min_retries_per_s, where="BudgetSettings.min_retries_per_s")
        check_number(self.window_s, where="BudgetSettings.window_s", above=True)
        check_number(
            self.buckets,
            where="BudgetSettings.buckets",
            minimum=1,
            maximum=MAX_BUCKETS,
            integer=True,
        )

    @property
    def floor(self) -> float:
        """Retries allowed in any window whatever the traffic: ``min_retries_per_s · window_s``."""
        return self.min_retries_per_s * self.window_s


DEFAULT_BUDGET_SETTINGS: Final = BudgetSettings()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSnapshot:
    """The window at one moment: ``calls`` and ``retries`` in it, and the ``limit`` on retries."""

    calls: int
    retries: int
    limit: float

    @property
    def available(self) -> int:
        """How many more retries would be granted now."""
        return max(0, math.floor(self.limit - self.retries + _EPSILON))


class BudgetWindow:
    """The deterministic core of a retry budget: counters in a ring, ``now`` passed in.

    Not thread-safe (``RetryBudget`` locks around it). Time that goes backwards is taken
    as the current bucket: the window never rewinds.
    """

    __slots__ = ("_calls", "_head", "_retries", "_total_calls", "_total_retries", "settings")

    def __init__(self, settings: BudgetSettings, *, now: float) -> None:
        self.settings = settings
        self._calls = [0] * settings.buckets
        self._retries = [0] * settings.buckets
        self._total_calls = 0
        self._total_retries = 0
        self._head = self._index(now)

    def _index(self, now: float) -> int:
        return math.floor(now * self.settings.buckets / self.settings.window_s)

    def _advance(self, now: float) -> int:
        """Forget the buckets that left the window; the ring slot of ``now``."""
        index = self._index(now)
        size = len(self._calls)
        steps = index - self._head
        if steps >= size:
            self._calls = [0] * size
            self._retries = [0] * size
            self._total_calls = self._total_retries = 0
            self._head = index
        elif steps > 0:
            for step in range(1, steps + 1):
                slot = (self._head + step) % size
                self._total_calls -= self._calls[slot]
                self._total_retries -= self._retries[slot]
                self._calls[slot] = self._retries[slot] = 0
            self._head = index
        return self._head % size

    def _limit(self) -> float:
        return self.settings.ratio * self._total_calls + self.settings.floor

    def record_call(self, now: float) -> None:
        """One logical call started at ``now``."""
        slot = self._advance(now)
        self._calls[slot] += 1
        self._total_calls += 1

    def try_spend(self, now: float) -> bool:
        """Grant one retry at ``now`` if the window allows it; ``False`` leaves it unchanged."""
        slot = self._advance(now)
        if self._total_retries + 1 > self._limit() + _EPSILON:
            return False
        self._retries[slot] += 1
        self._total_retries += 1
        return True

    def snapshot(self, now: float) -> BudgetSnapshot:
        self._advance(now)
        return BudgetSnapshot(
            calls=self._total_calls, retries=self._total_retries, limit=self._limit()
        )


class RetryBudget:
    """A retry budget shared by every call that names it. Thread-safe.

    The retry driver calls ``record_call()`` once per logical call and
    ``try_spend_retry()`` before each retry; when that returns ``False`` the driver raises
    ``backstay.RetryBudgetExhausted`` instead of retrying.
    """

    __slots__ = ("_clock", "_lock", "_window", "name", "settings")

    def __init__(
        self,
        name: str,
        *,
        settings: BudgetSettings = DEFAULT_BUDGET_SETTINGS,
        clock: Clock | None = None,
        **overrides: Any,
    ) -> None:
        check_name(name, where="RetryBudget.name")
        if not isinstance(settings, BudgetSettings):
            raise ConfigError(
                f"must be a BudgetSettings, got {type(settings).__name__}",
                where="RetryBudget.settings",
            )
        if overrides:  # RetryBudget("llm", ratio=0.1): the settings' fields as keywords
            known = {f.name for f in dataclasses.fields(BudgetSettings)}
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise ConfigError(
                    f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}",
                    where="RetryBudget",
                )
            settings = dataclasses.replace(settings, **overrides)
        self.name = name
        self.settings = settings
        self._clock = clock or SYSTEM_CLOCK
        self._lock = threading.Lock()
        self._window = BudgetWindow(settings, now=self._clock.monotonic())

    def record_call(self) -> None:
        """One logical call started (its first attempt)."""
        now = self._clock.monotonic()
        with self._lock:
            self._window.record_call(now)

    def try_spend_retry(self) -> bool:
        """Take one retry from the budget; ``False`` when it is spent."""
        now = self._clock.monotonic()
        with self._lock:
            return self._window.try_spend(now)

    def snapshot(self) -> BudgetSnapshot:
        """Calls, retries and the limit in the current window."""
        now = self._clock.monotonic()
        with self._lock:
            return self._window.snapshot(now)

    def __repr__(self) -> str:
        return f"RetryBudget({self.name!r}, settings={self.settings!r})"
