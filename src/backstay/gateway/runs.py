"""Run tokens: each agent-CLI attempt sent through the gateway gets a token of its own as
its API key. The gateway maps the token to the run (``RunTicket``: task, attempt, trace
context, the model its fallback names) and to the real key and upstream, so that the agent
process never holds the real key; it counts what the provider answered per token
(``RunTally``); and the token is revoked when the attempt ends.

``RunTokens`` is the table, shared by the gateway's thread and the threads that open and
close runs (a lock guards it). A gateway given one (``Gateway(runs=...)``) admits only
requests carrying a live token: any other key is answered 401 in its provider's format.

A run opened with a ``RequestBudget`` (its task's spending budget, from the engine) has
each request asked before it is forwarded: ``admit`` holds the request's estimated tokens
or refuses (the gateway answers a 400 in the provider's format with the refusal, so the
CLI stops); every answer's usage is ``charge``-d, and the request's hold ``release``-d
when it is done. An in-process gateway (``LocalRunGateway``) is handed the engine's; a
shared one (``backstay.gateway.run_admin``) makes one with ``RunTokens.budgets`` from the
budget scopes a run's opening request carries: over the spend ledger of its own store, or,
without one, over the allowance the run carries (the share of the room the engine reserved
for it, raised while the run goes on: ``HoldsAllowance``). A request short of such a grant
waits briefly for it to be raised (``admit_request``).
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol

from backstay.errors import ConfigError
from backstay.gateway.usage import TokenUsage

__all__ = [
    "TOKEN_PREFIX",
    "HoldsAllowance",
    "LocalRunGateway",
    "OpensRuns",
    "RequestBudget",
    "RunBudgets",
    "RunTally",
    "RunTicket",
    "RunTokens",
    "admit_request",
]

# A run token says what it is; a provider shown one answers 401 (it is no key of theirs).
TOKEN_PREFIX: Final = "bsgw-run-"  # noqa: S105 - a prefix, not a secret
PROVIDERS: Final = frozenset({"anthropic", "openai", "gemini"})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunTicket:
    """What one token stands for: the ``provider`` it may call, its real ``key`` (never
    shown: not in ``repr``), the ``upstream`` base URL (``None``: the gateway's own for
    the provider), the ``task`` and ``attempt`` its requests are attributed to, the
    attempt's ``traceparent`` (each request's span is a child of it), the ``model`` the
    run asked for and ``fallback_model``, another model of the same provider a request
    moves to while the circuit of its own is open."""

    provider: str
    key: str = dataclasses.field(repr=False)
    upstream: str | None = None
    task: str | None = None
    attempt: str | None = None
    traceparent: str | None = None
    model: str | None = None
    fallback_model: str | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ConfigError(
                f"must be one of {', '.join(sorted(PROVIDERS))}, got {self.provider!r}",
                where="provider",
            )
        if not isinstance(self.key, str) or not self.key:
            raise ConfigError("must be the provider's API key, got nothing", where="key")


@dataclasses.dataclass(slots=True)
class RunTally:
    """What the provider answered one token's requests: ``requests`` it answered (refused
    ones included: any HTTP status), ``refused`` those with a status of 400 or more, the
    tokens its answers reported, and ``unanswered`` requests that got no answer at all
    (refused connections, timeouts)."""

    requests: int = 0
    refused: int = 0
    unanswered: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def copy(self) -> RunTally:
        return dataclasses.replace(self)


class RequestBudget(Protocol):
    """A run's spending budget, asked for each of its requests (called on the gateway's
    thread): ``admit`` the request's estimated ``tokens`` (held until ``release``) or
    refuse it with a message naming the budget; ``charge`` what an answer used."""

    def admit(self, tokens: float) -> str | None: ...
    def release(self, tokens: float) -> None: ...
    def charge(self, usage: TokenUsage) -> None: ...


class HoldsAllowance(Protocol):
    """A ``RequestBudget`` holding a run to the allowance it carries
    (``backstay.engine.allowance_spend.AllowanceSpend``): its ``state`` as JSON (its grant,
    what it used and holds in flight, what a waiting request wants), and ``raise_from``
    a raise's JSON (``ConfigError`` when wrong), giving the state after it."""

    def state(self) -> dict[str, Any]: ...
    def raise_from(self, data: Mapping[str, Any]) -> dict[str, Any]: ...


async def admit_request(budget: RequestBudget, tokens: float) -> str | None:
    """``budget.admit(tokens)``; for a budget that can wait for its grant to be raised
    (``admit_waiting``), that (bounded)."""
    waiting = getattr(budget, "admit_waiting", None)
    if waiting is None:
        return budget.admit(tokens)
    found = await waiting(tokens)
    return found if isinstance(found, str) else None


class RunBudgets(Protocol):
    """What makes a run's ``RequestBudget`` from the budget object its opening request
    carries over HTTP (``None``: the run is not asked per request); ``keeps_ledger``:
    whether it holds requests against a spend ledger of its own, else against the
    allowance a run carries (``backstay.engine.shared_budget.SharedBudgets``)."""

    @property
    def keeps_ledger(self) -> bool: ...
    def __call__(self, data: Mapping[str, Any]) -> RequestBudget | None: ...


