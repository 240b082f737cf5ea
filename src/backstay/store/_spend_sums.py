"""The running sums both spend ledgers keep beside their rows (``RedisSpendLedger`` in its
``sums`` hash, ``SQLiteSpendLedger`` in ``backstay_spend_sums``), so that reserving,
settling and estimating read a few fields instead of every attempt of the batch.

Every row contributes a vector to some fields of the sums:

* ``batch|``, ``tenant|<name>`` (if it has a tenant) and ``task|<operation>``: ``[spent
  usd, spent tokens, reserved usd, reserved tokens]`` (a settled row counts as spent, a
  reserved one as reserved);
* ``use|["<adapter>", "<model>"]``, for a settled row that used tokens and knows its prompt
  tokens: ``[count, prompt tokens, output tokens, count with a reported cost, reported
  usd]`` (the mean use ``earlier`` gives).

A change of a row adds the new row's vectors and takes away the old one's, in the
transaction that writes the row. Amounts are kept as exact fractions (a ``float`` is
one), so no rounding accumulates however many attempts come and go: a sum is the exact
sum of its rows' floats, rounded once when read.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

from backstay.policy.spend import (
    EarlierUse,
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendScope,
)

if TYPE_CHECKING:
    from backstay.engine.spend_ledger import AttemptSpend

__all__ = [
    "MARKER",
    "Vector",
    "add",
    "decode",
    "earlier_use",
    "encode",
    "fields_of",
    "reserved_row",
    "row_vectors",
    "scope_field",
    "scope_totals",
    "use_field",
]

Row = Mapping[str, Any]
Vector = tuple[Fraction, ...]
# Present in the hash once its sums cover every row (a namespace written before the sums
# were kept gets them built from its rows once).
MARKER: Final = "v"
_SCOPE_WIDTH: Final = 4
_ZERO_SCOPE: Final[Vector] = (Fraction(0),) * _SCOPE_WIDTH


def reserved_row(attempt: AttemptSpend) -> dict[str, Any]:
    """The row of ``attempt`` reserved: its estimate held, nothing spent yet (the fields
    both ledgers store; each adds its own timestamps)."""
    return {
        "operation_id": attempt.operation_id,
        "tenant": attempt.tenant,
        "adapter": attempt.adapter,
        "model": attempt.model,
        "status": "reserved",
        "estimate_usd": attempt.estimate.usd,
        "estimate_tokens": attempt.estimate.tokens,
        "usd": None,
        "tokens": None,
        "prompt_tokens": None,
        "output_tokens": None,
        "reported_usd": None,
    }


def scope_field(scope: SpendScope) -> str:
    return f"{scope.kind.value}|{scope.name}"


@functools.lru_cache(maxsize=256)
def use_field(adapter: str, model: str) -> str:
    """The field of an adapter's model (a batch has a few: each text made once)."""
    return "use|" + json.dumps([adapter, model])


def _scopes(row: Row) -> list[SpendScope]:
    scopes = [SpendScope(kind=ScopeKind.BATCH)]
    if row["tenant"] is not None:
        scopes.append(SpendScope(kind=ScopeKind.TENANT, name=row["tenant"]))
    scopes.append(SpendScope(kind=ScopeKind.TASK, name=row["operation_id"]))
    return scopes


def _scope_vector(row: Row) -> Vector | None:
    if row["status"] == "settled":
        return (Fraction(row["usd"] or 0.0), Fraction(row["tokens"] or 0), *_ZERO_SCOPE[2:])
    if row["status"] == "reserved":
        return (
            *_ZERO_SCOPE[:2],
            Fraction(row["estimate_usd"]),
            Fraction(row["estimate_tokens"]),
        )
    return None


def _use_vector(row: Row) -> Vector | None:
    if row["status"] != "settled" or row["prompt_tokens"] is None or not (row["tokens"] or 0) > 0:
        return None
    reported = row["reported_usd"]
    return (
        Fraction(1),
        Fraction(row["prompt_tokens"]),
        Fraction(row["output_tokens"] or 0),
        Fraction(0 if reported is None else 1),
        Fraction(reported or 0.0),
    )


