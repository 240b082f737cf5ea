"""Runs opened over HTTP, for a gateway shared by several processes (``backstay gateway
--agent-runs``, used with ``backstay run|batch|resume --gateway URL``): the gateway's token
(``TOKEN_HEADER``) is required on each of these, and a gateway without one offers none.

| method | path | |
|---|---|---|
| ``GET`` | ``/_backstay/runs`` | ``{"deadline_s": …, "live": N, "budgets": …, "runs": …}`` |
| ``POST`` | ``/_backstay/runs`` | a ``RunTicket``'s fields, ``budget`` → ``{"token": …}`` |
| ``GET`` | ``/_backstay/runs/{token}`` | ``RunTally``, ``allowance`` (its state; 404: not live) |
| ``PUT`` | ``/_backstay/runs/{token}/allowance`` | ``allowance``, ``granted`` → its state |
| ``DELETE`` | ``/_backstay/runs/{token}`` | revoke it → ``RunTally``, ``refusal`` (404: not live) |

``RemoteRunGateway`` is the client the agent adapters use (the same ``open_run`` /
``close_run`` as ``LocalRunGateway``).

A run of a task with a spending budget carries its budget scopes in ``budget`` (what the
task's ``AttemptBudget.shared`` says: no key, no prompt). How the gateway holds them is in
its ``GET`` answer's ``budgets``:

* ``"ledger"`` (``backstay gateway --agent-runs --store …``): each of the run's requests
  is held against that store's spend ledger (``backstay.engine.shared_budget``), as an
  in-process gateway holds them against the engine's;
* ``"allowance"`` (no ``--store``): the client adds the run's allowance to ``budget``
  (``AttemptBudget.allowance``: the scopes' totals at the attempt's start and ``granted``,
  the share of their room the engine reserved for the attempt;
  ``backstay.engine.run_allowance``), and the gateway holds each request against it, the
  run's spend kept in memory. While the run goes on, the client reads the run's state
  (``GET``) and raises its grant (``PUT``: idempotent, never lowered) once the engine has
  reserved more (``backstay.gateway.run_topups``); a ``PUT`` to a run without an
  allowance is a 409;
* ``null`` (a gateway that makes no budgets): runs are not asked per request.

A single ``backstay run``'s budget (its ``budget``'s ``stop`` ``ended``) is held per request
when ``runs`` says how: ``"allowance"`` as above, or ``"ledger"`` (``--store``: the run gets
a scope of its own in the gateway's ledger beside the store's, what its earlier attempts
spent written there; the client adds the run's allowance to ``budget`` for that figure;
``backstay.cli._gateway_spend``). ``RemoteRunGateway.holds_runs`` tells whether it is.

Either way a request with no room is refused with a 400 naming the budget. The first
refusal comes back with the run's tally (``refusal``: the scope's totals, the estimate,
the dimension), and the client hands it to the task's budget, so the task is paused as
with an in-process gateway.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from backstay.errors import ConfigError
from backstay.gateway.run_topups import TOP_UP_INTERVAL_S, AllowanceKeeper
from backstay.gateway.runs import OpensRuns, RequestBudget, RunTally, RunTicket, RunTokens
from backstay.gateway.settings import TOKEN_HEADER, GatewaySettings
from backstay.policy.spend import (
    ScopeKind,
    ScopeTotals,
    Spend,
    SpendBudget,
    SpendRefusal,
    SpendScope,
)
from backstay.redact import redact, register_secret

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["ALLOWANCE", "LEDGER", "RUNS_PATH", "RemoteRunGateway", "add_run_routes"]

RUNS_PATH: Final = "/_backstay/runs"
_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(RunTicket))
# The opening request's budget scopes, and the closing answer's refusal.
_BUDGET: Final = "budget"
_REFUSAL: Final = "refusal"
# How a gateway holds runs' budgets (its ``GET`` answer's ``budgets``), and the run's
# allowance in ``budget`` when it has no spend ledger.
_BUDGETS: Final = "budgets"
_RUNS: Final = "runs"
LEDGER: Final = "ledger"
ALLOWANCE: Final = "allowance"
# Seconds a call to a shared gateway may take (it is on loopback or a local network).
_CALL_TIMEOUT_S: Final = 10.0
# A run's state in a ``GET`` of it, and the path of its grant.
_STATE: Final = "allowance"
_GRANT_PATH: Final = "/allowance"


def add_run_routes(app: web.Application, runs: RunTokens, settings: GatewaySettings) -> None:
    """Serve ``RUNS_PATH`` on ``app`` (before its catch-all route)."""
    from aiohttp import web  # noqa: PLC0415 - loaded with the server

    def refused(request: web.Request) -> web.Response | None:
        token = settings.token
        given = request.headers.get(TOKEN_HEADER, "")
        if token is None:
            return web.json_response(
                {"error": "this gateway has no token: it opens no runs over HTTP"}, status=403
            )
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.json_response({"error": f"missing or wrong {TOKEN_HEADER}"}, status=401)
        return None

    budgets = runs.budgets
    holds = None if budgets is None else LEDGER if budgets.keeps_ledger else ALLOWANCE
    # How a single run's budget is held: as any run's without a ledger; in one only when
    # the ledger holds runs of their own.
    held_runs = holds if holds != LEDGER or getattr(budgets, "holds_runs", False) else None

    async def info(request: web.Request) -> web.StreamResponse:
        deadline = settings.policy.deadline_s
        found = {"deadline_s": deadline, "live": len(runs), _BUDGETS: holds, _RUNS: held_runs}
        return refused(request) or web.json_response(found)

    async def open_one(request: web.Request) -> web.StreamResponse:
        no = refused(request)
        if no is not None:
            return no
        try:
            data = json.loads(await request.read())
            if not isinstance(data, dict) or set(data) - _FIELDS - {_BUDGET}:
                raise ConfigError(
                    f"must be an object of {', '.join(sorted(_FIELDS | {_BUDGET}))}", where="body"
                )
            scopes = data.pop(_BUDGET, None)
            ticket = RunTicket(**data)
            register_secret(ticket.key)
            budget = None if scopes is None or runs.budgets is None else runs.budgets(scopes)
        except (ValueError, TypeError) as err:
            return web.json_response({"error": redact(str(err))}, status=400)
        return web.json_response({"token": runs.open(ticket, budget)}, status=201)

    async def close_one(request: web.Request) -> web.StreamResponse:
        no = refused(request)
        if no is not None:
            return no
        token = request.match_info["token"]
        refusal = getattr(runs.budget(token), "refusal", None)
        tally = runs.close(token)
        if tally is None:
            return web.json_response({"error": "no such live run token"}, status=404)
        answer: dict[str, Any] = dataclasses.asdict(tally)
        if isinstance(refusal, SpendRefusal):
            answer[_REFUSAL] = _refusal_json(refusal)
        return web.json_response(answer)

    app.router.add_get(RUNS_PATH, info)
    app.router.add_post(RUNS_PATH, open_one)
    _add_allowance_routes(app, runs, refused)
    app.router.add_delete(RUNS_PATH + "/{token}", close_one)


def _add_allowance_routes(
    app: web.Application,
    runs: RunTokens,
    refused: Callable[[web.Request], web.Response | None],
) -> None:
    """Serve a run's state (``GET``) and the raise of its grant (``PUT``)."""
    from aiohttp import web  # noqa: PLC0415 - loaded with the server

    async def show_one(request: web.Request) -> web.StreamResponse:
        no = refused(request)
        if no is not None:
            return no
        token = request.match_info["token"]
        budget = runs.budget(token)
        tally = runs.tally(token)
        if tally is None:
            return web.json_response({"error": "no such live run token"}, status=404)
        answer: dict[str, Any] = dataclasses.asdict(tally)
        state = getattr(budget, "state", None)
        if callable(state):
            answer[_STATE] = state()
        return web.json_response(answer)

    async def raise_one(request: web.Request) -> web.StreamResponse:
        no = refused(request)
        if no is not None:
            return no
        token = request.match_info["token"]
        budget = runs.budget(token)
        if runs.tally(token) is None:
            return web.json_response({"error": "no such live run token"}, status=404)
        raise_from = getattr(budget, "raise_from", None)
        if not callable(raise_from):
            return web.json_response({"error": "this run holds no allowance"}, status=409)
        try:
            state = raise_from(json.loads(await request.read()))
        except (ValueError, TypeError) as err:
            return web.json_response({"error": redact(str(err))}, status=400)
        return web.json_response(state)

    app.router.add_get(RUNS_PATH + "/{token}", show_one)
    app.router.add_put(RUNS_PATH + "/{token}" + _GRANT_PATH, raise_one)


