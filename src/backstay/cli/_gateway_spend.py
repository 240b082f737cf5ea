"""The spending budgets of ``backstay gateway`` (docs/gateway.md, *Spending budgets*): where
their rows are kept, how a request's usage is priced, and a ``backstay run``'s budget held
in that ledger.

* **The gateway's own ledger.** With ``--store``, the gateway's requests are reserved and
  settled in a gateway ledger beside the store's spend ledger, never in the batch's: a
  SQLite state directory's ``gateway-spend.sqlite``, a Redis namespace's keys
  ``{ns:gateway-spend}`` (every gateway on that Redis holds one budget together), a row
  per request in flight and a total per live scope (``backstay.gateway.spending``).
  Without ``--store``, in this process (``MemoryRows``: a restart starts afresh).
* **Prices.** USD is priced with the project's price table (``backstay.adapters.pricing``:
  ``--price MODEL=INPUT,OUTPUT`` first, in USD per million tokens, then ``genai-prices``).
* **Runs.** A ``backstay run --budget-usd/--budget-tokens --gateway URL`` registers its
  budget (``stop`` ``ended``) with the run; a gateway with a ledger holds it there
  (``RunLedgerBudgets``): the run gets a scope of its own (``run:<id>``, forgotten
  ``RUN_IDLE_S`` after its last request), what its earlier attempts spent is written as
  one settled row, and each request is reserved and settled as the gateway's own are. A
  batch's run goes on to ``SharedBudgets`` as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.pricing import ModelPrice, parse_prices, price_usage
from backstay.adapters.registry import adapter_class
from backstay.adapters.spend import charge_spend
from backstay.adapters.usage import Usage
from backstay.engine.request_budget import refused_request
from backstay.engine.run_allowance import parse_allowance
from backstay.errors import ConfigError
from backstay.gateway.routes import Route
from backstay.gateway.spending import (
    RUN_IDLE_S,
    GatewayLedger,
    HeldRequests,
    Price,
    SpendRows,
    price_provider,
)
from backstay.gateway.usage import TokenUsage
from backstay.policy.spend import ScopeKind, Spend, SpendBudget, SpendRefusal, SpendScope

if TYPE_CHECKING:
    from backstay.engine.shared_budget import SharedBudgets
    from backstay.engine.stores import StoreBundle

__all__ = [
    "GATEWAY_LEDGER",
    "RunLedgerBudgets",
    "gateway_ledger",
    "price_pairs",
    "table_price",
]

# The name of the gateway's own ledger beside a store's (a file's stem, a key's tag).
GATEWAY_LEDGER: Final = "gateway-spend"
_RUN: Final = "run"


def gateway_ledger(bundle: StoreBundle) -> GatewayLedger:
    """The gateway's own ledger beside the spend ledger of ``bundle`` (which the caller
    closes after it)."""
    beside = getattr(bundle.spend, "beside", None)
    if not callable(beside):
        raise ConfigError("this store keeps no spend ledger a gateway can use", where="--store")
    found: GatewayLedger = beside(GATEWAY_LEDGER)
    return found


def _usage(usage: TokenUsage) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def price_pairs(given: list[str]) -> Mapping[str, ModelPrice]:
    """``--price MODEL=INPUT,OUTPUT`` values (USD per million tokens) as prices."""
    prices: dict[str, dict[str, float]] = {}
    for text in given:
        model, sep, rest = text.partition("=")
        parts = rest.split(",")
        try:
            numbers = [float(part) for part in parts]
        except ValueError:
            numbers = []
        if not sep or not model.strip() or len(numbers) != 2:
            raise ConfigError(f"must be MODEL=INPUT,OUTPUT, got {text!r}", where="--price")
        prices[model.strip()] = {"input_per_mtok": numbers[0], "output_per_mtok": numbers[1]}
    return parse_prices(prices, where="--price")


def table_price(prices: Mapping[str, ModelPrice]) -> Price:
    """What a request's usage costs: at ``prices``, else ``genai-prices``; ``None`` when
    neither knows its model."""

    def price(found: Route, usage: TokenUsage) -> float | None:
        provider = price_provider(found.provider)
        return price_usage(_usage(usage), model=found.model, provider=provider, prices=prices).usd

    return price


class _RunHeld(HeldRequests):
    """A ``backstay run``'s budget held in the gateway's ledger: the scope ``run:<id>`` of
    its own, its ``budget``, what its earlier attempts spent (``earlier``) written as one
    settled row; its usage priced as the run charges it (``charge_spend``: the adapter's
    price, else tokens only). The first refusal is kept, and every later request refused."""

    def __init__(
        self,
        rows: SpendRows,
        *,
        budget: SpendBudget,
        earlier: Spend,
        adapter: Adapter,
        model: str,
        config: Mapping[str, Any],
    ) -> None:
        super().__init__(rows)
        self.name = f"{_RUN}:{uuid.uuid4().hex}"
        self._budget = budget
        self._adapter = adapter
        self._model = model
        self._config = config
        if earlier.usd or earlier.tokens:
            row = f"{self.name}:earlier"
            now = self.clock()
            rows.reserve(row, self.name, SpendBudget(), Spend(), now=now, until=now + RUN_IDLE_S)
            rows.settle(row, earlier, scope=self.name, prompt_tokens=0, output_tokens=0)

    def scope(self) -> tuple[str, SpendBudget, float | None]:
        return self.name, self._budget, None

    def until(self, ends: float | None) -> float | None:
        """A run's scope is forgotten ``RUN_IDLE_S`` after its last request."""
        del ends
        return self.clock() + RUN_IDLE_S

    def spend(self, found: Route, usage: TokenUsage) -> Spend | None:
        del found  # priced at the run's model, as the run is charged
        return charge_spend(
            self._adapter,
            model=self._model,
            config=self._config,
            usage=_usage(usage),
            estimate=Spend(),
        )

    def refused(self, found: Route, refusal: SpendRefusal | None, ends: float | None) -> str:
        del found, ends
        if refusal is not None and self.refusal is None:
            # Named as the run knows its scope (``task run``), not by its row's id.
            scope = SpendScope(kind=ScopeKind.TASK, name=_RUN)
            totals = refusal.totals
            self.refusal = SpendRefusal(
                totals=type(totals)(
                    scope=scope, budget=totals.budget, spent=totals.spent, reserved=totals.reserved
                ),
                estimate=refusal.estimate,
                dimension=refusal.dimension,
            )
        if self.refusal is None:  # charge_spend always prices: not reached
            return "budget_exceeded: the run's request cannot be priced"
        return refused_request(self.refusal, _RUN, paused=False)

    async def hold(self, found: Route, tokens: float) -> Any:
        if self.refusal is not None:
            return refused_request(self.refusal, _RUN, paused=False)
        return await super().hold(found, tokens)


