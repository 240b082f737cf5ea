"""What every wire module produces: a JSON answer, a stream of SSE events, an error."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping
from typing import Any

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"


def dumps(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    """One server-sent event: an optional ``event:`` line, one ``data:`` line."""
    head = f"event: {event}\n" if event else ""
    return head.encode() + b"data: " + dumps(data) + b"\n\n"


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """A complete HTTP answer: status, extra headers and the body (or its stream events)."""

    status: int
    headers: Mapping[str, str]
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    content_type: str = JSON_TYPE

    @property
    def streamed(self) -> bool:
        return self.events is not None


def retry_headers(retry_after_s: float | None) -> dict[str, str]:
    """``retry-after`` (whole seconds, rounded up) and ``retry-after-ms``."""
    if retry_after_s is None:
        return {}
    return {
        "retry-after": str(max(0, math.ceil(retry_after_s))),
        "retry-after-ms": str(round(retry_after_s * 1000)),
    }


def go_duration(seconds: float) -> str:
    """OpenAI's reset format: ``6ms``, ``1.5s``, ``6m0s``, ``1h2m3s``."""
    if seconds < 1.0:
        return f"{max(0, round(seconds * 1000))}ms"
    whole_minutes, rest = divmod(seconds, 60.0)
    hours, minutes = divmod(int(whole_minutes), 60)
    secs = f"{round(rest, 3):g}s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    if minutes:
        return f"{minutes}m{secs}"
    return secs


def rfc3339(epoch_s: float) -> str:
    """Anthropic's reset format: an absolute UTC time, whole seconds rounded up."""
    moment = _dt.datetime.fromtimestamp(math.ceil(epoch_s), _dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_text(seconds: float) -> str:
    """Google's duration format for ``RetryInfo.retryDelay``: ``26s``, ``1.5s``."""
    return f"{round(seconds, 3):g}s"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ErrorContext:
    """What an error body may mention: the model, the prompt's size, the wait asked for,
    and for rate limits the limit that was hit (``dimension``: requests or tokens)."""

    model: str
    request_id: str
    input_tokens: int = 0
    retry_after_s: float | None = None
    dimension: str = "requests"
    limit: int = 0
    requested: int = 1
    too_large: bool = False
