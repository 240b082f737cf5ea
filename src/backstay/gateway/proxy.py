"""``Proxy``: the request handler.

(About 640 lines: the ``Proxy`` class and the small functions of its one request path;
routing, holding, forwarding, the fallback moves and the probe wait read as one path. The
fallback moves are the part to split out next.)

Each client request is routed, its key kept out of every text (``register_secret``), and
its upstream attempts run by ``backstay.call.acall`` under the gateway's ``RetryPolicy``
and the circuit breaker of its (provider, model); the client gets the first answer that
did not fail, else the last upstream answer unchanged, else (no upstream answer at all)
an error in its provider's format. A request whose model's circuit is open moves along
its fallback chain (its run's fallback model, then the gateway's ``fallbacks``; with
``fallback_rules`` also by its failure's kind: ``fallbacks``, ``RequestFellBack``);
without a model to move to, a request whose own failures open its circuit (its last
allowed attempt's included), or that comes while it is open, waits for the circuit's
probe and is sent as it, or gets the open circuit's 503 with the wait, or its last answer
(``probe``).

One ``Idempotency-Key`` per client request is sent on every attempt (``headers``); each
attempt first waits its turn at the rate limiter of its provider and model (``limits``).

With a run-token table (``runs``), only requests carrying a live run token are served:
the token is swapped for the run's real key and the request sent to the run's upstream
(``run_requests``); each upstream attempt and the tokens of each answer are counted for
the token (``usage``); and each request is a span under the run's trace (``spans``).

A budget held request by request (``spending``, or a run's in a store's ledger: ``held``)
reserves, forwards and settles each request; without one, it costs one attribute check.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import time
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from backstay.breaker import BreakerRegistry, CircuitState
from backstay.call import acall
from backstay.classify import classify
from backstay.errors import CircuitOpen, StoreUnreachable
from backstay.events import BUS
from backstay.failure import Failure
from backstay.gateway.attempt import (
    Answer,
    OpenStream,
    Request,
    StreamTooLarge,
    UpstreamFailed,
    attempt,
)
from backstay.gateway.events import RequestFellBack, RequestRetried
from backstay.gateway.exchange import ClientRequest, Reply, StreamReply
from backstay.gateway.fallbacks import Chain, GatewayFallbacks
from backstay.gateway.headers import (
    client_keys,
    downstream_headers,
    idempotency_key,
    upstream_headers,
)
from backstay.gateway.held import forward_held, stream_reply
from backstay.gateway.limits import GatewayLimits, estimate_body, paced_attempt
from backstay.gateway.probe import Probing, await_probe, remaining_policy
from backstay.gateway.repair import repaired
from backstay.gateway.routes import NOT_JSON, Route, body_json, route
from backstay.gateway.run_requests import real_key_headers, real_key_path, with_model
from backstay.gateway.runs import RequestBudget, RunTicket, RunTokens, admit_request
from backstay.gateway.settings import TOKEN_HEADER, GatewaySettings
from backstay.gateway.spans import RequestSpan, recording, request_span
from backstay.gateway.spending import HeldRequests, RequestHold
from backstay.gateway.upstream import Upstream
from backstay.gateway.usage import usage_of
from backstay.gateway.wire_errors import GatewayError, gateway_error
from backstay.policy.retry import RetryPolicy, attempt_limit
from backstay.redact import redact, register_secret
from backstay.taxonomy import FailureKind

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web

    from backstay.breaker import CircuitBreaker
    from backstay.fallback.select import Tried

__all__ = ["Proxy"]

# Distinct client keys registered for redaction; past this many, keys are still forwarded
# but no longer added (the pattern-based redaction still covers the providers' key shapes).
_MAX_REGISTERED_KEYS: Final = 1024


# A request moved to another model of its chain (or sent again): its route and request.
_Moved = tuple[Route, Request]


class _Tally:
    """One client request's attempts so far, and the last upstream answer that failed;
    ``token``: the run token it came with, whose attempts are counted; ``credential``: the
    API key it is sent upstream with (a limit of that key paces it); ``probing``: once it
    has waited for its circuit's probe, when it started and what is left of its policy;
    ``body``: the client's body as ``body_json`` parsed it (``parsed_body``); ``hold``: its
    reservation at a spending budget, which its answers' usage is added to; ``chain``: its
    fallback chain (``None``: none), ``at`` the candidate it is on and ``tried`` the
    failures the policy gave up on; ``since``, ``base`` and ``left``: when its current
    budget of attempts started (monotonic), its attempts before it, and what is left of
    the gateway's policy (``None``: all of it); ``extra_probe``: it waited for a probe
    after its last allowed attempt opened its circuit."""

    __slots__ = (
        "at",
        "attempts",
        "base",
        "body",
        "chain",
        "credential",
        "extra_probe",
        "hold",
        "last",
        "left",
        "probing",
        "since",
        "token",
        "tried",
    )

    def __init__(
        self,
        token: str | None = None,
        credential: str | None = None,
        body: tuple[bytes, object] | None = None,
    ) -> None:
        self.attempts = 0
        self.last: UpstreamFailed | None = None
        self.token = token
        self.credential = credential
        self.probing: Probing | None = None
        self.body = body
        self.hold: RequestHold | None = None
        self.chain: Chain | None = None
        self.at = 0
        self.tried: list[Tried] = []
        self.since: float | None = None
        self.base = 0
        self.left: RetryPolicy | None = None
        self.extra_probe = False

    def parsed_body(self, body: bytes) -> object:
        """``body`` parsed from JSON (``NOT_JSON``: it is not), once per body: a request
        moved to a fallback model has another."""
        known = self.body
        if known is None or known[0] is not body:
            known = self.body = (body, body_json(body) if body else NOT_JSON)
        return known[1]


class Proxy:
    """Forwards requests under ``settings`` through ``session``; breakers from ``breakers``."""

    def __init__(
        self,
        settings: GatewaySettings,
        session: aiohttp.ClientSession,
        breakers: BreakerRegistry,
        *,
        runs: RunTokens | None = None,
        tracer_provider: Any = None,
        limits: GatewayLimits | None = None,
        spending: HeldRequests | None = None,
    ) -> None:
        self.settings = settings
        self._session = session
        self._upstream = Upstream(session, lean=True)  # the gateway's own client (``upstream``)
        self._breakers = breakers
        self._limits = limits if limits is not None else GatewayLimits()
        self._runs = runs
        self._tracer_provider = tracer_provider
        self._registered: set[str] = set()
        # Each model's fallback chain, the rules moving along it, and their cooldowns.
        self._fallbacks = GatewayFallbacks(
            settings.fallback_chains(), settings.fallback_rules, breakers
        )
        # The budget of requests that are not of a run (``None``: none).
        self._spending = spending
        self.active = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one client request on aiohttp's server (``web_replies``)."""
        from backstay.gateway.web_replies import client_request, web_reply  # noqa: PLC0415

        return await web_reply(await self.respond(await client_request(request)), request)

    async def respond(self, request: ClientRequest) -> Reply | StreamReply:
        """Answer one client request. A client that disconnects cancels it (both servers
        cancel the request's task): no attempt or wait outlives the client."""
        self.active += 1
        try:
            return await self._handle(request)
        finally:
            self.active -= 1

    async def _handle(self, request: ClientRequest) -> Reply | StreamReply:
        body = request_body = request.body
        # Parsed once: for the model (``route``) and the tokens it is paced and held for.
        parsed = body_json(body) if body and request.method == "POST" else NOT_JSON
        found = route(request.method, request.path, request.headers, body, parsed=parsed)
        keys = client_keys(request.headers, request.query_string)
        run = None if self._runs is None else self._runs.find(keys)
        # A live run token is admission enough: whoever opened the run held the gateway's.
        if run is None and not self._admitted(request):
            provider = None if found is None else found.provider
            return _error(gateway_error(provider, 401, f"missing or wrong {TOKEN_HEADER}"))
        if self._runs is not None and run is None:
            provider = None if found is None else found.provider
            return _error(gateway_error(provider, 401, "no live backstay run token as API key"))
        # Only an admitted request's keys: a stranger cannot fill the redaction table.
        self._register([run[1].key] if run is not None else keys)
        if found is None:
            message = f"{request.method} {request.path} is not a provider endpoint it serves"
            return _error(gateway_error(None, 404, message))
        key = idempotency_key(request.method, found.provider, request.headers)
        headers = upstream_headers(request.headers.items(), key)
        raw_path, base = request.raw_path, self.settings.upstreams.url_for(found.provider)
        token, ticket = run if run is not None else (None, None)
        if token is not None and ticket is not None:
            if ticket.provider != found.provider:
                message = f"this run token is for {ticket.provider}, not {found.provider}"
                return _error(gateway_error(found.provider, 401, message))
            headers = real_key_headers(headers, token, ticket.key)
            raw_path = real_key_path(raw_path, token, ticket.key)
            base = ticket.upstream or base
        # A known defect of a client's body repaired (``repair``): else the same objects.
        body, parsed = repaired(found, body, parsed, ticket)
        request_body = body
        credential = ticket.key if ticket is not None else next(iter(keys), None)
        tally = _Tally(token, credential, (request_body, parsed))
        found, raw_path, body = self._fallen_back(found, ticket, raw_path, body, tally)
        upstream = Request(
            method=request.method,
            url=base + raw_path,
            headers=tuple(headers),
            body=body,
            provider=found.provider,
        )
        budget: RequestBudget | HeldRequests | None = (
            self._spending if token is None else self._runs.budget(token) if self._runs else None
        )
        if budget is None:
            if not recording(self._tracer_provider):  # no span work while nobody records
                return await self._forward(found, upstream, key, tally, ticket)
            with request_span(found, ticket, self._tracer_provider) as span:
                return await self._forward(found, upstream, key, tally, ticket, span)
        if isinstance(budget, HeldRequests):  # reserved, forwarded, settled (``held``)

            async def forward(hold: RequestHold | None) -> Reply | StreamReply:
                tally.hold = hold
                with request_span(found, ticket, self._tracer_provider) as span:
                    return await self._forward(found, upstream, key, tally, ticket, span)

            return await forward_held(budget, found, upstream, tally.parsed_body(body), forward)
        # A run with a spending budget: the request's prompt tokens are held while it runs.
        estimate = estimate_body(body, tally.parsed_body(body), output=False)
        refused = await admit_request(budget, estimate)
        if refused is not None:
            return _error(gateway_error(found.provider, 400, redact(refused)))
        try:
            with request_span(found, ticket, self._tracer_provider) as span:
                return await self._forward(found, upstream, key, tally, ticket, span)
        finally:
            budget.release(estimate)

    def _fallen_back(
        self, found: Route, ticket: RunTicket | None, raw_path: str, body: bytes, tally: _Tally
    ) -> tuple[Route, str, bytes]:
        """The route, path and body of a request: sent to the first available model of its
        chain (``fallbacks``), its own unless its circuit is open or it is cooling down."""
        run_fallback = None if ticket is None else ticket.fallback_model
        chain = self._fallbacks.chain(found.provider, found.model, run_fallback, tally.credential)
        if chain is None:
            return found, raw_path, body
        tally.chain = chain
        index = self._fallbacks.first(chain)
        if index == 0:
            return found, raw_path, body
        own = self._breakers.breaker_for((found.provider, found.model))
        reason = "cooling_down" if own.state is CircuitState.CLOSED else "circuit_open"
        moved = _moved_to(found, ticket, chain.models[index], raw_path, body, reason=reason)
        if moved is None:
            return found, raw_path, body
        tally.at = index
        return moved

    def _moved(  # noqa: PLR0917 - one request's parts
        self,
        found: Route,
        upstream: Request,
        tally: _Tally,
        ticket: RunTicket | None,
        index: int,
        reason: str,
    ) -> _Moved | None:
        """The route and upstream request of a request moved to candidate ``index`` of its
        chain, told as ``RequestFellBack`` (``reason``); ``None``: it cannot be moved."""
        chain = tally.chain
        if chain is None:
            return None
        parts = urlsplit(upstream.url)
        head = f"{parts.scheme}://{parts.netloc}"
        raw_path = upstream.url[len(head) :]
        moved = _moved_to(
            found, ticket, chain.models[index], raw_path, upstream.body, reason=reason
        )
        if moved is None:
            return None
        tally.at = index
        route, path, body = moved
        return route, dataclasses.replace(upstream, url=head + path, body=body)

    def _opened(
        self, found: Route, upstream: Request, tally: _Tally, ticket: RunTicket | None
    ) -> _Moved | None:
        """The route and upstream request of a request whose own model's circuit its
        failures just opened, moved to the next available model of its chain, its
        attempts and deadline afresh (``None``: none to move to)."""
        chain = tally.chain
        index = None if chain is None else self._fallbacks.next_open(chain, tally.at)
        if index is None:
            return None
        moved = self._moved(found, upstream, tally, ticket, index, "circuit_opened")
        if moved is not None:
            tally.since, tally.left, tally.base = None, None, tally.attempts
        return moved

    async def _gave_up(  # noqa: PLR0917 - one request's state
        self,
        found: Route,
        upstream: Request,
        tally: _Tally,
        ticket: RunTicket | None,
        failure: Failure,
        breaker: CircuitBreaker,
        ran: tuple[RetryPolicy, int],
    ) -> _Moved | None:
        """Where a request goes after the policy gave up on ``failure`` (``ran``: the
        policy its attempts ran under and its attempts before them), ``None``: nowhere,
        its answer stands.

        With the fallback rules, the chain's step (``fallbacks.after_failure``): another
        model under what is left of its policy, or the same one after the policy's delay.
        Else, when its last allowed attempt left its model's circuit open and no model of
        its chain is available to move to: once, a wait for the circuit's probe within its
        policy's deadline and ``max_retry_after_s``, the probe one attempt past its
        ``max_attempts`` (with a model to move to, it gets its answer, and the client's
        next request goes there at once)."""
        policy = self.settings.policy
        since = time.monotonic() if tally.since is None else tally.since
        used, elapsed = tally.attempts - tally.base, time.monotonic() - since
        chain = tally.chain
        if chain is not None and self._fallbacks.rules is not None:
            step = self._fallbacks.after_failure(
                policy,
                failure,
                chain,
                current=tally.at,
                tried=tally.tried,
                attempts=used,
                elapsed_s=elapsed,
                operation=_operation(found, ticket),
            )
            if step is not None and step.retry:
                tally.left = remaining_policy(policy, attempts=used, elapsed_s=elapsed)
                if step.candidate != tally.at:
                    return self._moved(
                        found, upstream, tally, ticket, step.candidate, str(failure.kind)
                    )
                await asyncio.sleep(step.delay_s)
                return found, upstream
        ran_policy, before = ran
        exhausted = tally.attempts - before >= attempt_limit(ran_policy, failure.kind) or (
            used >= attempt_limit(policy, failure.kind)
        )
        if (
            tally.extra_probe
            or not exhausted
            or not failure.retryable
            or breaker.state is not CircuitState.OPEN
        ):
            return None
        if chain is not None and self._fallbacks.next_open(chain, tally.at) is not None:
            return None
        tally.extra_probe = True
        refused = CircuitOpen(breaker.name, retry_after_s=breaker.snapshot().retry_after_s)
        waits = 0 if tally.probing is None else tally.probing.waits
        allowance = policy.derive(max_attempts=used + 1)  # the probe, past its last attempt
        waited = await await_probe(breaker, allowance, refused, used, waits, since)
        if waited.probing is None:
            return None
        tally.probing, tally.left = waited.probing, waited.probing.policy
        return found, upstream

    def _admitted(self, request: ClientRequest) -> bool:
        token = self.settings.token
        if token is None:
            return True
        given = request.headers.get(TOKEN_HEADER, "")
        return hmac.compare_digest(given.encode(), token.encode())

    def _register(self, keys: list[str]) -> None:
        for key in keys:
            if key not in self._registered and len(self._registered) < _MAX_REGISTERED_KEYS:
                self._registered.add(key)
                register_secret(key)

    async def _one(self, upstream: Request, tally: _Tally) -> Answer | OpenStream:
        tally.attempts += 1
        settings = self.settings
        try:
            result = await attempt(
                self._upstream,
                upstream,
                buffer_streams=settings.buffer_streams,
                max_buffer_bytes=settings.max_buffer_bytes,
                peek_bytes=settings.peek_bytes,
            )
        except UpstreamFailed as failed:
            tally.last = failed
            self._count(tally, failed.answer.status, failed.answer)
            raise
        except Exception:
            self._count(tally, None, None)
            raise
        self._count(tally, result.status, result if isinstance(result, Answer) else None)
        return result

    def _count(self, tally: _Tally, status: int | None, answer: Answer | None) -> None:
        """Count an upstream attempt (and the tokens of an answer read whole) for the run,
        and for the request's hold at a spending budget."""
        hold, token, runs = tally.hold, tally.token, self._runs
        if hold is None and (runs is None or token is None):
            return
        if runs is not None and token is not None:
            runs.answered(token, status)
        if answer is not None:
            streamed = any(
                name.lower() == "content-type" and value.startswith("text/event-stream")
                for name, value in answer.headers
            )
            used = usage_of(answer.body, stream=streamed)
            if used is not None:
                if runs is not None and token is not None:
                    runs.used(token, used)
                if hold is not None:
                    hold.add(used)

    def _attempt_policy(self, tally: _Tally) -> RetryPolicy:
        """The policy of a request's next attempts: what is left of the gateway's, as its
        chain has its attempts on the current model run (``fallbacks.attempt_policy``)."""
        left = self.settings.policy if tally.left is None else tally.left
        chain = tally.chain
        return left if chain is None else self._fallbacks.attempt_policy(left, chain, tally.at)

    async def _forward(  # noqa: PLR0917 - one request's parts
        self,
        found: Route,
        upstream: Request,
        key: str | None,
        tally: _Tally,
        ticket: RunTicket | None = None,
        span: RequestSpan | None = None,
    ) -> Reply | StreamReply:
        probing = tally.probing
        started = tally.since = time.monotonic() if tally.since is None else tally.since
        policy, before = self._attempt_policy(tally), tally.attempts
        breaker = self._breakers.breaker_for((found.provider, found.model))
        failure: Failure | None = None
        outcome = "succeeded"
        try:
            # Each attempt waits its turn at the provider's rate limiter (``limits``).
            pacer = await self._limits.prepared(
                found,
                upstream.method,
                upstream.body,
                _operation(found, ticket),
                tally.credential,
                parsed=tally.parsed_body(upstream.body),
            )
            result: Answer | OpenStream | GatewayError = await acall(
                paced_attempt,
                pacer,
                self._one,
                upstream,
                tally,
                policy=policy,
                breaker=breaker,
                limiter=pacer,
                operation=f"gateway:{found.provider}/{found.model}",
            )
        except UpstreamFailed as failed:
            result, failure, outcome = failed.answer, failed.failure, "gave_up"
            follow = await self._gave_up(
                found, upstream, tally, ticket, failure, breaker, (policy, before)
            )
            if follow is not None:
                return await self._forward(*follow, key, tally, ticket, span)
        except CircuitOpen as err:
            # Its own failures opened the circuit: it moves to its fallback model, if any.
            moved = self._opened(found, upstream, tally, ticket) if tally.last else None
            if moved is not None:
                return await self._forward(*moved, key, tally, ticket, span)
            outcome = "circuit_open"
            # Not a stale last answer nor a refusal at once: it waits for the probe and is
            # sent as the probe, else it is told when the probe is (``probe``).
            waits = 0 if probing is None else probing.waits
            waited = await await_probe(
                breaker, self.settings.policy, err, tally.attempts - tally.base, waits, started
            )
            if waited.probing is not None:
                tally.probing, tally.left = waited.probing, waited.probing.policy
                return await self._forward(found, upstream, key, tally, ticket, span)
            wait = waited.retry_after_s
            if tally.last is not None:  # opened by this request's own failures
                failure = tally.last.failure
                text = _opened_text(err.name, tally.attempts, wait)
            else:  # it came while the circuit was open
                text = str(CircuitOpen(err.name, retry_after_s=wait))
            result = gateway_error(found.provider, 503, redact(text), retry_after_s=wait)
        except StreamTooLarge as err:
            result, outcome = gateway_error(found.provider, 502, str(err)), "gave_up"
        except StoreUnreachable as err:
            result, outcome = _unreachable(found.provider, err), "store_unreachable"
        except Exception as exc:  # noqa: BLE001 - a transport failure, answered as an error
            failure, outcome = classify(exc, provider=found.provider), "gave_up"
            status = 504 if failure.kind is FailureKind.TIMEOUT else 502
            message = f"the upstream failed: {failure.kind}: {failure.message}"
            result = gateway_error(found.provider, status, message)
        status = result.status
        if span is not None:
            span.set_attribute("http.response.status_code", status)
            span.set_attribute("backstay.gateway.attempts", tally.attempts)
            span.set_attribute("backstay.gateway.outcome", outcome)
        if tally.attempts > 1 or outcome == "circuit_open" or tally.probing is not None:
            elapsed = time.monotonic() - started
            name = self.settings.policy.name
            _report(found, name, tally, status, outcome, failure, key, elapsed, ticket)
        if isinstance(result, GatewayError):
            return _error(result)
        if isinstance(result, OpenStream):
            return stream_reply(result, tally.hold, self._runs, tally.token, tally.attempts)
        return Reply(
            status=result.status,
            headers=downstream_headers(result.headers, tally.attempts),
            body=result.body,
        )