class RunLedgerBudgets:
    """The ``RunBudgets`` of ``backstay gateway --agent-runs --store``: a batch's runs are
    held by ``shared`` (against the batch's ledger); a ``backstay run``'s (its budget's
    ``stop`` ``ended``) in the gateway's own ledger, through ``rows``."""

    holds_runs = True

    def __init__(self, shared: SharedBudgets, rows: SpendRows) -> None:
        self._shared = shared
        self._rows = rows

    @property
    def keeps_ledger(self) -> bool:
        return True

    def __call__(self, data: Mapping[str, Any]) -> Any:
        checked = self._shared(data)  # checks every field, whoever holds the run
        if not isinstance(data, Mapping) or data.get("stop") != "ended":
            return checked
        raw = data.get("task_budget")
        budget = SpendBudget.from_dict(raw) if isinstance(raw, Mapping) else SpendBudget()
        earlier = Spend()
        if "allowance" in data:
            scopes = parse_allowance(data["allowance"])
            if scopes:
                earlier = scopes[0].spent
        adapter = adapter_class(str(data["adapter"]))()
        prices = data.get("prices")
        return _RunHeld(
            self._rows,
            budget=budget,
            earlier=earlier,
            adapter=adapter,
            model=str(data.get("model") or ""),
            config={} if prices is None else {"prices": prices},
        )
