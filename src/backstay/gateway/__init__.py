"""``backstay gateway``: an HTTP reverse proxy speaking the providers' own wire formats
(Anthropic Messages, OpenAI Chat Completions and Responses, Gemini generateContent), so
that any client pointed at it gets backstay's classification, retry policy, Retry-After
handling, circuit breakers and Idempotency-Key on every request. See docs/gateway.md.

* ``settings``: ``GatewaySettings`` and ``Upstreams`` (frozen), ``GATEWAY_POLICY``;
* ``routes``: which provider and model a request is for (pure);
* ``headers``: what crosses upstream and back, the idempotency key (pure);
* ``attempt``: one upstream attempt and what decides it failed;
* ``proxy``: the handler, over ``backstay.call.acall``; ``probe``: a request whose own
  failures open its circuit waits for the probe, or is told when it is;
* ``wire_errors``: the errors the gateway answers itself, in each provider's format;
* ``events``: ``RequestRetried``, ``RequestFellBack``;
* ``repair``: a known defect of a client's body repaired before it is forwarded (Gemini
  CLI's resumed session answering a tool call twice), ``RequestRepaired``;
* ``spending``: a spending budget held request by request (``GatewayBudget``,
  ``GatewaySpending`` over ``MemoryRows`` or a store's ledger), ``RequestRefused``;
* ``runs``: run tokens (``RunTokens``, ``RunTicket``, ``RunTally``): each agent attempt's
  own API key, mapped to its run and to the real key; ``run_requests``, ``usage`` and
  ``spans``: what the proxy does with a run's requests;
* ``server``: ``Gateway``, started and stopped like the fake provider; ``http1``: its own
  HTTP/1.1 server protocol, which hands what it does not read to aiohttp's server
  (``web_replies``); ``exchange``: the request and answers the proxy is given and gives
  back, whichever server carries them; ``upstream``: an attempt's ``POST`` on the
  connections of the gateway's aiohttp session.

Needs aiohttp (``backstay[gateway]``), imported only when a gateway starts.
"""

from __future__ import annotations

from backstay.gateway.events import RequestFellBack, RequestRetried
from backstay.gateway.routes import Route, route
from backstay.gateway.runs import RunTally, RunTicket, RunTokens
from backstay.gateway.server import Gateway
from backstay.gateway.settings import (
    DEFAULT_UPSTREAMS,
    GATEWAY_POLICY,
    TOKEN_HEADER,
    GatewaySettings,
    Upstreams,
)
from backstay.gateway.spending import (
    BudgetWindow,
    GatewayBudget,
    GatewaySpending,
    MemoryRows,
    RequestRefused,
)

__all__ = [
    "DEFAULT_UPSTREAMS",
    "GATEWAY_POLICY",
    "TOKEN_HEADER",
    "BudgetWindow",
    "Gateway",
    "GatewayBudget",
    "GatewaySettings",
    "GatewaySpending",
    "MemoryRows",
    "RequestFellBack",
    "RequestRefused",
    "RequestRetried",
    "Route",
    "RunTally",
    "RunTicket",
    "RunTokens",
    "Upstreams",
    "route",
]
