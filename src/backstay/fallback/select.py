"""Which candidate runs the next attempt, and what a failure leads to: pure functions.

``choose`` picks the candidate of the next attempt from the chain, what this call has
tried so far and which candidates are available now (breaker admits, not cooling down):

* nothing tried yet: the first available candidate in order, so work goes back to the
  primary as soon as its circuit closes or its cooldown ends;
* the last failure does not move (``Move.NEVER``, a short rate limit, output already
  streamed): the same candidate again (``None`` while it is unavailable: wait for it);
* it moves: the first available candidate in order that this call has not seen fail
  with a moving kind and that the move allows (a larger context window, another
  credential); when there is none, any available one the move allows, preferring the
  candidate that failed; ``None`` when none is available.

``plan_failure`` turns a failure into a ``ChainStep``: a move to another candidate
happens at once (no backoff: it is another service) but counts against the one retry
budget (``max_attempts`` across the whole chain) and the one deadline; staying on the
same candidate is the retry policy's own ``decide``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Sequence

from backstay.failure import Failure
from backstay.fallback.candidate import Candidate, Needs
from backstay.fallback.rules import FallbackRules, Move
from backstay.policy.retry import GiveUpReason, RetryPolicy, decide
from backstay.taxonomy import FailureKind

__all__ = ["ChainStep", "Tried", "choose", "cooldown_targets", "plan_failure"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Tried:
    """One failed attempt of the call: the candidate's index and how it failed."""

    index: int
    failure: Failure
    partial: bool = False


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChainStep:
    """After a failure: run ``candidate`` after ``delay_s`` (``retry``), or give up."""

    retry: bool
    candidate: int
    delay_s: float = 0.0
    reason: str | None = None

    def moved_from(self, index: int) -> bool:
        return self.retry and self.candidate != index


def _allowed(move: Move, source: Candidate, target: Candidate) -> bool:
    if move is Move.LARGER_CONTEXT:
        return target.larger_than(source)
    if move is Move.NEXT_CREDENTIAL:
        return target.credential != source.credential
    return move is Move.NEXT


def choose(
    rules: FallbackRules,
    candidates: Sequence[Candidate],
    *,
    tried: Sequence[Tried],
    available: Sequence[bool],
    needs: Needs | None = None,
    now: _dt.datetime | None = None,
) -> int | None:
    """The index of the candidate for the next attempt, ``None`` when it must wait."""
    fit = [needs is None or needs.met_by(c) for c in candidates]
    ready = [a and f for a, f in zip(available, fit, strict=True)]
    if not tried:
        return next((i for i, ok in enumerate(ready) if ok), None)
    last = tried[-1]
    move = rules.move_for(last.failure, partial=last.partial, now=now)
    if move is Move.NEVER:
        return last.index if ready[last.index] else None
    source = candidates[last.index]
    failed = {
        t.index
        for t in tried
        if rules.move_for(t.failure, partial=t.partial, now=now) is not Move.NEVER
    }
    allowed = [
        i != last.index and ready[i] and _allowed(move, source, c) for i, c in enumerate(candidates)
    ]
    fresh = next((i for i, ok in enumerate(allowed) if ok and i not in failed), None)
    if fresh is not None:
        return fresh
    if ready[last.index]:
        return last.index
    return next((i for i, ok in enumerate(allowed) if ok), None)


def plan_failure(
    policy: RetryPolicy,
    failure: Failure,
    *,
    current: int,
    target: int | None,
    attempt: int,
    elapsed_s: float,
    previous_delay_s: float | None,
    draw: float,
) -> ChainStep:
    """What follows attempt ``attempt`` (counted across the chain) failing on ``current``;
    ``target`` is ``choose``'s answer with this failure added to the tried ones."""
    if failure.kind is FailureKind.CANCELLED:
        return ChainStep(retry=False, candidate=current, reason=GiveUpReason.CANCELLED)
    if target is not None and target != current:
        if attempt >= policy.max_attempts:
            return ChainStep(retry=False, candidate=current, reason=GiveUpReason.ATTEMPTS_EXHAUSTED)
        if policy.deadline_s is not None and elapsed_s >= policy.deadline_s:
            return ChainStep(retry=False, candidate=current, reason=GiveUpReason.DEADLINE)
        return ChainStep(retry=True, candidate=target)
    decision = decide(
        policy,
        failure,
        attempt=attempt,
        elapsed_s=elapsed_s,
        previous_delay_s=previous_delay_s,
        draw=draw,
    )
    return ChainStep(
        retry=decision.retry, candidate=current, delay_s=decision.delay_s, reason=decision.reason
    )


def cooldown_targets(
    rules: FallbackRules,
    candidates: Sequence[Candidate],
    failure: Failure,
    *,
    current: int,
    partial: bool = False,
    now: _dt.datetime | None = None,
) -> tuple[tuple[int, float], ...]:
    """``(index, seconds)`` for each candidate the failure cools down: the failing one,
    and for an auth failure every candidate sharing its credential."""
    seconds = rules.cooldown_s(failure, partial=partial, now=now)
    if seconds <= 0.0:
        return ()
    if failure.kind is FailureKind.AUTH:
        credential = candidates[current].credential
        return tuple((i, seconds) for i, c in enumerate(candidates) if c.credential == credential)
    return ((current, seconds),)
