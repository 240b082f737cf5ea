"""What the proxy is given and what it gives back, whichever HTTP server carries them: the
gateway's own (``http1``) or aiohttp's (``web_replies``).

* ``ClientRequest``: one client request, its body read whole;
* ``Reply``: an answer sent whole (the upstream's answer, or one the gateway makes);
* ``StreamReply``: an upstream stream whose first bytes were checked, the rest still to
  be relayed (``relay``) as it comes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backstay.gateway.attempt import OpenStream
    from backstay.gateway.usage import UsageScan

__all__ = ["ClientRequest", "Reply", "StreamReply", "relay"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ClientRequest:
    """A client request: ``path`` decoded and without its query, ``raw_path`` as sent
    (query included), ``query_string`` decoded, ``headers`` case-insensitive."""

    method: str
    path: str
    raw_path: str
    query_string: str
    headers: Mapping[str, str]
    body: bytes


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """An answer sent whole; the server adds its framing (``Content-Length``)."""

    status: int
    headers: tuple[tuple[str, str], ...] | list[tuple[str, str]]
    body: bytes


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StreamReply:
    """An opened upstream stream to relay with ``headers``; ``scan`` reads each piece's
    usage before the client has it."""

    stream: OpenStream
    headers: list[tuple[str, str]]
    scan: UsageScan | None = None


async def relay(reply: StreamReply, write: Callable[[bytes], Awaitable[None]]) -> bool:
    """Send the stream's first bytes, then the rest as it comes, through ``write``; whether
    it ended (``False``: the upstream failed after the first byte, and the client's
    connection must be cut, as the stream was upstream). The upstream answer is released
    either way."""
    import aiohttp  # noqa: PLC0415 - loaded with the server

    stream, scan = reply.stream, reply.scan
    upstream = stream.response
    try:
        if scan is not None:  # counted before the client has it
            scan.feed(stream.first)
        await write(stream.first)
        try:
            async for chunk in upstream.content.iter_any():
                if scan is not None:
                    scan.feed(chunk)
                await write(chunk)
            if scan is not None:
                scan.usage()  # its last line, if it had no newline
        except (TimeoutError, aiohttp.ClientError, OSError):
            return False
        return True
    finally:
        upstream.release()
