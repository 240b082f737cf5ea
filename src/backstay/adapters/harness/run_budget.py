"""``RunBudget``: the spending budget of one harness run (``backstay run --budget-usd``
/ ``--budget-tokens``, ``BaseAdapter.run(budget=…)``, a run over a fallback chain).

Before each attempt — the first, each retry, each fallback candidate's — the attempt's
estimate (``backstay.adapters.spend.estimate_spend``: the same rule as the engine's, for
the attempt's own adapter, model and settings) must fit:

    spent + estimate ≤ limit      (for each of USD and tokens that is limited)

else no attempt starts: the adapter is not called, and the run ends with
``ERR_BUDGET_EXCEEDED`` (kind ``limit_exceeded``) and exit code ``BUDGET_EXIT_CODE`` (5,
as ``backstay batch`` stops at a budget). After each attempt, what it really used (the
run capture's usage grew by it) is charged (``charge_spend``). The mean use of this run's
earlier attempts of the same adapter and model informs the next estimate, as the engine's
state directory does for its tasks.

Through the gateway, each request of an attempt is held against the run's budget too
(``backstay.adapters.request_spend``): one with no room is answered with a 400 naming the
budget, the agent stops, and the run ends as above (``ERR_BUDGET_EXCEEDED``, exit code 5),
what the attempt used charged.

Through a shared gateway that holds runs to allowances (``backstay gateway --agent-runs``
without ``--store``; ``--gateway URL``), the run is registered with its budget
(``_RunRequests``: ``shared`` and ``allowance``, the same fields a batch's attempt sends; no
key, no prompt): its one scope (``task`` ``run``) with the run's budget, what the earlier
attempts spent, and as its grant the whole room left (a run is one task: ``parallel`` 1).
The gateway holds each request against it; its refusal comes back when the run is closed,
and the run ends as above. A shared gateway on a store (``--store``) is given the same
registration and holds the run in a ledger of its own beside the store's (a scope of the
run's, what its earlier attempts spent written there): each request reserved and settled
in it (``backstay.cli._gateway_spend``).

The refusal travels through the retry driver or the fallback chain as ``_Refused``, a
``BaseException`` like a cancellation: neither counts it a failure, so the candidate's
breaker permit is given back, no retry or move is decided, and no cooldown starts.
``bounded`` turns it into the run's ``AdapterError`` at the edge of the run's body.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from backstay.adapters.capture import Capture
from backstay.adapters.contract import Adapter, AgentRequest, AgentResult
from backstay.adapters.gateway_wiring import current_gateway, use_request_budget
from backstay.adapters.request_spend import RequestSpend
from backstay.adapters.spend import attempt_prompt, charge_spend, estimate_spend
from backstay.adapters.usage import Usage
from backstay.errors import AdapterError, ConfigError
from backstay.failure import Failure
from backstay.policy.spend import (
    EarlierUse,
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendHold,
    SpendLedger,
    SpendRefusal,
    SpendScope,
)

__all__ = ["BUDGET_CODE", "BUDGET_EXIT_CODE", "RunBudget"]

T = TypeVar("T")

# The error contract's code of a run a spending budget stopped.
BUDGET_CODE: Final = "ERR_BUDGET_EXCEEDED"
# The exit code of such a run: the code ``backstay batch`` exits with at a budget.
BUDGET_EXIT_CODE: Final = 5
_SCOPE: Final = SpendScope(kind=ScopeKind.TASK, name="run")


class _Refused(BaseException):
    """The next attempt does not fit the run's budget: no attempt was started."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclasses.dataclass(slots=True)
class _Use:
    count: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0

    def mean(self) -> EarlierUse | None:
        if not self.count:
            return None
        n = self.count
        return EarlierUse(
            prompt_tokens=self.prompt_tokens / n,
            output_tokens=self.output_tokens / n,
            usd=self.usd / n,
        )


# The run's name at a shared gateway (its task and operation there: a run has one scope).
_RUN: Final = "run"


