"""The little HTTP the metrics server speaks, over asyncio streams: one request per
connection (``Connection: close``), its head read within a deadline, no body.

``read_request`` returns the ``Request`` (method, path without the query, headers with
lower-case names), ``None`` when the client went away or stayed silent past the deadline,
or raises ``BadRequest`` (answered 400 or 431). ``response`` makes the bytes of one answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import http
from collections.abc import Mapping
from typing import Final

__all__ = [
    "MAX_HEADER_LINES",
    "MAX_LINE_BYTES",
    "BadRequest",
    "Request",
    "read_request",
    "response",
]

# As http.client bounds a response head: enough for any scraper, and a bound on memory.
MAX_LINE_BYTES: Final = 8 * 1024
MAX_HEADER_LINES: Final = 100


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]


class BadRequest(Exception):
    """The request head cannot be read; ``status`` is the answer (400 or 431)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def read_request(reader: asyncio.StreamReader, *, timeout_s: float) -> Request | None:
    """The request head of ``reader``, whole within ``timeout_s``; ``None`` when the client
    closed the connection or did not send it in time."""
    try:
        async with asyncio.timeout(timeout_s):
            first = await _line(reader)
            if not first:
                return None
            headers: dict[str, str] = {}
            for _ in range(MAX_HEADER_LINES + 1):
                line = await _line(reader)
                if not line:
                    break
                name, sep, value = line.partition(":")
                if not sep or not name.strip():
                    raise BadRequest(400, "malformed header line")
                headers[name.strip().lower()] = value.strip()
            else:
                raise BadRequest(431, f"more than {MAX_HEADER_LINES} header lines")
    except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        return None
    parts = first.split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise BadRequest(400, "malformed request line")
    method, target, _ = parts
    return Request(method=method, path=target.split("?", 1)[0], headers=headers)


async def _line(reader: asyncio.StreamReader) -> str:
    """One line without its end; ``""`` for the empty line ending the head (or EOF)."""
    try:
        raw = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        return ""
    except asyncio.LimitOverrunError:
        raise BadRequest(431, f"a request line or header over {MAX_LINE_BYTES} bytes") from None
    return raw.rstrip(b"\r\n").decode("latin-1")


def response(
    status: int,
    body: bytes,
    *,
    content_type: str = "text/plain; charset=utf-8",
    headers: Mapping[str, str] | None = None,
    head_only: bool = False,
) -> bytes:
    """The bytes of one answer (the body left out for ``head_only``, as HEAD asks)."""
    lines = [
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Cache-Control: no-store",
        "Connection: close",
        *(f"{name}: {value}" for name, value in (headers or {}).items()),
    ]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + body
