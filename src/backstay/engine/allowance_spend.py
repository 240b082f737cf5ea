"""``AllowanceSpend``: a run's requests held to its allowance by a shared gateway that keeps
no spend ledger (``backstay gateway --agent-runs`` without ``--store``;
``backstay.engine.run_allowance``).

Each request is admitted only if

* the scopes' totals as they stood at the last grant (``allowance``: other attempts'
  spending and reservations) have room for it, the run's answers and requests in flight
  added: ``check_spend``'s rule, as ``RequestSpend`` asks it; a refusal there is final;
* and the run's answers, its requests in flight and this one fit in its grant
  (``granted``). A request that does not is SHORT: ``admit_waiting`` waits for the grant
  to be raised (``raise_to``, what the process running the attempt sends when it has
  reserved more) at most ``wait_s``, then refuses it. While it waits, ``state`` says how
  much more it wants, so that the next top-up grants at least that.

A short request that no raise let through is refused as at a scope with no room: the
scope binding the grant, its room beyond the grant counted as reserved (held by other
attempts, or not given to this run).

``raise_to`` is idempotent and monotonic: the grant never goes down; the totals are
replaced by the fresher ones.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.request_spend import RequestSpend
from backstay.engine.run_allowance import allowance_room, beyond, parse_allowance, parse_granted
from backstay.errors import ConfigError
from backstay.policy.spend import ScopeTotals, Spend, SpendBudget, SpendRefusal, check_spend

__all__ = ["ALLOWANCE_WAIT_S", "AllowanceSpend"]

# Seconds a request short of its run's grant waits for the grant to be raised.
ALLOWANCE_WAIT_S: Final = 2.0
# Seconds between looks at the grant while a request waits.
_WAIT_STEP_S: Final = 0.05


def _raised(old: int | float | None, new: int | float | None) -> int | float | None:
    if old is None or new is None:
        return old
    return max(old, new)


def _short_refusal(
    scopes: Sequence[ScopeTotals], granted: SpendBudget, own: Spend, estimate: Spend
) -> SpendRefusal:
    """The refusal of a request of ``estimate`` that the run (which used or holds ``own``)
    has no grant for: the scope with the least room in the dimension the grant binds, what
    the run was not granted of its room counted as reserved, the run's own spending as
    spent."""
    short = beyond(granted, own + estimate)
    usd = short.usd > 0
    dimension = "usd" if usd else "tokens"
    limited = [s for s in scopes if getattr(s.budget, dimension) is not None] or list(scopes)
    found = min(limited, key=lambda s: getattr(allowance_room([s]), dimension))
    room = allowance_room([found])
    if usd:
        extra = Spend(usd=max(0.0, (room.usd or 0.0) - (granted.usd or 0.0)))
    else:
        extra = Spend(tokens=max(0, (room.tokens or 0) - (granted.tokens or 0)))
    totals = dataclasses.replace(found, spent=found.spent + own, reserved=found.reserved + extra)
    return SpendRefusal(totals=totals, estimate=estimate, dimension=dimension)


class AllowanceSpend(RequestSpend):
    """A run's requests against ``allowance`` (the scopes' totals, this attempt's
    reservation left out) and ``granted``; see the module docstring."""

    def __init__(
        self,
        *,
        allowance: Sequence[ScopeTotals],
        granted: SpendBudget,
        adapter: Adapter,
        model: str,
        config: Mapping[str, Any],
        describe: Callable[[SpendRefusal], str],
        wait_s: float = ALLOWANCE_WAIT_S,
    ) -> None:
        self._scopes = tuple(allowance)
        self._granted = granted
        self._wanted = Spend()
        self._wait_s = wait_s
        super().__init__(
            totals=lambda: self._scopes,
            held=Spend(),
            adapter=adapter,
            model=model,
            config=config,
            describe=describe,
        )

    def _try(self, estimate: Spend, *, last: bool) -> str | Spend | None:
        """``None``: held; a message: refused; a ``Spend``: short by that much (only when
        not ``last``)."""
        with self._lock:
            if self.refusal is None:
                own = self._used + self._in_flight
                scopes = [
                    dataclasses.replace(found, spent=found.spent + own) for found in self._scopes
                ]
                self.refusal = check_spend(scopes, estimate)
                if self.refusal is None:
                    short = beyond(self._granted, own + estimate)
                    if short == Spend():
                        self._in_flight = self._in_flight + estimate
                        return None
                    if not last:
                        self._wanted = Spend(
                            usd=max(self._wanted.usd, short.usd),
                            tokens=max(self._wanted.tokens, short.tokens),
                        )
                        return short
                    self.refusal = _short_refusal(self._scopes, self._granted, own, estimate)
            return self._describe(self.refusal)

    def admit(self, tokens: float) -> str | None:
        """Hold a request of ``tokens`` estimated tokens now, or the reason it has no room."""
        found = self._try(self._estimate(tokens), last=True)
        assert not isinstance(found, Spend)  # noqa: S101 - the last try decides
        return found

    async def admit_waiting(self, tokens: float) -> str | None:
        """``admit``, waiting at most ``wait_s`` for a raise when the grant is short."""
        estimate = self._estimate(tokens)
        for _ in range(math.ceil(self._wait_s / _WAIT_STEP_S)):
            found = self._try(estimate, last=False)
            if not isinstance(found, Spend):
                return found
            await asyncio.sleep(_WAIT_STEP_S)
        last = self._try(estimate, last=True)
        assert not isinstance(last, Spend)  # noqa: S101 - the last try decides
        return last

    @property
    def granted(self) -> SpendBudget:
        with self._lock:
            return self._granted

    def raise_to(self, allowance: Sequence[ScopeTotals], granted: SpendBudget) -> SpendBudget:
        """Take fresher totals and a larger grant (never a smaller one); the grant now."""
        with self._lock:
            self._scopes = tuple(allowance)
            old = self._granted
            self._granted = SpendBudget(
                usd=_raised(old.usd, granted.usd),
                tokens=_raised(old.tokens, granted.tokens),  # type: ignore[arg-type]
            )
            if self._granted != old:
                self._wanted = Spend()
            return self._granted

    def raise_from(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``raise_to`` from a raise's JSON (``allowance``, ``granted``: as the run was opened
        with); the ``state`` after it. ``ConfigError`` naming a wrong field."""
        if not isinstance(data, Mapping) or set(data) != {"allowance", "granted"}:
            raise ConfigError("must be an object of allowance and granted", where="body")
        self.raise_to(parse_allowance(data["allowance"]), parse_granted(data["granted"]))
        return self.state()

    def state(self) -> dict[str, Any]:
        """What the run holds, as JSON: its grant, what its answers used, its requests in
        flight, and what a waiting request wants beyond the grant."""
        with self._lock:
            return {
                "granted": self._granted.to_dict(),
                "used": self._used.to_dict(),
                "in_flight": self._in_flight.to_dict(),
                "wanted": self._wanted.to_dict(),
            }
