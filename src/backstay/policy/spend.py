"""Spending budgets: how much money (USD) and how many tokens attempts may use, per task,
per batch and per tenant; the pure accounting behind them.

A ``SpendBudget`` limits one *scope* (``SpendScope``: a task, the batch, a tenant). Before
an attempt starts, its estimated ``Spend`` is *reserved* in every scope it belongs to;
after it, the reservation is *settled* with what the attempt really used (or *released*
when it never ran). A scope admits a reservation only if

    spent + reserved + estimate ≤ limit     (for each of USD and tokens that is limited)

and never once ``spent + reserved`` has reached the limit, even for an estimate of zero.
Counting the reservations of attempts still in flight is what keeps concurrent attempts
from overshooting together: each sees the others' estimates before it starts.

``check_spend`` is the rule, a pure function of the scopes' totals. ``SpendLedger`` keeps
reservations in memory (one process; ``backstay.engine.budgets`` keeps them in the state
file instead, with the same rule). ``estimate_tokens`` is the documented estimate of one
attempt's tokens (docs/budgets.md).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError

__all__ = [
    "BATCH_SCOPE",
    "BUDGET_EXCEEDED",
    "DEFAULT_OUTPUT_TOKENS",
    "EarlierUse",
    "ScopeKind",
    "ScopeTotals",
    "Spend",
    "SpendBudget",
    "SpendHold",
    "SpendLedger",
    "SpendRefusal",
    "SpendScope",
    "TokenEstimate",
    "check_spend",
    "estimate_tokens",
]

# The reason a task is paused with when a budget has no room for its next attempt.
BUDGET_EXCEEDED: Final = "budget_exceeded"
# The output tokens assumed for an attempt when nothing bounds or predicts them.
DEFAULT_OUTPUT_TOKENS: Final = 1024
# Below this, a USD amount is rounding noise (a float sum of many small costs).
_USD_EPSILON: Final = 1e-12


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpendBudget:
    """At most ``usd`` dollars and ``tokens`` tokens (prompt and output); ``None``: that
    one is not limited. ``SpendBudget()`` limits nothing."""

    usd: float | None = None
    tokens: int | None = None

    def __post_init__(self) -> None:
        if self.usd is not None:
            check_number(self.usd, where="budget.usd")
            object.__setattr__(self, "usd", float(self.usd))
        if self.tokens is not None:
            check_number(self.tokens, where="budget.tokens", integer=True)

    @property
    def unlimited(self) -> bool:
        return self.usd is None and self.tokens is None

    def to_dict(self) -> dict[str, Any]:
        return {"usd": self.usd, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpendBudget:
        """The budget ``to_dict`` gave; ``ConfigError`` for other keys."""
        unknown = sorted(str(k) for k in data if k not in ("usd", "tokens"))
        if unknown:
            raise ConfigError("unknown key (known: usd, tokens)", where=f"budget.{unknown[0]}")
        return cls(usd=data.get("usd"), tokens=data.get("tokens"))

    def describe(self) -> str:
        """``"$0.05 and 20000 tokens"``, ``"no limit"``."""
        parts = []
        if self.usd is not None:
            parts.append(f"${self.usd:g}")
        if self.tokens is not None:
            parts.append(f"{self.tokens} tokens")
        return " and ".join(parts) or "no limit"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Spend:
    """An amount spent, reserved or estimated."""

    usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: object) -> Spend:
        if not isinstance(other, Spend):
            return NotImplemented
        return Spend(usd=self.usd + other.usd, tokens=self.tokens + other.tokens)

    def to_dict(self) -> dict[str, Any]:
        return {"usd": round(self.usd, 9), "tokens": self.tokens}


class ScopeKind(enum.StrEnum):
    TASK = "task"
    BATCH = "batch"
    TENANT = "tenant"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpendScope:
    """What a budget covers: one task (by operation id), the batch, or a tenant's tasks."""

    kind: ScopeKind
    name: str = ""

    @property
    def label(self) -> str:
        """``"batch"``, ``"tenant acme"``, ``"task nightly:hello:T0-run_01"``."""
        return str(self.kind) if self.kind is ScopeKind.BATCH else f"{self.kind} {self.name}"


BATCH_SCOPE: Final = SpendScope(kind=ScopeKind.BATCH)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ScopeTotals:
    """A scope's budget, what its settled attempts used, and what is reserved for the
    attempts in flight."""

    scope: SpendScope
    budget: SpendBudget
    spent: Spend
    reserved: Spend

    @property
    def committed(self) -> Spend:
        return self.spent + self.reserved

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": str(self.scope.kind),
            "name": self.scope.name,
            "budget": self.budget.to_dict(),
            "spent": self.spent.to_dict(),
            "reserved": self.reserved.to_dict(),
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SpendRefusal:
    """Why a reservation was refused: the first scope (in the order given) whose
    ``dimension`` (``"usd"`` or ``"tokens"``) has no room for ``estimate``."""

    totals: ScopeTotals
    estimate: Spend
    dimension: str

    @property
    def fits_once_settled(self) -> bool:
        """Whether the settled spending alone leaves room for the estimate: the refusal
        is owed to reservations of attempts in flight, which may settle for less."""
        settled = dataclasses.replace(self.totals, reserved=Spend())
        return check_spend([settled], self.estimate) is None

    @property
    def reason(self) -> str:
        """``budget_exceeded: the batch's USD budget …`` — a task's paused reason."""
        t = self.totals
        if self.dimension == "usd":
            limit, spent, held, need = (
                f"${t.budget.usd:g}",
                f"${t.spent.usd:.6f}",
                f"${t.reserved.usd:.6f}",
                f"${self.estimate.usd:.6f}",
            )
            what = "USD"
        else:
            limit, spent, held, need = (
                f"{t.budget.tokens}",
                f"{t.spent.tokens}",
                f"{t.reserved.tokens}",
                f"{self.estimate.tokens}",
            )
            what = "token"
        return (
            f"{BUDGET_EXCEEDED}: the {t.scope.label} {what} budget {limit} has no room for "
            f"the next attempt ({spent} spent, {held} reserved, estimate {need})"
        )


