"""Agent runs through the gateway: how one attempt of an agent CLI is pointed at a running
backstay gateway, with a run token of its own in place of the real key.

While a gateway is in use (``use_gateway``, set by ``backstay run`` / ``batch`` /
``resume``), ``BaseAdapter.dispatch`` opens a run for each attempt of an adapter that
declares its ``gateway_wiring``: the gateway is told the real key (the first of the
wiring's key variables set in the request's environment), the real upstream (the
adapter's ``base_url`` setting, else the provider's base-URL variable, else the
provider's default) and the run (task, attempt, trace context), and answers with a
token. The attempt's request then carries the token in place of the key, the gateway's
URL as its base URL (the provider's variable removed, the ``base_url`` setting set: Codex
and opencode write it into their own configuration as before), and a request timeout
above the gateway's deadline where the CLI has a setting for it. When the attempt ends
the run is closed (the token revoked), and the attempt's usage takes the gateway's
counts: every request the provider answered, refused ones included, and the tokens of
every answer, the same for every CLI.

A task or run with fallbacks sets the model its attempt's requests move to while the
circuit of their own model is open (``use_fallback_model``, around the dispatch; the engine's
driver and ``backstay.fallback.harness``): ``gateway_fallback`` names it, the first later
candidate of the chain on the same provider and key with another model
(``backstay.adapters.gateway_models``, re-exported here). The run's ticket
carries it (``RunTicket.fallback_model``).

A task with a spending budget sets the object its attempt's requests are asked of
(``use_request_budget``, around the dispatch; ``backstay.engine.request_budget``): an
in-process gateway holds each request's estimate against it before forwarding and refuses
one it has no room for; a shared gateway is not handed it.

The gateway is reached through the ``RunGateway`` protocol (``backstay.gateway`` sits on
the same floor as the adapters and is not imported here): ``backstay.gateway.runs``'s
``LocalRunGateway`` for an in-process gateway, ``RemoteRunGateway`` for a shared one.

An attempt opens and closes its run with ``aopen_run`` and ``OpenedRun.aclose`` on its
event loop. A gateway whose calls wait on the network says so (``calls_block``, a shared
gateway's HTTP calls): they are then made on a worker thread (``backstay.adapters.
_run_calls``), so that a slow answer holds only its attempt, not the others sharing the
loop; their errors and timeouts are the gateway's own, as in the
synchronous ``open_run`` and ``OpenedRun.close``. An attempt cancelled while its run is
being opened closes the run once the gateway has answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, Final, Protocol

from backstay.adapters._run_calls import blocks, close_late, off_loop, submit
from backstay.adapters.contract import AgentRequest
from backstay.adapters.gateway_models import ChainEntry, gateway_fallback, wired_provider
from backstay.adapters.usage import Usage
from backstay.events.tracecontext import current as current_trace

__all__ = [
    "GATEWAY_TIMEOUT_MARGIN_S",
    "ChainEntry",
    "GatewayWiring",
    "OpenedRun",
    "RunCounts",
    "RunGateway",
    "aopen_run",
    "current_fallback_model",
    "current_gateway",
    "current_request_budget",
    "gateway_fallback",
    "open_run",
    "use_fallback_model",
    "use_gateway",
    "use_request_budget",
    "wired_provider",
]

# A CLI's own request timeout is the gateway's deadline plus this: the gateway answers
# (or gives up) first.
GATEWAY_TIMEOUT_MARGIN_S: Final = 60.0


class RunCounts(Protocol):
    """What the gateway counted for one run token."""

    @property
    def requests(self) -> int: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


class RunGateway(Protocol):
    """A running gateway that hands out run tokens. One whose ``open_run`` and
    ``close_run`` wait on the network has a true ``calls_block`` (read with ``getattr``:
    absent is false): ``aopen_run`` and ``OpenedRun.aclose`` make them on a worker thread."""

    @property
    def url(self) -> str:
        """Its base URL, without a path."""
        ...

    @property
    def deadline_s(self) -> float:
        """The longest a request may take in it, waits included."""
        ...

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
        budget: Any = None,
    ) -> str:
        """A new token standing for the run and its real ``key``; its requests move to
        ``fallback_model`` while the circuit of their own model is open, and are asked of
        ``budget`` (``backstay.gateway.runs.RequestBudget``) when given."""
        ...

    def close_run(self, token: str) -> RunCounts | None:
        """Revoke ``token``; what the gateway counted for it."""
        ...


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GatewayWiring:
    """How an agent CLI adapter points its CLI at a gateway.

    * ``provider``: the wire format its CLI speaks (``anthropic``, ``openai``, ``gemini``);
    * ``key_env``: the variables that may hold the key, in order (the first set is used,
      and all are replaced by the one holding the token); ``key_env_setting``: a setting
      naming the variable instead (Codex's and opencode's ``api_key_env``);
    * ``base_url_env``: the provider's base-URL variable; ``url_path``: what the CLI's
      base URL has after the host (``/v1`` for the OpenAI ones), added to the gateway's
      URL and taken off a user's base URL to make the upstream;
    * ``timeout_setting``: the setting holding the CLI's own request or stream timeout, in
      seconds, raised above the gateway's deadline unless the user set it;
    * ``model_prefixes``, ``model_names``: when either is given, only a model named with
      one of the prefixes, or one of the names exactly, goes through the gateway (Aider's
      ``openai/…``, its alias ``4o``; any other goes straight to its provider);
    * ``other_base_url_env``: more variables naming the base URL, read after
      ``base_url_env`` and removed as it is; ``strip_env``: variables the attempt loses
      (other providers' keys a CLI would not use for this model);
    * ``alternatives``: the wirings of a CLI that speaks several providers' formats by the
      model's prefix (Aider's ``anthropic/…``, ``gemini/…``): an attempt takes the first
      of this wiring and its alternatives whose ``model_prefixes`` or ``model_names`` name
      its model.
    """

    provider: str
    key_env: tuple[str, ...]
    base_url_env: str
    key_env_setting: str | None = None
    url_path: str = ""
    timeout_setting: str | None = None
    model_prefixes: tuple[str, ...] = ()
    model_names: tuple[str, ...] = ()
    other_base_url_env: tuple[str, ...] = ()
    strip_env: tuple[str, ...] = ()
    alternatives: tuple[GatewayWiring, ...] = ()


_CURRENT: contextvars.ContextVar[RunGateway | None] = contextvars.ContextVar(
    "backstay_run_gateway", default=None
)


def current_gateway() -> RunGateway | None:
    """The gateway agent runs go through now, if any."""
    return _CURRENT.get()


@contextlib.contextmanager
def use_gateway(gateway: RunGateway | None) -> Iterator[None]:
    """Send the agent-CLI attempts started in this context through ``gateway`` (``None``:
    straight to their providers)."""
    reset = _CURRENT.set(gateway)
    try:
        yield
    finally:
        _CURRENT.reset(reset)


_FALLBACK: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "backstay_run_fallback_model", default=None
)


def current_fallback_model() -> str | None:
    """The model the agent-CLI attempt started now falls back to at the gateway, if any."""
    return _FALLBACK.get()


@contextlib.contextmanager
def use_fallback_model(model: str | None) -> Iterator[None]:
    """Give the runs opened in this context ``model`` as their fallback model (``None``:
    none)."""
    reset = _FALLBACK.set(model)
    try:
        yield
    finally:
        _FALLBACK.reset(reset)


_BUDGET: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "backstay_run_request_budget", default=None
)


def current_request_budget() -> Any:
    """The spending budget the requests of the attempt started now are asked of, if any
    (a ``backstay.gateway.runs.RequestBudget``)."""
    return _BUDGET.get()


@contextlib.contextmanager
def use_request_budget(budget: Any) -> Iterator[None]:
    """Ask ``budget`` (a ``backstay.gateway.runs.RequestBudget``; ``None``: none) for each
    request of the runs opened in this context."""
    reset = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(reset)


@dataclasses.dataclass(slots=True)
class OpenedRun:
    """One attempt's run at the gateway: the ``request`` pointed at it, and its token."""

    request: AgentRequest
    token: str
    gateway: RunGateway
    counts: RunCounts | None = None
    closed: bool = False

    def close(self) -> RunCounts | None:
        """Revoke the token (once); the gateway's counts."""
        if not self.closed:
            self.closed = True
            self.counts = self.gateway.close_run(self.token)
        return self.counts

    async def aclose(self) -> RunCounts | None:
        """``close`` from an event loop: a gateway whose calls block is called on a worker
        thread (a cancelled wait leaves the call to finish there, the token revoked)."""
        if not self.closed:
            self.closed = True
            gateway, token = self.gateway, self.token
            self.counts = await off_loop(gateway, lambda: gateway.close_run(token))
        return self.counts

    def counted(self, usage: Usage) -> Usage:
        """``usage`` with the gateway's counts of requests and tokens (its cost kept)."""
        counts = self.close()
        if counts is None:
            return usage
        return dataclasses.replace(
            usage,
            api_calls=counts.requests,
            input_tokens=counts.input_tokens,
            output_tokens=counts.output_tokens,
            cache_read_tokens=counts.cache_read_tokens,
            cache_write_tokens=counts.cache_write_tokens,
        )


