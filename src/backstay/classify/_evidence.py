"""Evidence: everything a response says about a failure, read out of any provider's shape.

One reader serves every provider because gateways mix shapes (an OpenAI-shaped body in
front of an Anthropic model, a Google body behind an OpenAI-compatible URL). Provider
modules then decide what the fields mean.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import Any

from backstay.classify._bounds import bounded
from backstay.classify._http import (
    as_int,
    as_list,
    as_str,
    find_embedded_json,
    normalize_headers,
    parse_body,
)
from backstay.classify._waits import google_retry_delay

_PROVIDER_ALIASES = {
    "anthropic": "anthropic",
    "claude": "anthropic",
    "bedrock": "anthropic",
    "openai": "openai",
    "azure": "openai",
    "azure-openai": "openai",
    "azure_openai": "openai",
    "openai-compatible": "openai",
    "gemini": "gemini",
    "google": "gemini",
    "google-genai": "gemini",
    "vertex": "gemini",
    "vertexai": "gemini",
}


def provider_family(provider: str | None) -> str | None:
    """``anthropic`` / ``openai`` / ``gemini`` for a provider name or alias, else ``None``."""
    if not provider:
        return None
    return _PROVIDER_ALIASES.get(provider.strip().lower())


@dataclasses.dataclass(slots=True, kw_only=True)
class Evidence:
    """What one response (or stream event, or exception) says. Internal to ``classify``."""

    provider: str | None
    family: str | None
    status: int | None
    headers: dict[str, str]
    err_type: str | None = None
    err_code: str | None = None
    google_status: str | None = None
    body_status: int | None = None
    reasons: tuple[str, ...] = ()
    quota_ids: tuple[str, ...] = ()
    quota_values: tuple[str, ...] = ()
    retry_delay_s: float | None = None
    message: str = ""
    body_text: str = ""
    parsed: Any = None
    has_error_shape: bool = False
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def in_stream(self) -> bool:
        """An error delivered inside a successful (200) response or stream."""
        return self.status is not None and 200 <= self.status < 300

    @property
    def codes(self) -> tuple[str, ...]:
        """Every structured code and type, lower-cased, for table look-ups."""
        found = [self.err_code, self.err_type, self.google_status, *self.reasons]
        found.extend(self.extra.get("inner_codes", ()))
        return tuple(c.lower() for c in found if c)


def _google_details(ev: Evidence, details: object) -> None:
    if not isinstance(details, list):
        return
    reasons: list[str] = []
    quota_ids: list[str] = []
    quota_values: list[str] = []
    for item in details:
        if not isinstance(item, Mapping):
            continue
        kind = str(item.get("@type", ""))
        if kind.endswith("ErrorInfo"):
            reason = as_str(item.get("reason"))
            if reason:
                reasons.append(reason)
            metadata = item.get("metadata")
            if isinstance(metadata, Mapping):
                for key in ("quota_limit", "quota_metric", "quota_location"):
                    value = as_str(metadata.get(key))
                    if value:
                        quota_ids.append(value)
                value = metadata.get("quota_limit_value")
                if value is not None:
                    quota_values.append(str(value))
        elif kind.endswith("QuotaFailure"):
            for violation in as_list(item.get("violations")):
                if not isinstance(violation, Mapping):
                    continue
                for key in ("quotaId", "quotaMetric", "subject"):
                    value = as_str(violation.get(key))
                    if value:
                        quota_ids.append(value)
                if violation.get("quotaValue") is not None:
                    quota_values.append(str(violation.get("quotaValue")))
        elif kind.endswith("RetryInfo"):
            ev.retry_delay_s = google_retry_delay(item.get("retryDelay"))
    ev.reasons = tuple(reasons)
    ev.quota_ids = tuple(quota_ids)
    ev.quota_values = tuple(quota_values)


def _nested_error(message: str | None) -> Mapping[str, Any] | None:
    """The provider error a gateway or agent serialised into another error's message,
    anywhere in it (``ConnectionError: {"error": {…}}``)."""
    if not message or "{" not in message:
        return None
    parsed = find_embedded_json(bounded(message))
    if not isinstance(parsed, Mapping):
        return None
    inner = parsed.get("error")
    if isinstance(inner, Mapping):
        return inner
    if "message" in parsed and ("code" in parsed or "type" in parsed):
        return parsed
    return None


def _structured_reset(ev: Evidence, error: Mapping[str, Any]) -> None:
    """A reset the body states in fields (``resets_at`` epoch, ``resets_in_seconds``): it
    outranks any wait written in prose."""
    at = as_int(error.get("resets_at"))
    if at is not None:
        ev.extra["reset_epoch"] = at
    seconds = error.get("resets_in_seconds")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
        ev.extra["reset_in_s"] = float(seconds)


_NAMED_STATUS = (
    re.compile(r"API Error:?\s*(?:Repeated\s+)?(\d{3})\b"),
    re.compile(r"(?i)request rejected \((\d{3})\)"),
    re.compile(r"(?i)(?:last |unexpected )status:?\s*(\d{3})\b"),
    re.compile(r"(?i)error code:?\s*(\d{3})\b"),
    re.compile(r"(?i)\bstatus(?:Code| code)?[\"':= ]+(\d{3})\b"),
)


def named_status(text: str) -> int | None:
    """An HTTP status a wrapper wrote into its message ("Error code: 429 - {…}",
    "Server responded with status 429"), if it wrote one."""
    if len(text) <= _CACHED_TEXT_LEN:
        return _named_status_cached(text)
    return _named_status(bounded(text))


def _named_status(text: str) -> int | None:
    for pattern in _NAMED_STATUS:
        match = pattern.search(text)
        if match:
            status = int(match.group(1))
            if 400 <= status < 600:
                return status
    return None


# Messages repeat: short ones are read once and remembered (bounded, as in _patterns).
_CACHED_TEXT_LEN = 4096
_named_status_cached = functools.lru_cache(maxsize=4096)(_named_status)


def _read_error_object(ev: Evidence, error: Mapping[str, Any], depth: int = 0) -> None:
    ev.has_error_shape = True
    nested = _nested_error(as_str(error.get("message"))) if depth < 3 else None
    ev.message = as_str(error.get("message")) or ev.message
    ev.err_type = as_str(error.get("type")) or as_str(error.get("error_type")) or ev.err_type
    ev.err_code = as_str(error.get("error_code")) or ev.err_code
    code = error.get("code")
    if isinstance(code, str) and not code.strip().isdigit():
        ev.err_code = as_str(code)
    elif as_int(code) is not None:
        ev.body_status = as_int(code)
        if depth:
            ev.extra["inner_status"] = True  # the real provider's status, under a gateway's
    ev.google_status = as_str(error.get("status")) or ev.google_status
    details = error.get("details")
    if isinstance(details, Mapping):
        ev.err_code = as_str(details.get("error_code")) or ev.err_code
    else:
        _google_details(ev, details)
    inner = error.get("innererror") or error.get("inner_error")
    if isinstance(inner, Mapping):
        ev.extra["inner_codes"] = tuple(
            c for c in (as_str(inner.get("code")), as_str(inner.get("type"))) if c
        )
    _structured_reset(ev, error)
    _read_metadata(ev, error.get("metadata"))
    if isinstance(details, Mapping):
        # A client that re-wraps a gateway's error keeps the gateway's object as details.
        _read_metadata(ev, details.get("metadata"), first=False)
    if nested is not None:
        _read_error_object(ev, nested, depth + 1)  # the inner error is the real one


def _read_metadata(ev: Evidence, metadata: object, *, first: bool = True) -> None:
    """A gateway's (OpenRouter's) ``metadata``: the upstream provider's own error body as
    ``raw`` (``first``: over one read before), and its rate-limit headers."""
    if not isinstance(metadata, Mapping):
        return
    raw = metadata.get("raw")
    if isinstance(raw, str) and (first or "raw" not in ev.extra):
        ev.extra["raw"] = raw
    for name, value in normalize_headers(metadata.get("headers")).items():
        ev.headers.setdefault(name, value)


def _unwrap(parsed: Any) -> Any:
    """Gemini's non-SSE stream is a JSON array of chunks: the first erroring one counts."""
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], Mapping):
        for item in parsed:
            if isinstance(item, Mapping) and "error" in item:
                return item
        return parsed[0]
    return parsed