def _unreachable(provider: str, err: StoreUnreachable) -> GatewayError:
    """The 503 of a request whose limiter or breaker is in a store that does not answer:
    the provider is not at fault, and the request was not answered by it."""
    text = f"{err}; try again when it answers"
    return gateway_error(provider, 503, redact(text), retry_after_s=1.0)


def _opened_text(name: str, attempts: int, retry_after_s: float | None) -> str:
    """The open-circuit answer of a request whose own failures met it: how many, then the
    wait as ``CircuitOpen`` words it ("next probe in N s", read by the classifiers)."""
    refused = CircuitOpen(name, retry_after_s=retry_after_s)
    return f"this request's {attempts} attempts failed; {refused}"


def _operation(found: Route, ticket: RunTicket | None) -> str:
    """The operation a request's event is told under: its run's task (so the batch's
    event log, which keeps its tasks' operations, records it), else the gateway's own."""
    if ticket is not None and ticket.task:
        return ticket.task
    return f"gateway:{found.provider}/{found.model}"


def _moved_to(
    found: Route,
    ticket: RunTicket | None,
    fallback: str,
    raw_path: str,
    body: bytes,
    *,
    reason: str,
) -> tuple[Route, str, bytes] | None:
    """The route, path and body of ``found``'s request for the run's ``fallback`` model,
    told as ``RequestFellBack`` (``reason``); ``None`` when the model is not where its
    provider puts it (nothing moves)."""
    moved_path, moved_body = with_model(found.provider, raw_path, body, fallback)
    if (moved_path, moved_body) == (raw_path, body):
        return None
    if BUS.wants(RequestFellBack.level):
        BUS.emit(
            RequestFellBack(
                operation=_operation(found, ticket),
                provider=found.provider,
                model=found.model,
                fallback_model=fallback,
                endpoint=found.endpoint,
                reason=reason,
                task=None if ticket is None else ticket.task,
                attempt=None if ticket is None else ticket.attempt,
            )
        )
    endpoint = found.endpoint.replace(found.model, fallback, 1)
    route = Route(provider=found.provider, model=fallback, endpoint=endpoint)
    return route, moved_path, moved_body


def _report(  # noqa: PLR0917 - one event's fields
    found: Route,
    policy: str,
    tally: _Tally,
    status: int,
    outcome: str,
    failure: Failure | None,
    key: str | None,
    elapsed_s: float,
    ticket: RunTicket | None = None,
) -> None:
    if tally.last is not None and failure is None:
        failure = tally.last.failure
    if BUS.wants(RequestRetried.level):
        BUS.emit(
            RequestRetried(
                operation=_operation(found, ticket),
                policy=policy,
                provider=found.provider,
                model=found.model,
                endpoint=found.endpoint,
                attempts=tally.attempts,
                status=status,
                outcome=outcome,
                failure=failure,
                idempotency_key=key,
                elapsed_s=elapsed_s,
                task=None if ticket is None else ticket.task,
                attempt=None if ticket is None else ticket.attempt,
            )
        )


def _error(error: GatewayError) -> Reply:
    return Reply(status=error.status, headers=error.headers, body=error.body)
