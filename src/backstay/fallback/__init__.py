"""Fallback chains: move work to another model or provider when the failure calls for it.

``FallbackChain`` runs a call on an ordered list of ``Candidate`` s; ``FallbackRules`` is
the one table (``FailureKind`` → ``Move``) deciding which failures move on, which are
retried where they are, and which cool the candidate down; each candidate has its own
breaker and cooldown in a ``FallbackStore`` (``MemoryFallbackStore``; the SQLite and
Redis ones in ``backstay.store``, where ``SQLiteFallbackStore`` moved: importing it from
here still works for one release). ``choose`` and ``plan_failure`` are the pure decisions. See
``docs/fallback.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.fallback.candidate import Candidate, Needs
    from backstay.fallback.chain import Answer, FallbackChain, NoCandidateAvailable
    from backstay.fallback.events import CandidateCooledDown, FellBack
    from backstay.fallback.health import CandidateHealth
    from backstay.fallback.rules import DEFAULT_MOVES, FallbackRules, Move
    from backstay.fallback.select import ChainStep, Tried, choose, plan_failure
    from backstay.fallback.store import FallbackStore, MemoryFallbackStore
    from backstay.store.sqlite.fallback import SQLiteFallbackStore as SQLiteFallbackStore

__all__ = [
    "DEFAULT_MOVES",
    "Answer",
    "Candidate",
    "CandidateCooledDown",
    "CandidateHealth",
    "ChainStep",
    "FallbackChain",
    "FallbackRules",
    "FallbackStore",
    "FellBack",
    "MemoryFallbackStore",
    "Move",
    "Needs",
    "NoCandidateAvailable",
    "Tried",
    "choose",
    "plan_failure",
]

# Where each name lives, imported on first use: importing a module of this package
# (``candidate``, ``rules`` …) loads only what that module needs.
_LAZY: Final = {
    "Answer": "backstay.fallback.chain",
    "Candidate": "backstay.fallback.candidate",
    "CandidateCooledDown": "backstay.fallback.events",
    "CandidateHealth": "backstay.fallback.health",
    "ChainStep": "backstay.fallback.select",
    "DEFAULT_MOVES": "backstay.fallback.rules",
    "FallbackChain": "backstay.fallback.chain",
    "FallbackRules": "backstay.fallback.rules",
    "FallbackStore": "backstay.fallback.store",
    "FellBack": "backstay.fallback.events",
    "MemoryFallbackStore": "backstay.fallback.store",
    "Move": "backstay.fallback.rules",
    "Needs": "backstay.fallback.candidate",
    "NoCandidateAvailable": "backstay.fallback.chain",
    "Tried": "backstay.fallback.select",
    "choose": "backstay.fallback.select",
    "plan_failure": "backstay.fallback.select",
}
_MOVED: Final = {"SQLiteFallbackStore": "backstay.store"}


def __getattr__(name: str) -> Any:
    # A name of this package, or one moved to backstay.store (the SQLite wing; kept here
    # for one release): imported on first use.
    return load_name(globals(), name, _LAZY, _MOVED)


def __dir__() -> list[str]:
    return listed_names(globals())
