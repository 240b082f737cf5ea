"""``SharedBudgets``: the spending budgets of runs opened at a shared gateway
(``backstay gateway --agent-runs``), asked for each of their requests.

The process that runs the task sends, with the run's opening request, what its
``AttemptBudget`` knows (``AttemptBudget.shared``: the task's operation id, tenant and own
budget, the attempt's reservation, its adapter and model, the adapter's ``prices`` if
configured; no key, no prompt). The gateway makes from it a ``RequestSpend``: the same
rule, the same refusal (a 400 in the provider's format naming the budget:
``refused_request``), over

* with a store (``--store``: ``ledger``), the scopes task, tenant and batch of that
  store's spend ledger, as the in-process gateway asks the engine's. The ledger must be
  the batch's: a Redis store, or the batch's SQLite state directory;
* without one, the run's ``allowance`` and ``granted`` (``backstay.engine.run_allowance``):
  the scopes' totals at the attempt's start and the share of their room the engine
  reserved for the attempt; the run's spend is kept in memory against them
  (``backstay.engine.allowance_spend.AllowanceSpend``), and the grant is raised while the
  run goes on (``PUT /_backstay/runs/{token}/allowance``). A run opened without an
  allowance is not asked (``None``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.contract import Adapter
from backstay.adapters.registry import adapter_class
from backstay.adapters.request_spend import RequestSpend
from backstay.engine.allowance_spend import AllowanceSpend
from backstay.engine.request_budget import refused_request
from backstay.engine.run_allowance import allowance_room, parse_allowance, parse_granted
from backstay.engine.spend_ledger import AttemptSpend, SpendLedger
from backstay.errors import ConfigError
from backstay.policy.spend import ScopeKind, ScopeTotals, Spend, SpendBudget, SpendRefusal

__all__ = ["ALLOWANCE_KEY", "GRANTED_KEY", "SharedBudgets"]

# The run's allowance: the scopes' totals at the attempt's start, and the share of their
# room granted to the run (without a store only).
ALLOWANCE_KEY: Final = "allowance"
GRANTED_KEY: Final = "granted"
# How the run ends at a refusal: "paused" (a batch's task, the default) or "ended" (a
# single ``backstay run``); only the 400's wording changes.
STOP_KEY: Final = "stop"
_STOPS: Final = ("paused", "ended")

_KEYS = frozenset(
    {
        "operation_id",
        "task_id",
        "tenant",
        "task_budget",
        "held",
        "adapter",
        "model",
        "prices",
        STOP_KEY,
        ALLOWANCE_KEY,
        GRANTED_KEY,
    }
)


def _optional(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return None if value is None else _text(data, name)


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"must be a non-empty string, got {value!r}", where=f"budget.{name}")
    return value


def _spend(data: Mapping[str, Any]) -> Spend:
    value = data.get("held")
    if not isinstance(value, Mapping):
        raise ConfigError("must be an object of usd and tokens", where="budget.held")
    usd, tokens = value.get("usd", 0.0), value.get("tokens", 0)
    if not isinstance(usd, int | float) or not isinstance(tokens, int) or usd < 0 or tokens < 0:
        raise ConfigError("must hold non-negative usd and tokens", where="budget.held")
    return Spend(usd=float(usd), tokens=tokens)


class SharedBudgets:
    """Make the ``RequestSpend`` of a run from its opening request's ``budget`` object,
    over ``ledger`` (``None``: over the run's allowance); ``ConfigError`` naming a wrong
    field."""

    def __init__(self, ledger: SpendLedger | None) -> None:
        self.ledger = ledger

    @property
    def keeps_ledger(self) -> bool:
        """Whether runs are held against a spend ledger of the gateway's (else against
        the allowance each carries)."""
        return self.ledger is not None

    def __call__(self, data: Mapping[str, Any]) -> RequestSpend | None:
        if not isinstance(data, Mapping):
            raise ConfigError("must be an object", where="budget")
        if self.ledger is None and ALLOWANCE_KEY not in data:
            return None  # nothing to hold the run to
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise ConfigError(
                f"unknown key (known: {', '.join(sorted(_KEYS))})", where=f"budget.{unknown[0]}"
            )
        operation_id = _text(data, "operation_id")
        task_id = _text(data, "task_id")
        adapter_name = _text(data, "adapter")
        model = _optional(data, "model") or ""
        tenant = _optional(data, "tenant")
        raw_budget = data.get("task_budget")
        if raw_budget is not None and not isinstance(raw_budget, Mapping):
            raise ConfigError("must be an object of usd and tokens", where="budget.task_budget")
        task_budget = None if raw_budget is None else SpendBudget.from_dict(raw_budget)
        held = _spend(data)
        allowance: tuple[ScopeTotals, ...] = ()
        if ALLOWANCE_KEY in data:
            allowance = parse_allowance(data[ALLOWANCE_KEY])
        granted = allowance_room(allowance)  # without a grant: the whole room
        if GRANTED_KEY in data:
            granted = parse_granted(data[GRANTED_KEY])
        adapter = adapter_class(adapter_name)()
        if not isinstance(adapter, Adapter):
            raise ConfigError(f"{adapter_name!r} is no adapter", where="budget.adapter")
        ledger = self.ledger
        if ledger is not None:
            attempt = AttemptSpend(
                attempt_id="",
                operation_id=operation_id,
                tenant=tenant,
                adapter=adapter_name,
                model=model,
                task_budget=task_budget,
                estimate=Spend(),
            )

            def totals() -> list[ScopeTotals]:
                return [
                    ledger.totals(scope, task_budget if scope.kind is ScopeKind.TASK else None)
                    for scope in attempt.scopes()
                ]

        stop = data.get(STOP_KEY, "paused")
        if stop not in _STOPS:
            raise ConfigError(
                f"must be one of {', '.join(_STOPS)}, got {stop!r}", where=f"budget.{STOP_KEY}"
            )
        paused = stop == "paused"

        def describe(refusal: SpendRefusal) -> str:
            return refused_request(refusal, task_id, paused=paused)

        prices = data.get("prices")
        config = {} if prices is None else {"prices": prices}
        if ledger is None:
            return AllowanceSpend(
                allowance=allowance,
                granted=granted,
                adapter=adapter,
                model=model,
                config=config,
                describe=describe,
            )
        return RequestSpend(
            totals=totals,
            held=held,
            adapter=adapter,
            model=model,
            config=config,
            describe=describe,
        )