def _refusal_json(refusal: SpendRefusal) -> dict[str, Any]:
    return {
        "totals": refusal.totals.to_dict(),
        "estimate": refusal.estimate.to_dict(),
        "dimension": refusal.dimension,
    }


def _spend(data: Any) -> Spend:
    return Spend(usd=float(data.get("usd", 0.0)), tokens=int(data.get("tokens", 0)))


def _refusal(data: Any) -> SpendRefusal | None:
    """The ``SpendRefusal`` of a closing answer's ``refusal`` (``None``: none, or not one)."""
    try:
        totals = data["totals"]
        scope = SpendScope(kind=ScopeKind(totals["scope"]), name=str(totals["name"]))
        return SpendRefusal(
            totals=ScopeTotals(
                scope=scope,
                budget=SpendBudget.from_dict(totals["budget"]),
                spent=_spend(totals["spent"]),
                reserved=_spend(totals["reserved"]),
            ),
            estimate=_spend(data["estimate"]),
            dimension=str(data["dimension"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


class RemoteRunGateway(OpensRuns):
    """A shared gateway at ``url`` opening runs for this process, authorised by ``token``
    (its ``--token-env``). Constructing it asks the gateway once: a gateway that cannot be
    reached, refuses the token or opens no runs is a ``ConfigError`` naming ``where``.

    To a gateway that holds runs to allowances, each run's first grant is a share of the
    room of its budgets shared with other tasks, divided by ``parallel`` (the attempts of
    this process that can run at once), raised every ``top_up_s`` while it is due.

    Its calls are blocking HTTP (``calls_block``): an agent attempt makes ``open_run`` and
    ``close_run`` on a worker thread (``backstay.adapters.gateway_wiring.aopen_run``)."""

    # Each call waits on the gateway's answer (up to ``_CALL_TIMEOUT_S``).
    calls_block: Final = True

    def __init__(
        self,
        url: str,
        token: str,
        *,
        where: str = "--gateway",
        parallel: int = 1,
        top_up_s: float = TOP_UP_INTERVAL_S,
    ) -> None:
        if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
            raise ConfigError(f"must be at least 1, got {parallel!r}", where="parallel")
        self._parallel = parallel
        self._top_up_s = top_up_s
        # The threads keeping the grants of the runs opened with an allowance, by token.
        self._keepers: dict[str, AllowanceKeeper] = {}
        self._url = url.rstrip("/")
        self._token = token
        self._where = where
        # The budgets of the runs opened with one, by token, until they are closed.
        self._budgets: dict[str, RequestBudget] = {}
        found = self._call("GET", RUNS_PATH)
        deadline = found.get("deadline_s") if isinstance(found, dict) else None
        self._deadline_s = float(deadline) if isinstance(deadline, int | float) else 900.0
        # A gateway without a spend ledger holds each run to the allowance it is given.
        self._allowances = isinstance(found, dict) and found.get(_BUDGETS) == ALLOWANCE
        # One with a ledger may hold a single run's budget there.
        self._run_ledger = isinstance(found, dict) and found.get(_RUNS) == LEDGER

    @property
    def holds_allowances(self) -> bool:
        """Whether the gateway holds each run to the allowance it is given (it keeps no
        spend ledger: ``"allowance"``)."""
        return self._allowances

    @property
    def holds_runs(self) -> bool:
        """Whether the gateway holds a single run's budget (``backstay run``) per request:
        to its allowance, or in the gateway's own ledger (``"runs"`` ``"ledger"``)."""
        return self._allowances or self._run_ledger

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - an http(s) URL checked by the caller
            self._url + path,
            data=data,
            method=method,
            headers={TOKEN_HEADER: self._token, "content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=_CALL_TIMEOUT_S) as answer:  # noqa: S310
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as err:
            if method in ("DELETE", "GET", "PUT") and err.code == 404 and path != RUNS_PATH:
                return None
            detail = redact(err.read().decode("utf-8", "replace")[:200])
            raise ConfigError(
                f"the gateway at {self._url} answered {err.code}: {detail}", where=self._where
            ) from None
        except (OSError, ValueError) as err:
            raise ConfigError(
                f"cannot reach the gateway at {self._url}: {err}", where=self._where
            ) from None

    def open_ticket(self, ticket: RunTicket, budget: RequestBudget | None = None) -> str:
        # The budget's scopes go with the run (``AttemptBudget.shared``), never the budget;
        # to a gateway without a spend ledger, with the allowance reserved for the run.
        body = dataclasses.asdict(ticket)
        shared = getattr(budget, "shared", None)
        given = None
        if callable(shared):
            body[_BUDGET] = shared()
            allowance = getattr(budget, "allowance", None)
            # A single run held in the gateway's ledger sends its allowance for what its
            # earlier attempts spent.
            run = self._run_ledger and body[_BUDGET].get("stop") == "ended"
            if (self._allowances or run) and callable(allowance):
                given = allowance(self._parallel)
            if given is not None:
                body[_BUDGET].update(given)
        answer = self._call("POST", RUNS_PATH, body)
        token = answer.get("token") if isinstance(answer, dict) else None
        if not isinstance(token, str):
            raise ConfigError(f"the gateway at {self._url} gave no run token", where=self._where)
        if budget is not None and callable(shared):
            self._budgets[token] = budget
        if given is not None and callable(getattr(budget, "top_up", None)):
            self._keep(token, budget, ticket)
        return token

    def _keep(self, token: str, budget: Any, ticket: RunTicket) -> None:
        """Raise the grant of run ``token`` while it goes on."""
        keeper = AllowanceKeeper(
            budget=budget,
            state=lambda: self.run_state(token),
            send=lambda raised: self._call("PUT", f"{RUNS_PATH}/{token}{_GRANT_PATH}", raised),
            task=ticket.task,
            attempt=ticket.attempt,
            interval_s=self._top_up_s,
        )
        self._keepers[token] = keeper
        keeper.start()

    def run_state(self, token: str) -> dict[str, Any] | None:
        """The state of run ``token``'s allowance at the gateway (``None``: it holds none,
        or the run is not live)."""
        answer = self._call("GET", f"{RUNS_PATH}/{token}")
        state = answer.get(_STATE) if isinstance(answer, dict) else None
        return state if isinstance(state, dict) else None

    def close_run(self, token: str) -> RunTally | None:
        keeper = self._keepers.pop(token, None)
        if keeper is not None:
            keeper.stop()  # no raise once the run is closed and its attempt settled
        budget = self._budgets.pop(token, None)
        answer = self._call("DELETE", f"{RUNS_PATH}/{token}")
        if not isinstance(answer, dict):
            return None
        refusal = _refusal(answer.get(_REFUSAL)) if _REFUSAL in answer else None
        if refusal is not None and getattr(budget, "refusal", False) is None:
            # The shared gateway refused a request: the task stops at its budget.
            budget.refusal = refusal  # type: ignore[union-attr]
        known = {f.name for f in dataclasses.fields(RunTally)}
        return RunTally(**{k: v for k, v in answer.items() if k in known and isinstance(v, int)})