def _times(sign: int, vector: Vector) -> Vector:
    """``sign`` times each amount; a negation (what a change takes away) by ``-``, which
    is the same fraction for about half the cost of multiplying."""
    if sign == 1:
        return vector
    if sign == -1:
        return tuple(-v for v in vector)
    return tuple(sign * v for v in vector)


def row_vectors(row: Row | None, *, sign: int = 1) -> dict[str, Vector]:
    """What ``row`` adds to each field (``sign=-1``: what removing it takes away)."""
    if row is None:
        return {}
    out: dict[str, Vector] = {}
    scope = _scope_vector(row)
    if scope is not None:
        scope = _times(sign, scope)
        for each in _scopes(row):
            out[scope_field(each)] = scope
    use = _use_vector(row)
    if use is not None:
        out[use_field(row["adapter"], row["model"])] = _times(sign, use)
    return out


def fields_of(row: Row) -> list[str]:
    """Every field a change of ``row`` may touch (whatever its status)."""
    return [scope_field(s) for s in _scopes(row)] + [use_field(row["adapter"], row["model"])]


def add(into: dict[str, Vector], deltas: Iterable[Mapping[str, Vector]]) -> dict[str, Vector]:
    """``into`` (field → vector) with every delta added; the fields that changed. A zero
    on either side is not added (the other is the sum): half of a change's amounts are
    zeros (a reservation spends nothing, a settlement holds nothing), and adding two
    fractions is the dearest step of a change."""
    changed: dict[str, Vector] = {}
    for delta in deltas:
        for field, vector in delta.items():
            old = into.get(field)
            new = (
                vector
                if old is None
                else tuple(
                    (a + b if a else b) if b else a for a, b in zip(old, vector, strict=True)
                )
            )
            into[field] = changed[field] = new
    return changed


def encode(vector: Sequence[Fraction]) -> str:
    text = json.dumps([str(v) for v in vector])
    _remember(text, tuple(vector))
    return text


def decode(raw: bytes | str | None) -> Vector | None:
    if raw is None:
        return None
    text = raw.decode() if isinstance(raw, bytes) else raw
    known = _KNOWN.get(text)
    if known is not None:
        return known
    vector = tuple(_fraction(v) for v in json.loads(text))
    _remember(text, vector)
    return vector


# The vectors of texts this process wrote or read lately: the next reservation or
# settlement of a batch mostly reads back what the last one wrote (a text stands for one
# vector only, so a remembered one is never stale; parsing a dozen fractions is not free).
_KNOWN: Final[dict[str, Vector]] = {}
_KNOWN_MAX: Final = 1024


def _remember(text: str, vector: Vector) -> None:
    if len(_KNOWN) >= _KNOWN_MAX:
        _KNOWN.clear()
    _KNOWN[text] = vector


def _fraction(text: str) -> Fraction:
    """``Fraction(text)`` of what ``encode`` wrote (``"n/d"`` or ``"n"``), without the
    general parser (twice as slow; a reservation and a settlement read about a dozen)."""
    numerator, slash, denominator = text.partition("/")
    try:
        return Fraction(int(numerator), int(denominator) if slash else 1)
    except ValueError:
        return Fraction(text)


def scope_totals(vector: Vector | None, scope: SpendScope, budget: SpendBudget) -> ScopeTotals:
    spent_usd, spent_tokens, held_usd, held_tokens = vector or _ZERO_SCOPE
    return ScopeTotals(
        scope=scope,
        budget=budget,
        spent=Spend(usd=float(spent_usd), tokens=int(spent_tokens)),
        reserved=Spend(usd=float(held_usd), tokens=int(held_tokens)),
    )


def earlier_use(vector: Vector | None) -> EarlierUse | None:
    if vector is None or vector[0] <= 0:
        return None
    count, prompt, output, reported, usd = vector
    return EarlierUse(
        prompt_tokens=float(prompt / count),
        output_tokens=float(output / count),
        usd=float(usd / reported) if reported > 0 else None,
    )
