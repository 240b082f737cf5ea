"""A run's allowance: what an agent run through a shared gateway that keeps no spend ledger
(``backstay gateway --agent-runs`` without ``--store``) may spend, held for it in the
batch's store while it runs, and raised while it goes on. Pure functions.

At the attempt's start, each of the task's limited scopes (task, tenant, batch) is read as
the run's own requests would see it: its budget, what was spent, and what OTHER attempts
hold (``others``: this attempt's reservation taken out). Its least room
(``allowance_room``) is what the run could spend at most; the run is GRANTED a share of it
(``allowance_share``): where a scope that other tasks share (tenant, batch) binds, its room
divided by the attempts that can run at once (``parallel``), never below the attempt's
estimate, never above the room (a task's own budget is the run's alone). The attempt's
reservation becomes the grant (``allowance_hold``), so no other task can take it
meanwhile, and the rest of the room stays for the others.

While the run goes on, the process that runs it reads what the run used from the gateway;
once the run has used (or holds in flight, or waits for) more than half its grant
(``top_up_due``), the grant is raised by another share of the room left (``top_up``),
reserved again, and sent to the gateway. When the room is gone, the grant stays: the
gateway refuses the request it cannot hold.

The gateway checks each of the run's requests against the scopes' totals as they stood at
the last grant (``backstay.adapters.request_spend``'s rule, the run's answers and requests
in flight added) and against the grant: the same refusal, naming the same budget, as a
gateway with the batch's store would give.

On the wire (the run's budget object): ``allowance``, a list of ``ScopeTotals.to_dict()``
read back by ``parse_allowance``; ``granted``, a ``SpendBudget.to_dict()`` read back by
``parse_granted`` (absent: the whole room). A wrong one is a ``ConfigError`` naming
``budget.allowance[i].field`` or ``budget.granted``.
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
    "allowance_share",
    "beyond",
    "others",
    "parse_allowance",
    "parse_granted",
    "top_up",
    "top_up_due",
]

_WHERE = "budget.allowance"
_GRANTED = "budget.granted"
# Below this, a USD amount is rounding noise.
_USD_EPSILON = 1e-12
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


def _shared_room(scopes: Iterable[ScopeTotals]) -> SpendBudget:
    """The least room of the scopes other tasks share (tenant, batch)."""
    return allowance_room(s for s in scopes if s.scope.kind is not ScopeKind.TASK)


def _share_tokens(room: int | None, shared: int | None, floor: int, parallel: int) -> int | None:
    if room is None:
        return None
    part = room if shared is None else shared // parallel
    return min(room, max(floor, part))


def _share_usd(
    room: float | None, shared: float | None, floor: float, parallel: int
) -> float | None:
    if room is None:
        return None
    part = room if shared is None else shared / parallel
    return min(room, max(floor, part))


def _check_parallel(parallel: int) -> None:
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ConfigError(
            f"must be a whole number of at least 1, got {parallel!r}", where="parallel"
        )


def allowance_share(scopes: Sequence[ScopeTotals], estimate: Spend, parallel: int) -> SpendBudget:
    """A run's first grant among ``scopes`` (``others``): in each limited dimension, the
    room of the scopes other tasks share divided by ``parallel`` (the attempts that can
    run at once under them), at least ``estimate``, at most the least room of all
    (``allowance_room``); ``None`` where nothing limits it."""
    _check_parallel(parallel)
    room, shared = allowance_room(scopes), _shared_room(scopes)
    return SpendBudget(
        usd=_share_usd(room.usd, shared.usd, estimate.usd, parallel),
        tokens=_share_tokens(room.tokens, shared.tokens, estimate.tokens, parallel),
    )


def beyond(granted: SpendBudget, wanted: Spend) -> Spend:
    """How far ``wanted`` passes ``granted`` in its limited dimensions (nothing: it fits)."""
    usd = 0.0 if granted.usd is None else max(0.0, wanted.usd - granted.usd)
    tokens = 0 if granted.tokens is None else max(0, wanted.tokens - granted.tokens)
    return Spend(usd=usd if usd > _USD_EPSILON else 0.0, tokens=tokens)


def top_up_due(granted: SpendBudget, used: Spend) -> bool:
    """Whether a run granted ``granted`` that has used ``used`` (its answers, its requests
    in flight and those waiting for room) should be given more: more than half of the
    grant in a limited dimension."""
    return (granted.usd is not None and used.usd > granted.usd / 2 + _USD_EPSILON) or (
        granted.tokens is not None and used.tokens * 2 > granted.tokens
    )


def top_up(
    scopes: Sequence[ScopeTotals],
    granted: SpendBudget,
    *,
    estimate: Spend,
    parallel: int,
    wanted: Spend = Spend(),  # noqa: B008 - a frozen value
) -> SpendBudget:
    """``granted`` raised by another share: in each dimension ``granted`` limits, the
    shared scopes' room left beyond the grant divided by ``parallel``, at least the
    ``estimate`` and what a waiting request ``wanted`` beyond the grant, at most the room
    left (``scopes`` as ``others`` gives them). Never lower than ``granted``; ``granted``
    itself when no room is left."""
    _check_parallel(parallel)
    room, shared = allowance_room(scopes), _shared_room(scopes)
    usd, tokens = granted.usd, granted.tokens
    if usd is not None and room.usd is not None:
        left = max(0.0, room.usd - usd)
        shared_left = None if shared.usd is None else max(0.0, shared.usd - usd)
        more = _share_usd(left, shared_left, max(estimate.usd, wanted.usd), parallel) or 0.0
        usd += more if more > _USD_EPSILON else 0.0
    if tokens is not None and room.tokens is not None:
        left_tokens = max(0, room.tokens - tokens)
        shared_tokens = None if shared.tokens is None else max(0, shared.tokens - tokens)
        floor = max(estimate.tokens, wanted.tokens)
        tokens += _share_tokens(left_tokens, shared_tokens, floor, parallel) or 0
    return SpendBudget(usd=usd, tokens=tokens)


def allowance_hold(room: SpendBudget, estimate: Spend) -> Spend:
    """What the attempt reserves for a run of allowance ``room``: the room where it is
    limited, the attempt's ``estimate`` where nothing limits it."""
    return Spend(
        usd=estimate.usd if room.usd is None else room.usd,
        tokens=estimate.tokens if room.tokens is None else room.tokens,
    )


def parse_granted(data: object) -> SpendBudget:
    """The grant of a ``granted`` field; ``ConfigError`` naming ``budget.granted``."""
    if not isinstance(data, Mapping):
        raise ConfigError("must be an object of usd and tokens", where=_GRANTED)
    try:
        return SpendBudget.from_dict(data)
    except (ConfigError, TypeError, ValueError) as err:
        reason = err.reason if isinstance(err, ConfigError) else str(err)
        raise ConfigError(reason, where=_GRANTED) from None


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
