"""``BreakerStore``: where breaker records live, and the one atomic operation on them.

A store keeps one ``BreakerRecord`` per breaker name. Every change goes through
``transition(name, fn)``: the store reads the record (a fresh closed one if there is
none), calls the pure ``fn`` on it, keeps the record ``fn`` returns when it is a different
object, and does all of that atomically with respect to every other transition on that
name — a lock in memory, a ``BEGIN IMMEDIATE`` transaction in SQLite, ``WATCH``/``MULTI``
(or one Lua script) in Redis. ``fn`` is pure and may be called more than once, so an
optimistic store can simply retry it on conflict.

``load`` is a plain read used for the fast paths: deciding from a record that might be a
moment old is safe because every change is decided again inside ``transition``.

``shared`` says whether records outlive the process or are seen by other processes; the
breaker then stamps them with Unix time (comparable across processes and restarts)
instead of monotonic time (immune to clock steps, but local to one process).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from backstay.breaker.record import BreakerRecord
from backstay.breaker.state import Step

__all__ = ["BreakerStore", "TransitionFn"]

TransitionFn = Callable[[BreakerRecord], Step]


@runtime_checkable
class BreakerStore(Protocol):
    """The storage of breaker records; see the module docstring for the contract."""

    @property
    def shared(self) -> bool:
        """True when records outlive this process or are shared with other processes."""
        ...

    def load(self, name: str) -> BreakerRecord | None:
        """The current record of ``name``, or ``None`` when it has none yet."""
        ...

    def transition(self, name: str, fn: TransitionFn) -> Step:
        """Atomically replace the record of ``name`` with ``fn(record).record``."""
        ...

    def names(self) -> list[str]:
        """The names that have a record, sorted."""
        ...