def read_evidence(
    status: int | None,
    headers: object,
    body: object,
    *,
    provider: str | None,
    message: str | None = None,
) -> Evidence:
    """Gather evidence from a raw response. Never raises."""
    parsed, text = parse_body(body)
    parsed = _unwrap(parsed)
    ev = Evidence(
        provider=provider,
        family=provider_family(provider),
        status=status,
        headers=normalize_headers(headers),
        body_text=text,
        parsed=parsed,
        message=message or "",
    )
    if isinstance(parsed, Mapping):
        _read_mapping(ev, parsed)
    if not ev.message:
        ev.message = text.strip()[:2000]
    inner = named_status(ev.message[:2000])
    if inner is None and text and not text.startswith(("{", "[")):
        inner = named_status(text[:2000])  # a wrapper's words around an embedded body
    if inner is not None and inner != status:
        ev.extra["named_status"] = inner  # a wrapper's words for the status underneath
    if ev.family is None:
        ev.family = _guess_family(ev)
    return ev


def error_shape(body: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(has_error_shape, parsed)`` of a parsed (mapping) body, as ``read_evidence``
    finds them (an unreadable body fails as it fails there), without the rest of its
    reading: the text's message, any status named in it, the headers and the provider's
    family only describe a failure once one is found."""
    parsed, _text = parse_body(body)
    parsed = _unwrap(parsed)
    ev = Evidence(provider=None, family=None, status=None, headers={}, parsed=parsed)
    if isinstance(parsed, Mapping):
        _read_mapping(ev, parsed)
    return ev.has_error_shape, parsed


def _read_mapping(ev: Evidence, parsed: Mapping[str, Any]) -> None:
    error = parsed.get("error")
    if isinstance(error, Mapping):
        _read_error_object(ev, error)
    elif isinstance(error, str):  # {"error": "message"} and {"type": "error", "error": "…"}
        ev.has_error_shape = True
        ev.message = error
    elif error is True and isinstance(parsed.get("message"), str):  # {"error": true, …}
        ev.has_error_shape = True
        ev.message = parsed["message"]
    response = parsed.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("error"), Mapping):
        _read_error_object(ev, response["error"])  # Responses API ``response.failed``
    if not ev.has_error_shape and parsed.get("type") == "error":
        _read_error_object(ev, parsed)  # Responses API stream error with top-level fields
        ev.err_type = None if ev.err_type == "error" else ev.err_type
    flat_error = "error_type" in parsed or "error_code" in parsed
    if not ev.has_error_shape and (
        flat_error or ("message" in parsed and ("code" in parsed or "type" in parsed))
    ):
        _read_error_object(ev, parsed)  # the inner error dict (openai SDK's ``e.body``)
    data = parsed.get("data")
    if not ev.has_error_shape and isinstance(data, Mapping) and "statusCode" in data:
        ev.has_error_shape = True  # AI-SDK shape used by opencode
        ev.message = as_str(data.get("message")) or ev.message
        ev.body_status = as_int(data.get("statusCode"))


def _guess_family(ev: Evidence) -> str | None:
    headers = ev.headers
    if any(k.startswith("anthropic-") for k in headers) or "request-id" in headers:
        return "anthropic"
    if any(k.startswith("x-ratelimit-") for k in headers) or "openai-processing-ms" in headers:
        return "openai"
    if ev.google_status or ev.reasons or ev.quota_ids:
        return "gemini"
    parsed = ev.parsed
    if isinstance(parsed, Mapping) and parsed.get("type") == "error" and ev.err_type:
        return "anthropic"
    if ev.err_type and ev.err_type.endswith("_error") and ev.err_type != "server_error":
        return "anthropic"
    return None
