"""One upstream attempt of a request: send it, read what decides whether it failed, and
either hand back something to answer the client with or raise ``UpstreamFailed``.

What decides, by the answer's shape:

* **Not a stream** (any status): the whole body is read and checked with
  ``backstay.classify.check_response`` (status, headers, body).
* **A 2xx SSE stream, buffered**: the whole stream is read (at most ``max_buffer_bytes``)
  and its error events checked (``sse``), so an error event anywhere in it, a connection
  cut mid-way, or an end without the provider's last event (``sse.ended``: Anthropic's
  ``message_stop``, ``[DONE]``, Responses' ``response.completed``, a Gemini chunk with a
  ``finishReason``) fails the attempt; the client then gets the same bytes at once.
* **A 2xx SSE stream, passed through**: its first event is read and checked; after that
  the stream belongs to the client (``OpenStream``), and a failure in the rest reaches the
  client as the provider sent it.

A successful body that reports a refusal or a filtered answer is an answer, not an attempt
to retry: only errors fail an attempt. Transport failures (refused connections, resets,
timeouts) propagate as aiohttp raised them; the retry driver classifies them.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Final

from backstay.classify import check_response
from backstay.failure import Failure
from backstay.gateway.sse import ended, error_event
from backstay.gateway.upstream import Upstream, UpstreamResponse

if TYPE_CHECKING:
    import aiohttp

__all__ = ["Answer", "OpenStream", "Request", "StreamTooLarge", "UpstreamFailed", "attempt"]

_SSE: Final = "text/event-stream"
_EVENT_ENDS: Final = (b"\n\n", b"\r\n\r\n")
# The top-level keys by which ``check_response`` tells an error's shape in a body (an
# ``error`` object or text, a Responses ``response.error``, flat ``error_type`` /
# ``error_code``, ``message`` beside ``code`` / ``type``, an AI-SDK ``data.statusCode``).
_ERROR_KEYS: Final = frozenset(
    {"error", "response", "error_type", "error_code", "message", "data", "statusCode"}
)
# A buffered stream that ended without its provider's last event: cut short, however
# cleanly its connection ended (retried as a connection closed before a full response).
_STOPPED_EARLY: Final = Failure(
    code="ERR_CONNECTION_CLOSED", message="the stream ended before its last event"
)
# Bodies the classifier reads whole (it cuts longer ones, which may read differently).
_MAX_CLEAN_BYTES: Final = 200_000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What every attempt of one client request sends."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    provider: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """An upstream answer read whole."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OpenStream:
    """A stream whose first event was checked: ``first`` holds the bytes read so far; the
    rest is still to be read from ``response``, which the receiver must release."""

    status: int
    headers: tuple[tuple[str, str], ...]
    first: bytes
    response: UpstreamResponse


class UpstreamFailed(Exception):
    """An attempt whose answer shows a failure: the ``failure`` (the retry driver reads it
    as the classification) and the whole ``answer``, returned to the client unchanged when
    no retry follows."""

    def __init__(self, failure: Failure, answer: Answer) -> None:
        super().__init__(f"upstream answered {answer.status}: {failure.code}")
        self.failure = failure
        self.answer = answer


class StreamTooLarge(Exception):
    """A buffered stream outgrew ``max_buffer_bytes``: ``failure`` is one of our own limits,
    never retried (the same answer would outgrow it again)."""

    def __init__(self, limit: int) -> None:
        message = f"the stream is larger than the buffer's {limit} bytes"
        super().__init__(message)
        self.failure = Failure(code="ERR_LIMIT_EXCEEDED", message=message)


def _clean_success(status: int, body: bytes) -> bool:
    """Whether a 2xx answer's body is a JSON object without any of the shapes an error is
    told by (``_ERROR_KEYS``, ``"type": "error"``): ``check_response`` would find in it at
    most the success body's own report of a refusal, which is an answer here, so the
    common answer skips the classifier's full reading. Anything else is read whole."""
    if not 200 <= status < 300 or len(body) > _MAX_CLEAN_BYTES or not body.startswith(b"{"):
        return False
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(parsed, dict)
        and parsed.get("type") != "error"
        and _ERROR_KEYS.isdisjoint(parsed)
    )


def failure_of(status: int, headers: Any, body: bytes, provider: str) -> Failure | None:
    """The failure an answer shows, or ``None``: a success body's own report (a refusal, a
    blocked prompt) counts as an answer."""
    if _clean_success(status, body):
        return None
    found = check_response(status, headers, body, provider=provider)
    if found is None:
        return None
    if status < 400 and found.details.get("source") == "success_body":
        return None
    return found


def _stream_failure(status: int, headers: Any, body: bytes, provider: str) -> Failure | None:
    """The failure of the first error event in a stream's ``body`` (``sse``), if any."""
    event = error_event(body)
    return None if event is None else failure_of(status, headers, event.encode(), provider)


def _is_stream(response: UpstreamResponse) -> bool:
    return 200 <= response.status < 300 and response.content_type == _SSE


def _headers(response: UpstreamResponse) -> tuple[tuple[str, str], ...]:
    return tuple(response.headers.items())


async def _read_capped(response: UpstreamResponse, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise StreamTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


async def _peek(response: UpstreamResponse, limit: int) -> bytes:
    """The stream's bytes up to the end of its first event (or ``limit``, or its end)."""
    seen = b""
    while len(seen) < limit and not any(end in seen for end in _EVENT_ENDS):
        chunk = await response.content.readany()
        if not chunk:
            break
        seen += chunk
    return seen


async def attempt(
    session: aiohttp.ClientSession | Upstream,
    request: Request,
    *,
    buffer_streams: bool,
    max_buffer_bytes: int,
    peek_bytes: int,
) -> Answer | OpenStream:
    """Make one attempt of ``request`` (through ``Upstream``, or a session's ``request``);
    ``UpstreamFailed`` when its answer failed."""
    response: UpstreamResponse
    if isinstance(session, Upstream):
        response = await session.send(request.method, request.url, request.headers, request.body)
    else:
        response = await session.request(
            request.method,
            request.url,
            headers=list(request.headers),
            data=request.body or None,
            allow_redirects=False,
        )
    handed_over = False
    try:
        status, headers = response.status, _headers(response)
        if _is_stream(response) and not buffer_streams:
            first = await _peek(response, peek_bytes)
            found = _stream_failure(status, response.headers, first, request.provider)
            if found is None:
                handed_over = True  # the receiver releases it
                return OpenStream(status=status, headers=headers, first=first, response=response)
            # A stream failing at once is answered whole: it is short, and it has ended.
            body = first + await _read_capped(response, max_buffer_bytes)
        elif _is_stream(response):
            body = await _read_capped(response, max_buffer_bytes)
            found = _stream_failure(status, response.headers, body, request.provider)
            if found is None and not ended(body):
                found = _STOPPED_EARLY
        else:
            body = await response.read()
            found = failure_of(status, response.headers, body, request.provider)
        answer = Answer(status=status, headers=headers, body=body)
        if found is not None:
            raise UpstreamFailed(found, answer)
        return answer
    finally:
        if not handed_over:
            response.release()
