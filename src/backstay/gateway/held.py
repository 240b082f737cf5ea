"""What the proxy does with a request held by a spending budget held request by request
(``backstay.gateway.spending.HeldRequests``): ``costs`` says whether it is held (a model's
answer, not a listing or a token count); ``forward_held`` reserves it, forwards it and
settles it (or answers the refusal: a 400 in its provider's format; a ledger that does not
answer: a 503, unsent, and ``budget.unreachable``); a stream's hold is settled once the
stream has been relayed (``held_stream``: when it is released), its usage added as it
passes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from backstay.events import BUS
from backstay.gateway.attempt import OpenStream, Request
from backstay.gateway.exchange import Reply, StreamReply
from backstay.gateway.headers import downstream_headers
from backstay.gateway.limits import estimate_body
from backstay.gateway.routes import ANY_MODEL, Route
from backstay.gateway.spending import BudgetUnreachable, HeldRequests, RequestHold
from backstay.gateway.usage import TokenUsage, UsageScan
from backstay.gateway.wire_errors import gateway_error
from backstay.redact import redact

if TYPE_CHECKING:
    from multidict import CIMultiDictProxy

    from backstay.gateway.runs import RunTokens
    from backstay.gateway.upstream import BodyReader, UpstreamResponse

__all__ = ["costs", "forward_held", "settle_later", "stream_reply"]

# Endpoints that cost nothing (token counts): not held by a spending budget.
_FREE_SUFFIXES: Final = ("/count_tokens", ":countTokens")
# When a client refused for a ledger that does not answer is told to try again.
_RETRY_AFTER_S: Final = 1.0


async def forward_held(
    budget: HeldRequests,
    found: Route,
    upstream: Request,
    parsed: object,
    forward: Callable[[RequestHold | None], Awaitable[Reply | StreamReply]],
) -> Reply | StreamReply:
    """``forward`` a request on ``found`` (sent as ``upstream``, its body ``parsed``) under
    ``budget``: its prompt's estimated tokens reserved first (refused with a 400 when it
    has no room), settled when its answer is done (a stream: once relayed); one that costs
    nothing (``costs``) is forwarded unheld."""
    if not costs(found, upstream.method):
        return await forward(None)
    tokens = estimate_body(upstream.body, parsed, output=False)
    try:
        held = await budget.hold(found, tokens)
    except Exception as exc:  # noqa: BLE001 - a ledger that fails holds nothing: a 503
        reason = _unreachable(found, "reserve", exc)
        text = (
            f"budget_unavailable: the spending budget's ledger does not answer ({reason}): "
            "the request was not sent; try again later"
        )
        error = gateway_error(found.provider, 503, text, retry_after_s=_RETRY_AFTER_S)
        return Reply(status=error.status, headers=error.headers, body=error.body)
    if isinstance(held, str):
        error = gateway_error(found.provider, 400, redact(held))
        return Reply(status=error.status, headers=error.headers, body=error.body)
    try:
        reply = await forward(held)
    except BaseException:
        settle_later(held)
        raise
    if not isinstance(reply, StreamReply):
        try:
            await held.asettle()
        except Exception as exc:  # noqa: BLE001 - the answer came: it is relayed uncharged
            _unreachable(found, "settle", exc)
    return reply


def _unreachable(found: Route, stage: str, exc: Exception) -> str:
    """Tell that the ledger failed a request's ``stage``; the reason, redacted."""
    reason = redact(str(exc) or type(exc).__name__)
    if BUS.wants(BudgetUnreachable.level):
        BUS.emit(
            BudgetUnreachable(
                operation=f"gateway:{found.provider}/{found.model}",
                provider=found.provider,
                model=found.model,
                endpoint=found.endpoint,
                stage=stage,
                reason=reason,
            )
        )
    return reason


def costs(found: Route, method: str) -> bool:
    """Whether a request is held by a spending budget: a ``POST`` of a model's answer (not
    a listing, not a token count)."""
    return (
        method == "POST"
        and found.model != ANY_MODEL
        and not found.endpoint.endswith(_FREE_SUFFIXES)
    )


# Settlements sent off the loop while nobody waits for them (kept until they are done).
_SETTLING: Final[set[asyncio.Future[None]]] = set()


def settle_later(hold: RequestHold) -> None:
    """Settle ``hold`` off the event loop without waiting (a request cancelled, a stream
    relayed); a failure to write it is told (``budget.unreachable``), else the loop's to
    report."""
    future = asyncio.get_running_loop().run_in_executor(None, hold.settle)
    _SETTLING.add(future)

    def done(finished: asyncio.Future[None]) -> None:
        _SETTLING.discard(finished)
        failed = None if finished.cancelled() else finished.exception()
        if failed is None:
            return
        if hold.route is not None and isinstance(failed, Exception):
            _unreachable(hold.route, "settle", failed)
        else:
            asyncio.get_running_loop().call_exception_handler(
                {"message": "a spending budget's settlement failed", "future": finished}
            )

    future.add_done_callback(done)


class _SettlingResponse:
    """An upstream stream whose request's hold is settled when it is released (relayed
    to its end, or cut): its answers' usage counted by then."""

    __slots__ = ("_hold", "_response")

    def __init__(self, response: UpstreamResponse, hold: RequestHold) -> None:
        self._response = response
        self._hold = hold

    @property
    def status(self) -> int:
        return self._response.status

    @property
    def headers(self) -> CIMultiDictProxy[str]:
        return self._response.headers

    @property
    def content_type(self) -> str:
        return self._response.content_type

    @property
    def content(self) -> BodyReader:
        return self._response.content

    async def read(self) -> bytes:
        return await self._response.read()

    def release(self) -> Any:
        try:
            return self._response.release()
        finally:
            settle_later(self._hold)


def held_stream(
    stream: OpenStream, hold: RequestHold, runs: RunTokens | None, token: str | None
) -> tuple[OpenStream, UsageScan]:
    """``stream`` settling ``hold`` once released, and the scan adding its usage to the
    hold (and to the run's tally, for a run token)."""
    if runs is not None and token is not None:

        def used(found: TokenUsage) -> None:
            runs.used(token, found)
            hold.add(found)

        scan = UsageScan(used)
    else:
        scan = UsageScan(hold.add)
    settling = _SettlingResponse(stream.response, hold)
    return dataclasses.replace(stream, response=settling), scan


def stream_reply(
    stream: OpenStream,
    hold: RequestHold | None,
    runs: RunTokens | None,
    token: str | None,
    attempts: int,
) -> StreamReply:
    """The reply relaying ``stream`` (after ``attempts`` upstream attempts): its usage
    counted for the run of ``token`` and added to the request's ``hold``, which it settles
    once relayed."""
    scan = None
    if hold is not None:
        stream, scan = held_stream(stream, hold, runs, token)
    elif runs is not None and token is not None:
        scan = UsageScan(lambda used: runs.used(token, used))
    return StreamReply(
        stream=stream, headers=downstream_headers(stream.headers, attempts), scan=scan
    )
