"""Spending budgets held one request at a time, in a spend ledger of rows: each request a
budget covers is *reserved* (its estimate) before it is forwarded and *settled* with what
its answers reported once it is done, as an attempt of a batch is.

(About 530 lines: the budget, its windows, the rows' protocol with the in-process rows,
and the hold around one request, which the store ledgers and the proxy share.)

* ``GatewayBudget``: the budget of ``backstay gateway --budget-usd / --budget-tokens``
  over the requests that are not of an agent run: at most ``usd`` and ``tokens`` in each
  ``window`` (``total``, or a calendar ``hour``, ``day``, ``week``, ``month`` in UTC: a
  window's budget starts afresh when the next begins).
* ``SpendRows``: where the reservations and totals are kept: ``MemoryRows`` in this
  process, or a store's gateway ledger (``GatewayLedger``: SQLite or Redis, shared by every
  gateway on it, so a fleet holds one budget). Bounded: a request's row lives only while it
  is in flight (settled, it is folded into its scope's totals), and a scope is forgotten
  once it may be (``until``: its window's end and ``WINDOW_MARGIN_S``; a run's scope
  ``RUN_IDLE_S`` after its last request) when a new scope starts.
* ``HeldRequests``: a budget whose requests are held so (``hold``: a ``RequestHold``, or the
  message a request with no room is refused with); ``GatewaySpending``, the gateway's own
  (each refusal a ``RequestRefused``); a run's held in a store's ledger is another
  (``backstay.cli._gateway_spend``).

The rule is the ledger's (``backstay.policy.spend.check_spend``): a request is admitted
while ``spent + reserved + estimate ≤ limit`` for each of USD and tokens that is limited.
A request's estimate is its prompt (its text at four characters a token, priced as input):
an answer's output is not known before it comes, so the requests in flight can pass the
budget by their output, never by more.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import enum
import functools
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from typing import ClassVar, Final, Protocol

from backstay.errors import ConfigError
from backstay.events import BUS, Event
from backstay.gateway.routes import Route
from backstay.gateway.usage import TokenUsage
from backstay.policy.spend import (
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendRefusal,
    SpendScope,
    check_spend,
)

__all__ = [
    "GATEWAY_SCOPE",
    "RUN_IDLE_S",
    "WINDOW_MARGIN_S",
    "BudgetUnreachable",
    "BudgetWindow",
    "GatewayBudget",
    "GatewayLedger",
    "GatewaySpending",
    "HeldRequests",
    "MemoryRows",
    "RequestHold",
    "RequestRefused",
    "SpendRows",
]

# The name of the gateway's budget scope in its ledger (a window's: ``gateway@day:…``).
GATEWAY_SCOPE: Final = "gateway"
_PRICE_PROVIDERS: Final = {"anthropic": "anthropic", "openai": "openai", "gemini": "google"}
# How long a window's scope is kept after the window ends (its last requests in flight
# settle into it meanwhile), and a run's scope after its last request.
WINDOW_MARGIN_S: Final = 3600.0
RUN_IDLE_S: Final = 86_400.0


class BudgetWindow(enum.StrEnum):
    """How long a gateway budget's spending counts: for ever, or a calendar window (UTC)."""

    TOTAL = "total"
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


