"""``RequestSpend``: spending budgets as the requests of one agent attempt see them through
the gateway (a ``backstay.gateway.runs.RequestBudget``, handed to the run with
``gateway_wiring.use_request_budget``).

The attempt's estimate was reserved before it started; inside it, each request the agent
sends is admitted only if the budgets still have room for it, counting what the attempt's
answers used so far and its requests in flight in place of that reservation:

    spent + reserved by the others + used so far + in flight + this request ≤ limit

for every scope given (``totals``) and each of USD and tokens that is limited
(``check_spend``'s rule). A request's estimate is its prompt's estimated tokens (the
gateway's ``estimate_tokens(output=False)``: an agent's requests set output limits far
above what they answer, so a request is refused once the budgets cannot hold its prompt,
and the overshoot is at most the output of the requests in flight); an answer charges the
tokens it reported; both are priced as the attempt is charged (``charge_spend``: at the
adapter's known price, else tokens only). The first refusal is kept (``refusal``): the
gateway answers that request, and every later one, with a 400 naming the budget, so the
agent stops; the caller ends the attempt at its budget.

Called on the gateway's thread: a lock guards the counts, and ``totals`` must be safe to
call from it.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from backstay.adapters.contract import Adapter
from backstay.adapters.spend import charge_spend
from backstay.adapters.usage import Usage
from backstay.policy.spend import ScopeTotals, Spend, SpendRefusal, check_spend

__all__ = ["RequestSpend"]


def _less(a: Spend, b: Spend) -> Spend:
    return Spend(usd=max(0.0, a.usd - b.usd), tokens=max(0, a.tokens - b.tokens))


class RequestSpend:
    """One attempt's requests against budgets; see the module docstring.

    * ``totals``: the scopes' current totals, this attempt's reservation among them;
    * ``held``: that reservation;
    * ``adapter``, ``model``, ``config``: what prices a request and an answer;
    * ``describe``: the message a refused request is answered with.
    """

    def __init__(
        self,
        *,
        totals: Callable[[], Sequence[ScopeTotals]],
        held: Spend,
        adapter: Adapter,
        model: str,
        config: Mapping[str, Any],
        describe: Callable[[SpendRefusal], str],
    ) -> None:
        self._totals = totals
        self._held = held
        self._adapter = adapter
        self._model = model
        self._config = config
        self._describe = describe
        self._lock = threading.Lock()
        self._used = Spend()
        self._in_flight = Spend()
        self.refusal: SpendRefusal | None = None

    @property
    def used(self) -> Spend:
        """What the attempt's answers were charged so far."""
        with self._lock:
            return self._used

    def _spend(self, usage: Usage) -> Spend:
        return charge_spend(
            self._adapter, model=self._model, config=self._config, usage=usage, estimate=Spend()
        )

    def _estimate(self, tokens: float) -> Spend:
        return self._spend(Usage(input_tokens=math.ceil(max(0.0, tokens))))

    def admit(self, tokens: float) -> str | None:
        """Hold a request of ``tokens`` estimated tokens, or the reason it has no room."""
        estimate = self._estimate(tokens)
        with self._lock:
            if self.refusal is None:
                own = self._used + self._in_flight
                scopes = [
                    dataclasses.replace(
                        found, spent=found.spent + own, reserved=_less(found.reserved, self._held)
                    )
                    for found in self._totals()
                ]
                self.refusal = check_spend(scopes, estimate)
                if self.refusal is None:
                    self._in_flight = self._in_flight + estimate
                    return None
            return self._describe(self.refusal)

    def release(self, tokens: float) -> None:
        """A request admitted with ``tokens`` is done: its hold is let go."""
        estimate = self._estimate(tokens)
        with self._lock:
            self._in_flight = _less(self._in_flight, estimate)

    def charge(self, usage: object) -> None:
        """Count what one answer used (a ``TokenUsage``)."""
        answered = Usage(
            input_tokens=int(getattr(usage, "input_tokens", 0)),
            output_tokens=int(getattr(usage, "output_tokens", 0)),
            cache_read_tokens=int(getattr(usage, "cache_read_tokens", 0)),
            cache_write_tokens=int(getattr(usage, "cache_write_tokens", 0)),
        )
        spent = self._spend(answered)
        with self._lock:
            self._used = self._used + spent
