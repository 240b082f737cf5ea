"""Fallback chains: move work to another model or provider when the failure calls for it.

``FallbackChain`` runs a call on an ordered list of ``Candidate`` s; ``FallbackRules`` is
the one table (``FailureKind`` → ``Move``) deciding which failures move on, which are
retried where they are, and which cool the candidate down; each candidate has its own
breaker and cooldown in a ``FallbackStore`` (``MemoryFallbackStore``,
``SQLiteFallbackStore``). ``choose`` and ``plan_failure`` are the pure decisions. See
``docs/fallback.md``.
"""

from __future__ import annotations

from backstay.fallback.candidate import Candidate, Needs
from backstay.fallback.chain import Answer, FallbackChain, NoCandidateAvailable
from backstay.fallback.events import CandidateCooledDown, FellBack
from backstay.fallback.health import CandidateHealth
from backstay.fallback.rules import DEFAULT_MOVES, FallbackRules, Move
from backstay.fallback.select import ChainStep, Tried, choose, plan_failure
from backstay.fallback.sqlite import SQLiteFallbackStore
from backstay.fallback.store import FallbackStore, MemoryFallbackStore

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
    "SQLiteFallbackStore",
    "Tried",
    "choose",
    "plan_failure",
]