def _upstream(configured: object, wiring: GatewayWiring) -> str | None:
    """The user's base URL as the gateway's upstream (``url_path`` taken off)."""
    if not isinstance(configured, str) or not configured.strip():
        return None
    url = configured.strip().rstrip("/")
    if wiring.url_path and url.endswith(wiring.url_path):
        url = url[: -len(wiring.url_path)]
    return url


def _key_names(wiring: GatewayWiring, config: Mapping[str, Any]) -> tuple[str, ...]:
    if wiring.key_env_setting is not None:
        named = config.get(wiring.key_env_setting)
        if isinstance(named, str) and named:
            return (named,)
    return wiring.key_env


def _configured_base(wiring: GatewayWiring, request: AgentRequest) -> object:
    """The base URL the user set for ``request`` (its config's ``base_url``, else the
    provider's variables), or ``None``."""
    base_names = (wiring.base_url_env, *wiring.other_base_url_env)
    return request.config.get("base_url") or next(
        (request.env[name] for name in base_names if request.env.get(name, "").strip()), None
    )


def _names(wiring: GatewayWiring, model: str) -> bool:
    """Whether ``wiring`` takes a model named ``model`` (any, without prefixes or names)."""
    if not wiring.model_prefixes and not wiring.model_names:
        return True
    return model.startswith(wiring.model_prefixes) or model in wiring.model_names


