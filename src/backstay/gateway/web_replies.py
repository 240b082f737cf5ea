"""The proxy's requests and answers on aiohttp's server: the connections the gateway's own
server (``http1``) hands over to it, and the run-admin routes beside them."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from backstay.gateway.exchange import ClientRequest, Reply, StreamReply, relay

if TYPE_CHECKING:
    from aiohttp import web
    from multidict import CIMultiDict

__all__ = ["client_request", "web_reply"]


async def client_request(request: web.Request) -> ClientRequest:
    """``request``, its body read whole."""
    body = await request.read()
    return ClientRequest(
        method=request.method,
        path=request.path,
        raw_path=request.raw_path,
        query_string=request.query_string,
        headers=request.headers,
        body=body,
    )


async def web_reply(reply: Reply | StreamReply, request: web.Request) -> web.StreamResponse:
    """``reply`` as aiohttp sends it: a stream relayed as it comes (a failure after its
    first byte cuts the client's connection)."""
    aio = _web()
    if isinstance(reply, Reply):
        response: web.Response = aio.Response(
            status=reply.status, body=reply.body, headers=_multi(reply.headers)
        )
        return response
    out: web.StreamResponse = aio.StreamResponse(
        status=reply.stream.status, headers=_multi(reply.headers)
    )
    try:
        await out.prepare(request)
    except BaseException:
        reply.stream.response.release()
        raise
    if not await relay(reply, out.write):
        if request.transport is not None:
            request.transport.abort()
        return out
    await out.write_eof()
    return out


@functools.cache
def _web() -> Any:
    """aiohttp's ``web`` (loaded with the server), imported once, not per answer."""
    from aiohttp import web  # noqa: PLC0415

    return web


@functools.cache
def _multidict() -> Any:
    from multidict import CIMultiDict  # noqa: PLC0415 - aiohttp's own dependency

    return CIMultiDict


def _multi(headers: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
    multi: CIMultiDict[str] = _multidict()(headers)
    return multi