class RunTokens:
    """The live tokens: ``open`` one per attempt, ``close`` it when the attempt ends (its
    tally is returned), ``find`` the ticket of any of a request's keys. ``budgets``: what
    makes a run's ``RequestBudget`` from the budget scopes sent with it over HTTP (``None``:
    runs opened over HTTP are not asked per request)."""

    def __init__(self, budgets: RunBudgets | None = None) -> None:
        self.budgets = budgets
        self._lock = threading.Lock()
        self._tickets: dict[str, RunTicket] = {}
        self._tallies: dict[str, RunTally] = {}
        self._budgets: dict[str, RequestBudget] = {}

    def open(self, ticket: RunTicket, budget: RequestBudget | None = None) -> str:
        """A new token for ``ticket``, live until ``close``; its requests asked of
        ``budget`` (if any)."""
        if not isinstance(ticket, RunTicket):
            raise ConfigError(f"must be a RunTicket, got {ticket!r}", where="ticket")
        token = TOKEN_PREFIX + secrets.token_urlsafe(24)
        with self._lock:
            self._tickets[token] = ticket
            self._tallies[token] = RunTally()
            if budget is not None:
                self._budgets[token] = budget
        return token

    def close(self, token: str) -> RunTally | None:
        """Revoke ``token``; what its requests were answered (``None``: not live)."""
        with self._lock:
            self._tickets.pop(token, None)
            self._budgets.pop(token, None)
            return self._tallies.pop(token, None)

    def budget(self, token: str) -> RequestBudget | None:
        """The spending budget ``token``'s requests are asked of, if any."""
        if not self._budgets:
            return None
        with self._lock:
            return self._budgets.get(token)

    def find(self, keys: Iterable[str]) -> tuple[str, RunTicket] | None:
        """The live token among ``keys`` (a request's credentials) and its ticket."""
        for key in keys:
            if key.startswith(TOKEN_PREFIX):
                with self._lock:
                    ticket = self._tickets.get(key)
                if ticket is not None:
                    return key, ticket
        return None

    def tally(self, token: str) -> RunTally | None:
        """A copy of ``token``'s tally so far (``None``: not live)."""
        with self._lock:
            found = self._tallies.get(token)
            return None if found is None else found.copy()

    def answered(self, token: str, status: int | None) -> None:
        """Count one upstream attempt of ``token``'s: answered with ``status``, or not
        answered at all (``None``)."""
        with self._lock:
            tally = self._tallies.get(token)
            if tally is None:
                return
            if status is None:
                tally.unanswered += 1
            else:
                tally.requests += 1
                tally.refused += status >= 400

    def used(self, token: str, usage: TokenUsage) -> None:
        """Add the tokens an answer to ``token`` reported (charged to its budget too)."""
        with self._lock:
            tally = self._tallies.get(token)
            if tally is None:
                return
            tally.input_tokens += usage.input_tokens
            tally.output_tokens += usage.output_tokens
            tally.cache_read_tokens += usage.cache_read_tokens
            tally.cache_write_tokens += usage.cache_write_tokens
            budget = self._budgets.get(token)
        if budget is not None:
            budget.charge(usage)

    def __len__(self) -> int:
        with self._lock:
            return len(self._tickets)


class OpensRuns:
    """What every gateway the agent adapters see has in common
    (``backstay.adapters.gateway_wiring.RunGateway``): ``url``, ``deadline_s``, and
    ``open_run``, which makes the run's ``RunTicket`` and hands it to ``open_ticket``."""

    _url: str
    _deadline_s: float

    @property
    def url(self) -> str:
        return self._url

    @property
    def deadline_s(self) -> float:
        return self._deadline_s

    def open_run(
        self,
        *,
        provider: str,
        key: str,
        upstream: str | None,
        task: str | None,
        attempt: str | None,
        traceparent: str | None,
        model: str | None,
        fallback_model: str | None = None,
        budget: RequestBudget | None = None,
    ) -> str:
        """A token for the run; its requests asked of ``budget`` (an in-process gateway
        only: a shared one is not handed it)."""
        ticket = RunTicket(
            provider=provider,
            key=key,
            upstream=upstream,
            task=task,
            attempt=attempt,
            traceparent=traceparent,
            model=model,
            fallback_model=fallback_model,
        )
        return self.open_ticket(ticket, budget)

    def open_ticket(self, ticket: RunTicket, budget: RequestBudget | None = None) -> str:
        """A new token standing for ``ticket`` (its requests asked of ``budget``)."""
        raise NotImplementedError


class LocalRunGateway(OpensRuns):
    """An in-process ``Gateway`` serving run tokens, as the agent adapters see a gateway
    (``backstay.adapters.gateway_wiring.RunGateway``): ``url``, ``deadline_s``,
    ``open_run`` and ``close_run``."""

    def __init__(self, url: str, runs: RunTokens, deadline_s: float) -> None:
        self._url = url
        self.runs = runs
        self._deadline_s = deadline_s

    def open_ticket(self, ticket: RunTicket, budget: RequestBudget | None = None) -> str:
        return self.runs.open(ticket, budget)

    def close_run(self, token: str) -> RunTally | None:
        return self.runs.close(token)