def window_of(window: BudgetWindow, now: float) -> tuple[str, float | None]:
    """The label of the ``window`` ``now`` (Unix seconds) falls in, and when it ends
    (``None``: ``total`` never ends). Pure."""
    if window is BudgetWindow.TOTAL:
        return "", None
    at = _dt.datetime.fromtimestamp(now, _dt.UTC)
    if window is BudgetWindow.HOUR:
        start = at.replace(minute=0, second=0, microsecond=0)
        return f"{start:%Y-%m-%dT%H}", (start + _dt.timedelta(hours=1)).timestamp()
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if window is BudgetWindow.DAY:
        return f"{day:%Y-%m-%d}", (day + _dt.timedelta(days=1)).timestamp()
    if window is BudgetWindow.WEEK:
        start = day - _dt.timedelta(days=day.weekday())
        year, week, _ = start.isocalendar()
        return f"{year}-W{week:02d}", (start + _dt.timedelta(days=7)).timestamp()
    start = day.replace(day=1)
    following = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else (start.replace(month=start.month + 1))
    )
    return f"{start:%Y-%m}", following.timestamp()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GatewayBudget:
    """At most ``usd`` dollars and ``tokens`` tokens (``None``: that one is not limited;
    at least one is) over the gateway's requests that are not of an agent run, in each
    ``window``."""

    usd: float | None = None
    tokens: int | None = None
    window: BudgetWindow = BudgetWindow.TOTAL

    def __post_init__(self) -> None:
        limit = SpendBudget(usd=self.usd, tokens=self.tokens)  # checks both
        if limit.unlimited:
            raise ConfigError("must limit usd or tokens", where="budget")
        object.__setattr__(self, "usd", limit.usd)
        try:
            object.__setattr__(self, "window", BudgetWindow(self.window))
        except ValueError:
            known = ", ".join(w.value for w in BudgetWindow)
            raise ConfigError(
                f"must be one of {known}, got {self.window!r}", where="budget.window"
            ) from None

    @property
    def limit(self) -> SpendBudget:
        return SpendBudget(usd=self.usd, tokens=self.tokens)

    def scope(self, now: float) -> tuple[str, float | None]:
        """The ledger scope of a request at ``now`` and when its window ends."""
        label, ends = window_of(self.window, now)
        return (f"{GATEWAY_SCOPE}@{self.window}:{label}" if label else GATEWAY_SCOPE), ends

    def describe(self) -> str:
        """``"$5 and 100000 tokens a day"``, ``"$5 in total"``."""
        per = "in total" if self.window is BudgetWindow.TOTAL else f"a {self.window}"
        return f"{self.limit.describe()} {per}"


class SpendRows(Protocol):
    """A spend ledger of a row per request in flight: ``reserve`` the request's
    ``estimate`` in ``scope`` (limited by ``budget``) or refuse it, holding nothing;
    ``settle`` its row with what it was ``charged`` (folded into its scope's totals, the
    row gone). ``now``: Unix seconds; ``until``: when the scope may be forgotten (``None``:
    never); a reservation that starts a scope first forgets the scopes whose ``until`` has
    passed, with their rows. Both may block (a store's): called off the event loop."""

    def reserve(
        self,
        request_id: str,
        scope: str,
        budget: SpendBudget,
        estimate: Spend,
        *,
        now: float,
        until: float | None,
    ) -> SpendRefusal | None: ...

    def settle(
        self,
        request_id: str,
        charged: Spend,
        *,
        scope: str,
        prompt_tokens: int,
        output_tokens: int,
    ) -> None: ...


class GatewayLedger(SpendRows, Protocol):
    """``SpendRows`` in a store (``backstay.store.sqlite.gateway_spend``,
    ``backstay.store.redis.gateway_spend``): ``overview`` gives what every request ever
    settled spent and the live scopes reserve (a ``batch`` scope), then each live scope."""

    def overview(self) -> tuple[ScopeTotals, ...]: ...

    def close(self) -> None: ...