class _RunRequests(RequestSpend):
    """A run's requests against its budget, registered with a shared gateway: what the
    gateway makes its allowance from (``shared``, ``allowance``), as a batch's attempt
    sends them (``backstay.engine.request_budget.AttemptBudget``)."""

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
        super().__init__(
            totals=totals,
            held=held,
            adapter=adapter,
            model=model,
            config=config,
            describe=describe,
        )
        self._name = adapter.name
        self._budget = totals()[0].budget  # the run's one scope's

    def shared(self) -> dict[str, Any]:
        """The run's registration at a shared gateway: its scope's budget, the attempt's
        reservation, what prices a request. No key or prompt."""
        prices = self._config.get("prices")
        return {
            "operation_id": _RUN,
            "task_id": _RUN,
            "tenant": None,
            "task_budget": self._budget.to_dict(),
            "held": self._held.to_dict(),
            "adapter": self._name,
            "model": self._model,
            "stop": "ended",  # a run is not paused: it ends as at any budget stop
            **({} if prices is None else {"prices": prices}),
        }

    def allowance(self, parallel: int = 1) -> dict[str, Any] | None:
        """The run's allowance (``backstay.engine.run_allowance``'s fields): its scope's
        totals without this attempt's reservation, and as ``granted`` the whole room left
        (a run's budget is its own: ``parallel`` changes nothing)."""
        del parallel  # one run: nothing to share its room with
        (found,) = self._totals()
        scope = dataclasses.replace(found, reserved=_less(found.reserved, self._held))
        committed = scope.committed
        budget = scope.budget
        granted = SpendBudget(
            usd=None if budget.usd is None else max(0.0, budget.usd - committed.usd),
            tokens=None if budget.tokens is None else max(0, budget.tokens - committed.tokens),
        )
        return {"allowance": [scope.to_dict()], "granted": granted.to_dict()}


def _less(a: Spend, b: Spend) -> Spend:
    return Spend(usd=max(0.0, a.usd - b.usd), tokens=max(0, a.tokens - b.tokens))


def _holds_allowances() -> bool:
    """Whether the gateway runs go through now is a shared one that holds a run's budget
    per request, to the allowance it is given or in its ledger
    (``RemoteRunGateway.holds_runs``)."""
    gateway = current_gateway()
    return any(getattr(gateway, name, False) is True for name in ("holds_runs", "holds_allowances"))


def _used(before: Usage, after: Usage) -> Usage:
    """What an attempt added to the run's usage (``after`` minus ``before``)."""
    cost = None if after.cost_usd is None else max(0.0, after.cost_usd - (before.cost_usd or 0.0))
    return Usage(
        input_tokens=after.input_tokens - before.input_tokens,
        output_tokens=after.output_tokens - before.output_tokens,
        cache_read_tokens=after.cache_read_tokens - before.cache_read_tokens,
        cache_write_tokens=after.cache_write_tokens - before.cache_write_tokens,
        cost_usd=cost,
        api_calls=after.api_calls - before.api_calls,
    )


def _describe(spend: Spend, dimension: str) -> str:
    return f"${spend.usd:.6f}" if dimension == "usd" else f"{spend.tokens} tokens"


