"""A run's allowance: what an agent run through a shared gateway that keeps no spend ledger
(``backstay gateway --agent-runs`` without ``--store``) may spend, held for it in the
batch's store while it runs. Pure functions.

At the attempt's start, each of the task's limited scopes (task, tenant, batch) is read as
the run's own requests would see it: its budget, what was spent, and what OTHER attempts
hold (``others``: this attempt's reservation taken out). The run may spend the least room
among them (``allowance_room``); the attempt's reservation becomes that room
(``allowance_hold``), so no other task can take it meanwhile. The gateway checks each of
the run's requests against those totals as they stood (``backstay.adapters.request_spend``'s
rule: ``check_spend`` over them, the run's answers and requests in flight added): the same
refusal, naming the same budget, as a gateway with the batch's store would give.

On the wire (the ``allowance`` field of the run's budget object, ``allowance_json``):
a list of ``ScopeTotals.to_dict()``, read back by ``parse_allowance`` (``ConfigError``
naming ``budget.allowance[i].field``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from backstay.errors import ConfigError
from backstay.policy.spend import ScopeKind, ScopeTotals, Spend, SpendBudget, SpendScope

__all__ = [
    "allowance_hold",
    "allowance_json",
    "allowance_room",
    "others",
    "parse_allowance",
]

_WHERE = "budget.allowance"
_FIELDS = frozenset({"scope", "name", "budget", "spent", "reserved"})


def _less(a: Spend, b: Spend) -> Spend:
    return Spend(usd=max(0.0, a.usd - b.usd), tokens=max(0, a.tokens - b.tokens))


def others(scopes: Iterable[ScopeTotals], held: Spend) -> list[ScopeTotals]:
    """``scopes`` as a run sees them: the attempt's own reservation ``held`` taken out of
    what they hold, and only those with a budget."""
    return [
        dataclasses.replace(found, reserved=_less(found.reserved, held))
        for found in scopes
        if not found.budget.unlimited
    ]


def allowance_room(scopes: Iterable[ScopeTotals]) -> SpendBudget:
    """The least room of ``scopes`` in USD and in tokens (``None``: no scope limits it;
    never below zero)."""
    usd: float | None = None
    tokens: int | None = None
    for found in scopes:
        committed = found.committed
        if found.budget.usd is not None:
            room = max(0.0, found.budget.usd - committed.usd)
            usd = room if usd is None else min(usd, room)
        if found.budget.tokens is not None:
            left = max(0, found.budget.tokens - committed.tokens)
            tokens = left if tokens is None else min(tokens, left)
    return SpendBudget(usd=usd, tokens=tokens)


def allowance_hold(room: SpendBudget, estimate: Spend) -> Spend:
    """What the attempt reserves for a run of allowance ``room``: the room where it is
    limited, the attempt's ``estimate`` where nothing limits it."""
    return Spend(
        usd=estimate.usd if room.usd is None else room.usd,
        tokens=estimate.tokens if room.tokens is None else room.tokens,
    )


def allowance_json(scopes: Sequence[ScopeTotals]) -> list[dict[str, Any]]:
    """``scopes`` as the run's ``allowance`` field."""
    return [found.to_dict() for found in scopes]


def _amount(data: Mapping[str, Any], name: str, where: str) -> Spend:
    value = data.get(name)
    if not isinstance(value, Mapping) or set(value) - {"usd", "tokens"}:
        raise ConfigError("must be an object of usd and tokens", where=f"{where}.{name}")
    usd, tokens = value.get("usd", 0.0), value.get("tokens", 0)
    if (
        isinstance(usd, bool)
        or not isinstance(usd, int | float)
        or not math.isfinite(usd)
        or usd < 0
        or isinstance(tokens, bool)
        or not isinstance(tokens, int)
        or tokens < 0
    ):
        raise ConfigError("must hold non-negative usd and tokens", where=f"{where}.{name}")
    return Spend(usd=float(usd), tokens=tokens)


def _scope(data: object, where: str) -> ScopeTotals:
    if not isinstance(data, Mapping):
        raise ConfigError("must be an object of a scope's totals", where=where)
    unknown = sorted(str(k) for k in set(data) - _FIELDS)
    if unknown:
        raise ConfigError(
            f"unknown key (known: {', '.join(sorted(_FIELDS))})", where=f"{where}.{unknown[0]}"
        )
    try:
        kind = ScopeKind(str(data.get("scope")))
    except ValueError:
        known = ", ".join(k.value for k in ScopeKind)
        raise ConfigError(f"must be one of {known}", where=f"{where}.scope") from None
    name = data.get("name", "")
    if not isinstance(name, str):
        raise ConfigError("must be a string", where=f"{where}.name")
    budget = data.get("budget")
    if not isinstance(budget, Mapping):
        raise ConfigError("must be an object of usd and tokens", where=f"{where}.budget")
    try:
        limit = SpendBudget.from_dict(budget)
    except ConfigError as err:
        raise ConfigError(err.reason, where=f"{where}.budget") from None
    return ScopeTotals(
        scope=SpendScope(kind=kind, name=name),
        budget=limit,
        spent=_amount(data, "spent", where),
        reserved=_amount(data, "reserved", where),
    )


def parse_allowance(data: object) -> tuple[ScopeTotals, ...]:
    """The scopes of an ``allowance`` field; ``ConfigError`` naming a wrong one."""
    if not isinstance(data, list):
        raise ConfigError("must be a list of scope totals", where=_WHERE)
    return tuple(_scope(each, f"{_WHERE}[{i}]") for i, each in enumerate(data))