class MemoryRows:
    """``SpendRows`` in this process: running sums per scope, the open rows by id
    (a settled row is kept in its scope's sum only). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spent: dict[str, Spend] = {}
        self._reserved: dict[str, Spend] = {}
        self._open: dict[str, tuple[str, Spend]] = {}
        self._until: dict[str, float] = {}

    def totals(self, scope: str, budget: SpendBudget) -> ScopeTotals:
        with self._lock:
            return self._totals(scope, budget)

    def _totals(self, scope: str, budget: SpendBudget) -> ScopeTotals:
        return ScopeTotals(
            scope=SpendScope(kind=ScopeKind.TASK, name=scope),
            budget=budget,
            spent=self._spent.get(scope, Spend()),
            reserved=self._reserved.get(scope, Spend()),
        )

    def scopes(self) -> int:
        """How many scopes are kept."""
        with self._lock:
            return len(self._spent.keys() | self._reserved.keys())

    def reserve(
        self,
        request_id: str,
        scope: str,
        budget: SpendBudget,
        estimate: Spend,
        *,
        now: float,
        until: float | None,
    ) -> SpendRefusal | None:
        with self._lock:
            if scope not in self._spent and scope not in self._reserved:
                self._forget(now)
            refusal = check_spend([self._totals(scope, budget)], estimate)
            if refusal is None:
                self._open[request_id] = (scope, estimate)
                self._reserved[scope] = self._reserved.get(scope, Spend()) + estimate
                if until is not None:
                    self._until[scope] = until
            return refusal

    def _forget(self, now: float) -> None:
        ended = {scope for scope, until in self._until.items() if until < now}
        for scope in ended:
            del self._until[scope]
            self._spent.pop(scope, None)
            self._reserved.pop(scope, None)
        for request_id in [r for r, (scope, _) in self._open.items() if scope in ended]:
            del self._open[request_id]

    def settle(
        self,
        request_id: str,
        charged: Spend,
        *,
        scope: str,
        prompt_tokens: int,
        output_tokens: int,
    ) -> None:
        del scope, prompt_tokens, output_tokens
        with self._lock:
            found = self._open.pop(request_id, None)
            if found is None:
                return
            scope, estimate = found
            held = self._reserved.get(scope, Spend())
            self._reserved[scope] = Spend(
                usd=max(0.0, held.usd - estimate.usd), tokens=max(0, held.tokens - estimate.tokens)
            )
            self._spent[scope] = self._spent.get(scope, Spend()) + charged


def _tokens(usage: TokenUsage) -> int:
    return (
        usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens
    )


def _plus(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    return TokenUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )


# What a request's usage costs in USD (``None``: no price known for its model).
Price = Callable[[Route, TokenUsage], float | None]


class RequestHold:
    """One admitted request's reservation (of a request on ``route``): the usage of its
    answers is ``add``-ed as they come, and ``settle`` charges it (once; later calls do
    nothing)."""

    __slots__ = ("_charge", "_lock", "_settled", "route", "usage")

    def __init__(self, charge: Callable[[TokenUsage], None], route: Route | None = None) -> None:
        self._charge = charge
        self._lock = threading.Lock()
        self._settled = False
        self.route = route
        self.usage = TokenUsage()

    def add(self, usage: TokenUsage) -> None:
        with self._lock:
            self.usage = _plus(self.usage, usage)

    def settle(self) -> None:
        with self._lock:
            if self._settled:
                return
            self._settled = True
            usage = self.usage
        self._charge(usage)

    async def asettle(self) -> None:
        """``settle`` off the event loop (a store's write may block)."""
        await asyncio.to_thread(self.settle)


class HeldRequests:
    """A budget whose requests are each reserved in ``rows`` and settled with their own
    usage. Subclasses say which ``scope`` (and budget) a request falls in, what its usage
    costs (``spend``) and what a refusal is answered with (``refused``)."""

    def __init__(self, rows: SpendRows, *, clock: Callable[[], float] = time.time) -> None:
        self.rows = rows
        self.refusal: SpendRefusal | None = None
        self.clock = clock

    def until(self, ends: float | None) -> float | None:
        """When the scope of a request whose window ends at ``ends`` may be forgotten
        (``None``: never): ``WINDOW_MARGIN_S`` after its window ends."""
        return None if ends is None else ends + WINDOW_MARGIN_S

    def scope(self) -> tuple[str, SpendBudget, float | None]:
        """The scope a request now falls in, its budget and when its window ends."""
        raise NotImplementedError

    def spend(self, found: Route, usage: TokenUsage) -> Spend | None:
        """What ``usage`` of a request on ``found`` costs (``None``: it cannot be priced
        while USD is limited)."""
        raise NotImplementedError

    def refused(self, found: Route, refusal: SpendRefusal | None, ends: float | None) -> str:
        """The message a request refused by ``refusal`` (``None``: not priced) gets."""
        raise NotImplementedError

    def charge(self, usage: TokenUsage) -> None:
        """A run token's answers are charged through their request's hold, not here."""
        del usage

    async def hold(self, found: Route, tokens: float) -> RequestHold | str:
        """Reserve a request on ``found`` of ``tokens`` estimated prompt tokens: its hold,
        or the message it is refused with."""
        scope, budget, ends = self.scope()
        prompt = TokenUsage(input_tokens=math.ceil(max(0.0, tokens)))
        estimate = self.spend(found, prompt)
        if estimate is None:
            return self.refused(found, None, ends)
        request_id = f"{scope}:{uuid.uuid4().hex}"
        refusal = await asyncio.to_thread(
            functools.partial(
                self.rows.reserve,
                request_id,
                scope,
                budget,
                estimate,
                now=self.clock(),
                until=self.until(ends),
            )
        )
        if refusal is not None:
            return self.refused(found, refusal, ends)
        rows = self.rows

        def charge(usage: TokenUsage) -> None:
            charged = self.spend(found, usage) or Spend(tokens=_tokens(usage))
            prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            rows.settle(
                request_id,
                charged,
                scope=scope,
                prompt_tokens=prompt,
                output_tokens=usage.output_tokens,
            )

        return RequestHold(charge, found)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RequestRefused(Event):
    """A request was not forwarded: the gateway's spending budget (``scope``: ``gateway``,
    or a window's ``gateway@day:2026-11-28``) had no room for it. ``dimension``: ``usd``
    or ``tokens`` (``price``: its model has no known price while USD is limited); the
    scope's ``budget``, ``spent`` and ``reserved`` and the request's ``estimate`` as
    ``Spend`` dicts. No header, key or body."""

    name: ClassVar[str] = "request.refused"
    level: ClassVar[int] = logging.WARNING
    provider: str
    model: str
    endpoint: str
    scope: str
    dimension: str
    budget: dict[str, object]
    spent: dict[str, object]
    reserved: dict[str, object]
    estimate: dict[str, object]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetUnreachable(Event):
    """The spending budget's ledger did not answer for a request: at ``stage``
    ``reserve`` the request was not forwarded (its client got a 503); at ``settle`` its
    answer was relayed but not charged. ``reason``: what the store said (no password)."""

    name: ClassVar[str] = "budget.unreachable"
    level: ClassVar[int] = logging.ERROR
    provider: str
    model: str
    endpoint: str
    stage: str
    reason: str


class GatewaySpending(HeldRequests):
    """The gateway's ``budget`` over the requests that are not of an agent run, its rows in
    ``rows``; a request's usage priced by ``price`` (``None``: no price known). ``clock``:
    Unix seconds (the window a request falls in)."""

    def __init__(
        self,
        budget: GatewayBudget,
        rows: SpendRows,
        price: Price,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(budget, GatewayBudget):
            raise ConfigError(f"must be a GatewayBudget, got {budget!r}", where="budget")
        super().__init__(rows, clock=clock)
        self.budget = budget
        self._price = price

    def scope(self) -> tuple[str, SpendBudget, float | None]:
        name, ends = self.budget.scope(self.clock())
        return name, self.budget.limit, ends

    def spend(self, found: Route, usage: TokenUsage) -> Spend | None:
        tokens = _tokens(usage)
        if self.budget.usd is None:
            return Spend(tokens=tokens)
        usd = self._price(found, usage) if tokens else 0.0
        return None if usd is None else Spend(usd=usd, tokens=tokens)

    def refused(self, found: Route, refusal: SpendRefusal | None, ends: float | None) -> str:
        scope, _ = self.budget.scope(self.clock())
        limit = self.budget.limit
        if refusal is None:
            empty = Spend().to_dict()
            _tell(found, scope, "price", limit, empty, empty, empty)
            return (
                f"budget_exceeded: no price is known for {found.provider} model "
                f"{found.model!r}, and the gateway's budget of {self.budget.describe()} "
                "limits USD: the request was not sent (give its price with --price)"
            )
        totals = refusal.totals
        _tell(
            found,
            scope,
            refusal.dimension,
            limit,
            totals.spent.to_dict(),
            totals.reserved.to_dict(),
            refusal.estimate.to_dict(),
        )
        if refusal.dimension == "usd":
            spent = f"${totals.spent.usd:.6f} spent, ${totals.reserved.usd:.6f} reserved"
            need = f"${refusal.estimate.usd:.6f}"
        else:
            spent = f"{totals.spent.tokens} spent, {totals.reserved.tokens} reserved"
            need = f"{refusal.estimate.tokens} tokens"
        again = "" if ends is None else f"; it starts afresh at {_at(ends)}"
        return (
            f"budget_exceeded: the gateway's budget of {self.budget.describe()} has no room "
            f"for this request ({spent}, estimate {need}){again}"
        )


def _at(when: float) -> str:
    return _dt.datetime.fromtimestamp(when, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tell(  # noqa: PLR0917 - one event's fields
    found: Route,
    scope: str,
    dimension: str,
    budget: SpendBudget,
    spent: dict[str, object],
    reserved: dict[str, object],
    estimate: dict[str, object],
) -> None:
    if BUS.wants(RequestRefused.level):
        BUS.emit(
            RequestRefused(
                operation=f"gateway:{found.provider}/{found.model}",
                provider=found.provider,
                model=found.model,
                endpoint=found.endpoint,
                scope=scope,
                dimension=dimension,
                budget=budget.to_dict(),
                spent=spent,
                reserved=reserved,
                estimate=estimate,
            )
        )


def price_provider(provider: str) -> str:
    """The price table's name of a gateway ``provider`` (Gemini's is ``google``)."""
    return _PRICE_PROVIDERS.get(provider, provider)