def _refused(committed: float, estimate: float, limit: float | None, epsilon: float) -> bool:
    if limit is None:
        return False
    return committed >= limit - epsilon or committed + estimate > limit + epsilon


def check_spend(totals: Iterable[ScopeTotals], estimate: Spend) -> SpendRefusal | None:
    """``None`` if every scope has room for ``estimate``; else the first refusal."""
    for scope in totals:
        committed = scope.committed
        if _refused(committed.usd, estimate.usd, scope.budget.usd, _USD_EPSILON):
            return SpendRefusal(totals=scope, estimate=estimate, dimension="usd")
        if _refused(committed.tokens, estimate.tokens, scope.budget.tokens, 0):
            return SpendRefusal(totals=scope, estimate=estimate, dimension="tokens")
    return None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EarlierUse:
    """The mean use of earlier attempts like the next one (same adapter and model)."""

    prompt_tokens: float
    output_tokens: float
    usd: float | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TokenEstimate:
    input_tokens: int
    output_tokens: int

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def estimate_tokens(
    *, prompt_tokens: int, max_output_tokens: int | None, earlier: EarlierUse | None
) -> TokenEstimate:
    """The tokens one attempt is assumed to use (docs/budgets.md, *The estimate*):

    * input: the prompt's estimated tokens, or the mean prompt tokens of earlier attempts
      if more (an agent sends its prompt many times, and tool output with it);
    * output: the request's ``max_output_tokens`` (a bound the reply cannot pass), else
      the mean output of earlier attempts, else ``DEFAULT_OUTPUT_TOKENS``.
    """
    check_number(prompt_tokens, where="prompt_tokens", integer=True)
    before_in = 0 if earlier is None else round(earlier.prompt_tokens)
    if max_output_tokens is not None:
        output = max_output_tokens
    elif earlier is not None:
        output = round(earlier.output_tokens)
    else:
        output = DEFAULT_OUTPUT_TOKENS
    return TokenEstimate(input_tokens=max(prompt_tokens, before_in), output_tokens=output)


@dataclasses.dataclass(frozen=True, slots=True)
class SpendHold:
    """One reservation: its id, the scopes it was made in, and the estimate."""

    hold_id: int
    scopes: tuple[SpendScope, ...]
    estimate: Spend


@dataclasses.dataclass(slots=True)
class _Entry:
    hold: SpendHold
    actual: Spend | None = None


class SpendLedger:
    """Budgets and reservations in memory, for one process (thread-safe).

    ``reserve`` admits or refuses an estimate in all its scopes at once; ``settle`` charges
    the real figure instead of the estimate; ``release`` drops a reservation whose
    attempt never ran. A scope without a budget is not limited (its spending is still
    counted)."""

    def __init__(self, budgets: Mapping[SpendScope, SpendBudget] | None = None) -> None:
        self._lock = threading.Lock()
        self._budgets: dict[SpendScope, SpendBudget] = dict(budgets or {})
        self._entries: dict[int, _Entry] = {}
        self._ids = itertools.count(1)

    def set_budget(self, scope: SpendScope, budget: SpendBudget) -> None:
        with self._lock:
            self._budgets[scope] = budget

    def _totals(self, scope: SpendScope) -> ScopeTotals:
        spent, reserved = Spend(), Spend()
        for entry in self._entries.values():
            if scope not in entry.hold.scopes:
                continue
            if entry.actual is None:
                reserved = reserved + entry.hold.estimate
            else:
                spent = spent + entry.actual
        budget = self._budgets.get(scope, SpendBudget())
        return ScopeTotals(scope=scope, budget=budget, spent=spent, reserved=reserved)

    def totals(self, scope: SpendScope) -> ScopeTotals:
        with self._lock:
            return self._totals(scope)

    def reserve(self, scopes: Iterable[SpendScope], estimate: Spend) -> SpendHold | SpendRefusal:
        """Hold ``estimate`` in every scope of ``scopes``, or refuse without holding any."""
        chosen = tuple(dict.fromkeys(scopes))
        with self._lock:
            refusal = check_spend((self._totals(s) for s in chosen), estimate)
            if refusal is not None:
                return refusal
            hold = SpendHold(next(self._ids), chosen, estimate)
            self._entries[hold.hold_id] = _Entry(hold)
            return hold

    def settle(self, hold: SpendHold, actual: Spend) -> None:
        """Charge ``actual`` for ``hold`` (its estimate no longer counts)."""
        with self._lock:
            entry = self._entries.get(hold.hold_id)
            if entry is None or entry.actual is not None:
                raise ConfigError(f"reservation {hold.hold_id} is not open", where="hold")
            entry.actual = actual

    def release(self, hold: SpendHold) -> None:
        """Drop ``hold``: its attempt never ran."""
        with self._lock:
            entry = self._entries.get(hold.hold_id)
            if entry is not None and entry.actual is None:
                del self._entries[hold.hold_id]