def _chosen(wiring: GatewayWiring | None, request: AgentRequest) -> GatewayWiring | None:
    """Of ``wiring`` and its ``alternatives``, the one for ``request``'s model."""
    if wiring is None or not wiring.alternatives:
        return wiring
    return next(
        (one for one in (wiring, *wiring.alternatives) if _names(one, request.model)),
        wiring,
    )


def _held_key(wiring: GatewayWiring, request: AgentRequest) -> str | None:
    """The variable holding the key the gateway stands in for in an attempt of
    ``request``; ``None`` when the attempt goes straight to its provider: a model of
    another provider, no key (the adapter reports it), or a base URL the gateway cannot
    stand in for."""
    if not _names(wiring, request.model):
        return None
    held = next(
        (name for name in _key_names(wiring, request.config) if request.env.get(name)), None
    )
    if held is None:
        return None
    configured = _configured_base(wiring, request)
    if (
        wiring.url_path
        and isinstance(configured, str)
        and configured.strip()
        and not configured.strip().rstrip("/").endswith(wiring.url_path)
    ):
        return None
    return held


def through_gateway(wiring: GatewayWiring | None, request: AgentRequest) -> bool:
    """Whether an attempt of ``request`` would be sent through the current gateway (which
    then paces each of its requests), as ``open_run`` decides."""
    wiring = _chosen(wiring, request)
    return (
        current_gateway() is not None
        and wiring is not None
        and (_held_key(wiring, request) is not None)
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Opening:
    """What opening one attempt's run takes: the gateway, the wiring chosen for the
    request's model, the variable holding the key, and the gateway's ``open_run``
    arguments."""

    gateway: RunGateway
    wiring: GatewayWiring
    held: str
    arguments: Mapping[str, Any]


def _opening(
    wiring: GatewayWiring | None, request: AgentRequest, *, operation_id: str, attempt_id: str
) -> _Opening | None:
    gateway = current_gateway()
    wiring = _chosen(wiring, request)
    if gateway is None or wiring is None:
        return None
    held = _held_key(wiring, request)
    if held is None:
        return None
    trace = current_trace()
    budget = current_request_budget()
    arguments: dict[str, Any] = {
        "provider": wiring.provider,
        "key": request.env[held],
        "upstream": _upstream(_configured_base(wiring, request), wiring),
        "task": operation_id,
        "attempt": attempt_id,
        "traceparent": None if trace is None else trace.traceparent,
        "model": request.model,
        "fallback_model": current_fallback_model(),
    }
    if budget is not None:
        arguments["budget"] = budget
    return _Opening(gateway=gateway, wiring=wiring, held=held, arguments=arguments)


def open_run(
    wiring: GatewayWiring | None,
    request: AgentRequest,
    *,
    operation_id: str,
    attempt_id: str,
) -> OpenedRun | None:
    """The attempt of ``request`` pointed at the current gateway with a run token of its
    own; ``None`` (the request unchanged) without a gateway, a wiring or a key, or with a
    base URL the gateway cannot stand in for (sent straight there)."""
    opening = _opening(wiring, request, operation_id=operation_id, attempt_id=attempt_id)
    if opening is None:
        return None
    token = opening.gateway.open_run(**opening.arguments)
    return _pointed(opening, request, token)


async def aopen_run(
    wiring: GatewayWiring | None,
    request: AgentRequest,
    *,
    operation_id: str,
    attempt_id: str,
) -> OpenedRun | None:
    """``open_run`` from an event loop: a gateway whose calls block (``calls_block``) is
    called on a worker thread, the loop free meanwhile. Cancelled while the gateway is
    asked, the run is closed as soon as it has answered."""
    opening = _opening(wiring, request, operation_id=operation_id, attempt_id=attempt_id)
    if opening is None:
        return None
    gateway = opening.gateway
    if not blocks(gateway):
        return _pointed(opening, request, gateway.open_run(**opening.arguments))
    future = submit(lambda: gateway.open_run(**opening.arguments))
    try:
        token = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.add_done_callback(lambda done: close_late(gateway, done))
        raise
    return _pointed(opening, request, token)


def _pointed(opening: _Opening, request: AgentRequest, token: str) -> OpenedRun:
    """``request`` pointed at ``opening``'s gateway with ``token`` as its key."""
    wiring, gateway, held = opening.wiring, opening.gateway, opening.held
    names = _key_names(wiring, request.config)
    base_names = (wiring.base_url_env, *wiring.other_base_url_env)
    dropped = {*names, *base_names, *wiring.strip_env}
    env = {name: value for name, value in request.env.items() if name not in dropped}
    env[held] = token
    config = dict(request.config)
    config["base_url"] = gateway.url + wiring.url_path
    if wiring.timeout_setting is not None and wiring.timeout_setting not in config:
        config[wiring.timeout_setting] = gateway.deadline_s + GATEWAY_TIMEOUT_MARGIN_S
    pointed = dataclasses.replace(request, env=env, config=config)
    return OpenedRun(request=pointed, token=token, gateway=gateway)
