"""The totals both gateway ledgers keep per scope (``SQLiteGatewayLedger``,
``RedisGatewayLedger``): ``[spent usd, spent tokens, reserved usd, reserved tokens]`` as
exact fractions (``backstay.store._spend_sums``'s vectors), a request's estimate held in its
scope while it is in flight and its charge folded in when it settles; the scope ``EVER``
keeps the spent half of every request ever settled.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Final

from backstay.policy.spend import ScopeKind, ScopeTotals, Spend, SpendBudget, SpendScope
from backstay.store import _spend_sums as sums

__all__ = ["EVER", "fold", "scope_totals", "settled", "totals_of"]

# The scope of every request ever settled (its spent half only).
EVER: Final = ""
_ZERO: Final = (Fraction(0),) * 4


def fold(
    vector: sums.Vector | None, *, spent: Spend | None = None, held: Spend | None = None
) -> sums.Vector:
    """``vector`` (``[spent usd, spent tokens, reserved usd, reserved tokens]``) with
    ``spent`` added and ``held`` reserved. Pure."""
    spent_usd, spent_tokens, held_usd, held_tokens = vector or _ZERO
    if spent is not None:
        spent_usd += Fraction(spent.usd)
        spent_tokens += spent.tokens
    if held is not None:
        held_usd += Fraction(held.usd)
        held_tokens += held.tokens
    return (spent_usd, spent_tokens, held_usd, held_tokens)


def scope_totals(scope: str, vector: sums.Vector | None, budget: SpendBudget) -> ScopeTotals:
    """The totals of ``scope`` (``EVER``: the ``batch`` scope of every request)."""
    named = (
        SpendScope(kind=ScopeKind.BATCH)
        if scope == EVER
        else SpendScope(kind=ScopeKind.TASK, name=scope)
    )
    return sums.scope_totals(vector, named, budget)


def settled(vector: sums.Vector | None, charged: Spend, estimate: Spend) -> sums.Vector:
    """``vector`` with ``charged`` spent in place of ``estimate`` reserved. Pure."""
    spent_usd, spent_tokens, held_usd, held_tokens = fold(vector, spent=charged)
    return (
        spent_usd,
        spent_tokens,
        held_usd - Fraction(estimate.usd),
        held_tokens - estimate.tokens,
    )


def totals_of(found: Iterable[tuple[str, sums.Vector | None]]) -> tuple[ScopeTotals, ...]:
    """``overview`` of the scopes' vectors ``found`` (``EVER``'s among them, or not)."""
    every = dict(found)
    live = sorted((s, v) for s, v in every.items() if s != EVER)
    ever = every.get(EVER)
    spent_usd, spent_tokens, _, _ = ever or _ZERO
    held_usd = sum((v[2] for _, v in live if v is not None), Fraction(0))
    held_tokens = sum((v[3] for _, v in live if v is not None), Fraction(0))
    total = scope_totals(EVER, (spent_usd, spent_tokens, held_usd, held_tokens), SpendBudget())
    return (total, *(scope_totals(s, v, SpendBudget()) for s, v in live))
