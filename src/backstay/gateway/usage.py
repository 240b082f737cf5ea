"""The tokens an upstream answer reports, read as it passes through the gateway: a whole
JSON body, or an SSE stream fed chunk by chunk (``UsageScan``). Pure parsing.

Where each wire format keeps its usage:

| format | object | fields |
|---|---|---|
| Anthropic Messages | ``usage`` (a stream: ``message_start.message.usage``, then ``message_delta.usage``) | ``input_tokens``, ``output_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens`` |
| OpenAI Chat Completions | ``usage`` (a stream: the last chunk's) | ``prompt_tokens`` (cached included), ``completion_tokens``, ``prompt_tokens_details.cached_tokens`` |
| OpenAI Responses | ``usage`` (a stream: ``response.completed``'s ``response.usage``) | ``input_tokens`` (cached included), ``output_tokens``, ``input_tokens_details.cached_tokens`` |
| Gemini | ``usageMetadata`` (a stream: the last chunk's) | ``promptTokenCount`` (cached included), ``candidatesTokenCount``, ``thoughtsTokenCount``, ``cachedContentTokenCount`` |

Streams report running totals, so the last value seen of each field wins. Counts follow
``backstay.adapters.usage.Usage``: input is uncached prompt tokens, cache reads apart.
"""  # noqa: E501 - a table

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Final

__all__ = ["TokenUsage", "UsageScan", "usage_of"]

# An SSE line longer than this is not parsed (usage lines are short; content may not be).
_MAX_LINE: Final = 256 * 1024


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    """The tokens of one answer."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _dig(data: Any, *path: str) -> Any:
    for name in path:
        if not isinstance(data, dict):
            return None
        data = data.get(name)
    return data


def _fields(data: Any) -> dict[str, int]:
    """The usage fields one JSON object reports, by ``TokenUsage`` name (only those it has)."""
    if not isinstance(data, dict):
        return {}
    gemini = data.get("usageMetadata")
    if isinstance(gemini, dict):
        return _gemini(gemini)
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = _dig(data, "message", "usage")
    if not isinstance(usage, dict):
        usage = _dig(data, "response", "usage")
    if not isinstance(usage, dict):
        return {}
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return _cached_included(
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            _dig(usage, "prompt_tokens_details", "cached_tokens"),
        )
    if isinstance(usage.get("input_tokens_details"), dict):  # Responses: cached included
        return _cached_included(
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            _dig(usage, "input_tokens_details", "cached_tokens"),
        )
    out = {}
    for name, field in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cache_read_input_tokens", "cache_read_tokens"),
        ("cache_creation_input_tokens", "cache_write_tokens"),
    ):
        found = _int(usage.get(name))
        if found is not None:
            out[field] = found
    return out


def _cached_included(prompt: object, output: object, cached: object) -> dict[str, int]:
    out: dict[str, int] = {}
    total, cache = _int(prompt), _int(cached) or 0
    if total is not None:
        out["input_tokens"] = max(0, total - cache)
        out["cache_read_tokens"] = min(cache, total)
    if _int(output) is not None:
        out["output_tokens"] = _int(output) or 0
    return out


def _gemini(meta: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    prompt = _int(meta.get("promptTokenCount"))
    cached = _int(meta.get("cachedContentTokenCount")) or 0
    if prompt is not None:
        out["input_tokens"] = max(0, prompt - cached)
        out["cache_read_tokens"] = min(cached, prompt)
    candidates = _int(meta.get("candidatesTokenCount"))
    thoughts = _int(meta.get("thoughtsTokenCount"))
    if candidates is not None or thoughts is not None:
        out["output_tokens"] = (candidates or 0) + (thoughts or 0)
    return out


class UsageScan:
    """Reads the usage of an SSE stream fed in pieces (``feed``). ``on_usage`` is called
    with what each piece added to the stream's running totals, as soon as it is read: a
    receiver counting it before the piece is forwarded has counted it before the client
    has seen it."""

    __slots__ = ("_counted", "_fields", "_on_usage", "_partial", "_skipping")

    def __init__(self, on_usage: Callable[[TokenUsage], None] | None = None) -> None:
        self._fields: dict[str, int] = {}
        self._counted: dict[str, int] = {}
        self._on_usage = on_usage
        self._partial = b""
        self._skipping = False

    def feed(self, chunk: bytes) -> None:
        """One more piece of an SSE stream."""
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > _MAX_LINE:
            self._partial, self._skipping = b"", True
        for line in lines:
            if self._skipping:  # the rest of a line too long to parse
                self._skipping = False
                continue
            self._line(line)
        self._report()

    def _report(self) -> None:
        if self._on_usage is None or self._fields == self._counted:
            return
        added = {k: max(0, v - self._counted.get(k, 0)) for k, v in self._fields.items()}
        self._counted = dict(self._fields)
        if any(added.values()):
            self._on_usage(TokenUsage(**added))

    def _line(self, line: bytes) -> None:
        line = line.rstrip(b"\r")
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if not payload.startswith(b"{") or b"sage" not in payload:  # usage / usageMetadata
            return
        try:
            self._fields.update(_fields(json.loads(payload)))
        except ValueError:
            return

    def usage(self) -> TokenUsage | None:
        """What the stream reported (its last line too, if it had no newline), if anything."""
        if self._partial:
            self._line(self._partial)
            self._partial = b""
            self._report()
        return TokenUsage(**self._fields) if self._fields else None


def usage_of(body: bytes, *, stream: bool) -> TokenUsage | None:
    """The usage a whole answer ``body`` reports (an SSE stream when ``stream``)."""
    if stream:
        scan = UsageScan()
        scan.feed(body)
        return scan.usage()
    try:
        fields = _fields(json.loads(body))
    except ValueError:
        return None
    return TokenUsage(**fields) if fields else None
