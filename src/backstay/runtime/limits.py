"""``ExecutionLimits`` and ``LimitTracker``: the hard limits of one agent run.

The tracker is pure bookkeeping: the runtime asks ``check_before`` before every model or
tool call and ``record_*`` with the real counts after it. Failed and retried attempts are
counted like the others. A breach is returned as a ``LimitBreach`` value (which limit,
the allowed and the reached amount); the first breach is sticky, so a framework that
swallows the exception raised for it cannot go on.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Final

from backstay._checks import check_number
from backstay.adapters.usage import Usage

__all__ = [
    "DEFAULT_LOOP_REPEATS",
    "ExecutionLimits",
    "LimitBreach",
    "LimitName",
    "LimitTracker",
]

# The agent adapter interface's printed defaults (docs/conformance.md).
DEFAULT_MAX_STEPS: Final = 50
DEFAULT_MAX_TOKENS: Final = 100_000
DEFAULT_WALL_TIME_S: Final = 300.0
DEFAULT_MAX_TOOL_CALLS: Final = 20
DEFAULT_MAX_RETRIES: Final = 3
DEFAULT_MEMORY_LIMIT_MB: Final = 1024
DEFAULT_CPU_TIME_LIMIT_S: Final = 60
DEFAULT_LOOP_REPEATS: Final = 3


class LimitName(enum.StrEnum):
    STEPS = "max_steps"
    TOKENS = "max_tokens"
    WALL_TIME = "wall_time_s"
    TOOL_CALLS = "max_tool_calls"
    MODEL_CALLS = "max_model_calls"
    RETRIES = "max_retries"
    COST = "max_cost_usd"
    LOOP = "loop"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionLimits:
    """Hard limits of one run. ``max_cost_usd`` and ``max_model_calls`` are off when
    ``None``; ``loop_repeats`` is how many identical calls in a row make a loop.
    ``memory_limit_mb`` (address space) and ``cpu_time_limit_s`` bound each process the
    shell tool starts (``None``: unbounded)."""

    max_steps: int = DEFAULT_MAX_STEPS
    max_tokens: int = DEFAULT_MAX_TOKENS
    wall_time_s: float = DEFAULT_WALL_TIME_S
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    max_model_calls: int | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    max_cost_usd: float | None = None
    loop_repeats: int = DEFAULT_LOOP_REPEATS
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB
    cpu_time_limit_s: int | None = DEFAULT_CPU_TIME_LIMIT_S

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tokens", "max_tool_calls", "loop_repeats"):
            check_number(getattr(self, name), where=f"limits.{name}", minimum=1, integer=True)
        for name in ("memory_limit_mb", "cpu_time_limit_s"):
            if getattr(self, name) is not None:
                check_number(getattr(self, name), where=f"limits.{name}", minimum=1, integer=True)
        check_number(self.max_retries, where="limits.max_retries", integer=True)
        check_number(self.wall_time_s, where="limits.wall_time_s", above=True)
        if self.max_model_calls is not None:
            check_number(
                self.max_model_calls, where="limits.max_model_calls", minimum=1, integer=True
            )
        if self.max_cost_usd is not None:
            check_number(self.max_cost_usd, where="limits.max_cost_usd", above=True)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LimitBreach:
    """Limit ``limit`` allowed ``allowed`` and the run reached (or would reach) ``reached``."""

    limit: LimitName
    allowed: float
    reached: float

    @property
    def message(self) -> str:
        return f"{self.limit} reached: {self.reached:g} of {self.allowed:g}"


class LimitTracker:
    """The counts of one run against its limits. ``started`` is a monotonic time."""

    __slots__ = (
        "breach",
        "limits",
        "model_calls",
        "retries",
        "started",
        "steps",
        "tool_calls",
        "usage",
    )

    def __init__(self, limits: ExecutionLimits, *, started: float) -> None:
        self.limits = limits
        self.started = started
        self.steps = 0
        self.tool_calls = 0
        self.model_calls = 0
        self.retries = 0
        self.usage = Usage()
        self.breach: LimitBreach | None = None

    def _first(self, breach: LimitBreach | None) -> LimitBreach | None:
        if breach is not None and self.breach is None:
            self.breach = breach
        return self.breach

    def _over(self, now: float) -> LimitBreach | None:
        lim = self.limits
        elapsed = now - self.started
        if elapsed >= lim.wall_time_s:
            return LimitBreach(limit=LimitName.WALL_TIME, allowed=lim.wall_time_s, reached=elapsed)
        tokens = self.usage.tokens_total
        if tokens >= lim.max_tokens:
            return LimitBreach(limit=LimitName.TOKENS, allowed=lim.max_tokens, reached=tokens)
        cost = self.usage.cost_usd or 0.0
        if lim.max_cost_usd is not None and cost >= lim.max_cost_usd:
            return LimitBreach(limit=LimitName.COST, allowed=lim.max_cost_usd, reached=cost)
        if self.retries > lim.max_retries:
            return LimitBreach(
                limit=LimitName.RETRIES, allowed=lim.max_retries, reached=self.retries
            )
        return None

    def check_before(self, now: float, *, call: str, retry: bool = False) -> LimitBreach | None:
        """Before a ``"model"``, ``"tool"`` or ``"step"`` call (``retry``: one that
        repeats a failed one): the breach it would cause, or ``None`` to go ahead."""
        if self.breach is not None:
            return self.breach
        lim = self.limits
        found = self._over(now)
        if found is None and retry and self.retries + 1 > lim.max_retries:
            found = LimitBreach(
                limit=LimitName.RETRIES, allowed=lim.max_retries, reached=self.retries + 1
            )
        if found is None and call == "tool" and self.tool_calls + 1 > lim.max_tool_calls:
            found = LimitBreach(
                limit=LimitName.TOOL_CALLS, allowed=lim.max_tool_calls, reached=self.tool_calls + 1
            )
        if found is None and call == "step" and self.steps + 1 > lim.max_steps:
            found = LimitBreach(
                limit=LimitName.STEPS, allowed=lim.max_steps, reached=self.steps + 1
            )
        if (
            found is None
            and call == "model"
            and lim.max_model_calls is not None
            and self.model_calls + 1 > lim.max_model_calls
        ):
            found = LimitBreach(
                limit=LimitName.MODEL_CALLS,
                allowed=lim.max_model_calls,
                reached=self.model_calls + 1,
            )
        return self._first(found)

    def record_step(self) -> None:
        self.steps += 1

    def record_tool_call(self) -> None:
        self.tool_calls += 1

    def record_model_call(self, usage: Usage, *, retry: bool, now: float) -> LimitBreach | None:
        """One model attempt with its real usage (a failed attempt too); the breach its
        counts reached, if any."""
        self.model_calls += 1
        if retry:
            self.retries += 1
        self.usage = self.usage + usage
        return self.check_after(now)

    def record_retry(self) -> None:
        self.retries += 1

    def check_after(self, now: float) -> LimitBreach | None:
        """With the real counts: a limit they reached."""
        return self._first(self._over(now))

    def loop(self, repeats: int) -> LimitBreach | None:
        """The same call seen ``repeats`` times in a row: a loop once that reaches the limit."""
        if repeats >= self.limits.loop_repeats:
            return self._first(
                LimitBreach(
                    limit=LimitName.LOOP, allowed=self.limits.loop_repeats - 1, reached=repeats
                )
            )
        return None