class RunBudget:
    """The budget of one harness run; ``None`` (or a budget limiting nothing) admits every
    attempt and charges nothing. ``ConfigError`` for anything but a ``SpendBudget``."""

    def __init__(self, budget: SpendBudget | None) -> None:
        if budget is not None and not isinstance(budget, SpendBudget):
            raise ConfigError(
                f"must be a SpendBudget or None, got {type(budget).__name__}", where="budget"
            )
        self.budget = budget
        self.active = budget is not None and not budget.unlimited
        self._ledger = SpendLedger({_SCOPE: budget or SpendBudget()})
        self._earlier: dict[tuple[str, str], _Use] = {}

    @property
    def spent(self) -> Spend:
        """What the run's attempts were charged so far."""
        return self._ledger.totals(_SCOPE).spent

    async def attempt(
        self,
        run: Capture,
        adapter: Adapter,
        request: AgentRequest,
        number: int,
        make: Callable[[], Awaitable[T]],
    ) -> T:
        """Attempt ``number`` (``make()``) on ``adapter`` with ``request``, if its estimate
        fits; then charge what it used. Raises ``_Refused`` when it does not fit."""
        if not self.active:
            return await make()
        key = (adapter.name, request.model)
        system = None if request.tier is None else request.tier.system_prompt
        estimate = estimate_spend(
            adapter,
            model=request.model,
            config=request.config,
            prompt=attempt_prompt(prompt_file=request.prompt_file, system_prompt=system),
            earlier=self._earlier.get(key, _Use()).mean(),
        )
        held = self._ledger.reserve([_SCOPE], estimate)
        if isinstance(held, SpendRefusal):
            raise _Refused(self._failure(held, number, adapter, request))
        await run.alog(
            f"budget: attempt {number} on {adapter.name} {request.model} estimated "
            f"${estimate.usd:.6f}, {estimate.tokens} tokens "
            f"(spent so far ${self.spent.usd:.6f}, {self.spent.tokens} tokens)"
        )
        # Through the gateway, each request of the attempt is held against the budget; a
        # shared gateway is given the run's budget as its allowance.
        requests = (_RunRequests if _holds_allowances() else RequestSpend)(
            totals=lambda: [self._ledger.totals(_SCOPE)],
            held=held.estimate,
            adapter=adapter,
            model=request.model,
            config=request.config,
            describe=lambda refusal: self._failure(refusal, number, adapter, request).message,
        )
        before = run.usage
        try:
            with use_request_budget(requests):
                return await make()
        except AdapterError:
            refused = requests.refusal
            if refused is None:
                raise
        finally:
            self._charge(held, adapter, request, _used(before, run.usage))
        raise _Refused(self._failure(refused, number, adapter, request, stopped=True))

    def _charge(
        self, held: SpendHold, adapter: Adapter, request: AgentRequest, used: Usage
    ) -> None:
        charged = charge_spend(
            adapter, model=request.model, config=request.config, usage=used, estimate=held.estimate
        )
        self._ledger.settle(held, charged)
        if used.tokens_total:
            use = self._earlier.setdefault((adapter.name, request.model), _Use())
            use.count += 1
            use.prompt_tokens += used.prompt_tokens
            use.output_tokens += used.output_tokens
            use.usd += charged.usd

    def _failure(
        self,
        refusal: SpendRefusal,
        number: int,
        adapter: Adapter,
        request: AgentRequest,
        *,
        stopped: bool = False,
    ) -> Failure:
        """Why attempt ``number`` was not started or, ``stopped``, was stopped at a request
        its run's budget had no room for."""
        dimension = refusal.dimension
        budget = self.budget or SpendBudget()
        limit = f"${budget.usd:g}" if dimension == "usd" else f"{budget.tokens} tokens"
        what = "USD" if dimension == "usd" else "token"
        room = "the next request of attempt" if stopped else "attempt"
        end = "the agent was stopped" if stopped else "the attempt was not started"
        return Failure(
            code=BUDGET_CODE,
            message=(
                f"the run's {what} budget {limit} has no room for {room} {number} on "
                f"{adapter.name} {request.model} ({_describe(refusal.totals.spent, dimension)} "
                f"spent, estimate {_describe(refusal.estimate, dimension)}); {end}"
            ),
            details={
                "source": "budget",
                "attempt": number,
                "dimension": dimension,
                "budget": budget.to_dict(),
                "spent": refusal.totals.spent.to_dict(),
                "estimate": refusal.estimate.to_dict(),
            },
        )

    def bounded(
        self, body: Callable[[Capture], Awaitable[AgentResult]]
    ) -> Callable[[Capture], Awaitable[AgentResult]]:
        """``body`` ending in the run's ``AdapterError`` (and exit code 5) when an attempt
        did not fit the budget."""
        if not self.active:
            return body

        async def run_body(run: Capture) -> AgentResult:
            try:
                return await body(run)
            except _Refused as refused:
                await run.alog(f"budget: {refused.failure.message}")
                run.record_exit(BUDGET_EXIT_CODE)
                raise AdapterError(refused.failure) from None

        return run_body
