"""``BreakerGroup``: several breakers guarding one call, as one ``CircuitBreakerLike``.

A call guarded by the global breaker and by its operation's breaker goes through only when
both admit it. Permits are taken in order; when one breaker refuses, the permits already
taken are released (they count as nothing) and its ``CircuitOpen`` propagates. A report
on the group's permit goes to every member.
"""

from __future__ import annotations

from collections.abc import Sequence

from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.policy.protocols import CircuitBreakerLike, Permit

__all__ = ["BreakerGroup"]


class _GroupPermit:
    __slots__ = ("_permits",)

    def __init__(self, permits: tuple[Permit, ...]) -> None:
        self._permits = permits

    def success(self) -> None:
        for permit in self._permits:
            permit.success()

    def failure(self, failure: Failure) -> None:
        for permit in self._permits:
            permit.failure(failure)

    def release(self) -> None:
        for permit in self._permits:
            permit.release()


class BreakerGroup:
    """Breakers that must all admit a call; ``name`` joins theirs with ``+``."""

    __slots__ = ("breakers", "name")

    def __init__(self, breakers: Sequence[CircuitBreakerLike]) -> None:
        if not breakers:
            raise ConfigError("needs at least one breaker", where="BreakerGroup.breakers")
        self.breakers = tuple(breakers)
        self.name = "+".join(b.name for b in self.breakers)

    def acquire(self) -> Permit:
        """Permits from every breaker, or ``CircuitOpen`` from the first that refuses."""
        taken: list[Permit] = []
        try:
            for breaker in self.breakers:
                taken.append(breaker.acquire())  # noqa: PERF401 - keep what was taken
        except BaseException:
            for permit in taken:
                permit.release()
            raise
        return _GroupPermit(tuple(taken))
