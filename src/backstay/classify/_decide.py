"""The ordered decision from evidence to one ``ERR_*`` code, and the ``Failure`` built from it.

Order of evidence (first decisive wins):

1. provider-level signals that override everything: a Claude subscription window that
   says ``rejected``; Google quota ids (per-day vs per-minute) and zero quotas;
2. specific structured codes (``insufficient_quota``, ``details.error_code``,
   ``API_KEY_INVALID``, ``context_length_exceeded`` …);
3. message patterns, gated by status;
4. generic structured types (``rate_limit_error``, ``INVALID_ARGUMENT`` …);
5. the status carried in the body (Gemini ``error.code``, AI-SDK ``statusCode``) when the
   HTTP status is missing or 2xx, then the HTTP status;
6. a leftover error inside a 200 stream is a transient stream error.

``x-should-retry`` then adjusts retryability: ``false`` always wins; ``true`` only turns
a status-only client error into a retryable one, never a quota, context or auth failure.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote

from backstay.classify import anthropic, gemini, openai
from backstay.classify._bounds import bounded
from backstay.classify._evidence import Evidence
from backstay.classify._patterns import find_message
from backstay.classify._timing import timing
from backstay.classify._waits import retry_after_from_headers, wait_from_message
from backstay.failure import Failure
from backstay.taxonomy import CODES, FailureKind

_SPECIFIC: Final[Mapping[str, str]] = {
    **{k.lower(): v for k, v in gemini.SPECIFIC.items()},
    **openai.SPECIFIC,
    **anthropic.SPECIFIC,
}
_GENERIC: Final[Mapping[str, str]] = {**gemini.GENERIC, **openai.GENERIC, **anthropic.GENERIC}

_STATUS: Final[Mapping[int, str]] = {
    400: "ERR_HTTP_400_BAD_REQUEST",
    401: "ERR_HTTP_401_UNAUTHORIZED",
    402: "ERR_HTTP_402_PAYMENT_REQUIRED",
    403: "ERR_HTTP_403_FORBIDDEN",
    404: "ERR_HTTP_404_NOT_FOUND",
    408: "ERR_HTTP_408_REQUEST_TIMEOUT",
    409: "ERR_HTTP_409_CONFLICT",
    413: "ERR_HTTP_413_REQUEST_TOO_LARGE",
    422: "ERR_HTTP_422_UNPROCESSABLE",
    429: "ERR_HTTP_429_RATE_LIMITED",
    499: "ERR_HTTP_499_CLIENT_CLOSED",
    500: "ERR_HTTP_500_INTERNAL",
    502: "ERR_HTTP_502_BAD_GATEWAY",
    503: "ERR_HTTP_503_UNAVAILABLE",
    504: "ERR_HTTP_504_GATEWAY_TIMEOUT",
    529: "ERR_HTTP_529_OVERLOADED",
}

# Inside a 200 stream the status-named codes would lie; use their stream twins.
_IN_STREAM: Final[Mapping[str, str]] = {
    "ERR_HTTP_429_RATE_LIMITED": "ERR_LLM_RATE_LIMITED",
    "ERR_HTTP_529_OVERLOADED": "ERR_LLM_OVERLOADED",
    "ERR_HTTP_500_INTERNAL": "ERR_LLM_STREAM_ERROR",
    "ERR_HTTP_5XX": "ERR_LLM_STREAM_ERROR",
}

_NO_RETRY: Final[Mapping[FailureKind, str]] = {
    FailureKind.RATE_LIMIT: "ERR_RATE_LIMIT_NO_RETRY",
    FailureKind.SERVER_ERROR: "ERR_SERVER_ERROR_NO_RETRY",
    FailureKind.TIMEOUT: "ERR_TIMEOUT_NO_RETRY",
    FailureKind.UNKNOWN: "ERR_UNKNOWN_NO_RETRY",
}

_WEAK_TEXT: Final = frozenset({"ERR_LLM_RATE_LIMITED", "ERR_LLM_OVERLOADED"})
# A wait at most this long is a rate-limit window, whatever the words say (see _within_horizon).
QUOTA_HORIZON_S: Final = 3600.0
_QUOTA_SIGNALS: Final = frozenset({"resource_exhausted", "rate_limit_exceeded"})


def status_code(status: int | None) -> str | None:
    """The code the HTTP status alone gives, or ``None`` below 400."""
    if status is None or status < 400:
        return None
    if status in _STATUS:
        return _STATUS[status]
    if status < 500:
        return "ERR_HTTP_4XX"
    if status < 600:
        return "ERR_HTTP_5XX"
    return None


# Statuses a gateway or framework puts on an error it merely passes on.
_WRAPPER_STATUSES: Final = frozenset({400, 500, 502})


def _effective_status(ev: Evidence) -> int | None:
    """The HTTP status, unless the body carries a truer one: inside a stream, without a
    status, from the upstream provider under a gateway's relabelled error, or named by a
    wrapper's words ("Error code: 429 - {…}") under a generic 400 or 500."""
    trusted = ev.status is None or ev.in_stream or ev.extra.get("inner_status")
    if trusted and ev.body_status and ev.body_status >= 400:
        return ev.body_status
    named = ev.extra.get("named_status")
    if named and (ev.status is None or ev.in_stream or ev.status in _WRAPPER_STATUSES):
        return int(named)
    return ev.status


def _provider_signal(ev: Evidence) -> str | None:
    if ev.family in (None, "anthropic") and anthropic.subscription_limited(ev.headers):
        return "ERR_LLM_USAGE_LIMIT"
    google_quota = (
        ev.quota_ids
        or ev.quota_values
        or (
            ev.family in (None, "gemini")
            and (_QUOTA_SIGNALS.intersection(ev.codes) or _effective_status(ev) == 429)
        )
    )
    if google_quota:
        return gemini.quota_code(ev.quota_ids, ev.quota_values, ev.message)
    return None


def _within_horizon(ev: Evidence, code: str, now: _dt.datetime) -> bool:
    """A quota named only by words, whose own wait is short, is a rate limit after all.

    "You have exhausted your capacity … Your quota will reset after 27s" is a window that
    passes while we wait; the same words with "after 4h28m20s" are a quota to pause on.
    """
    if CODES[code].kind is not FailureKind.QUOTA_EXHAUSTED:
        return False
    wait = retry_after_from_headers(ev.headers, now)
    if wait is None:
        wait = wait_from_message(ev.message)
    return wait is not None and wait <= QUOTA_HORIZON_S


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _texts(ev: Evidence) -> list[str]:
    """The message, the gateway's raw text, their URL-decoded forms, and the structured
    codes as words (``grace_daily_limit_reached``, ``FreeUsageLimitError``)."""
    texts = [t for t in (ev.message, ev.extra.get("raw")) if isinstance(t, str) and t]
    texts += [unquote(t) for t in texts if "%" in t and unquote(t) != t]
    codes = [c for c in (ev.err_code, ev.err_type, *ev.reasons) if c]
    if codes:
        texts.append(" ".join(_CAMEL.sub(" ", c).replace("_", " ") for c in codes))
    return texts


def _refines(generic: str, by_status: str) -> bool:
    """Whether a generic body type may speak over the status: within the same kind, or a
    rate limit reported with a 5xx (Google's 503 RESOURCE_EXHAUSTED)."""
    generic_kind, status_kind = CODES[generic].kind, CODES[by_status].kind
    if generic_kind is status_kind:
        return True
    return generic_kind is FailureKind.RATE_LIMIT and status_kind is FailureKind.SERVER_ERROR


def _field(ev: Evidence, value: str) -> str:
    """The body field a structured code was read from, for the explanation."""
    for name, field in (
        ("error.code", ev.err_code),
        ("error.type", ev.err_type),
        ("error.status", ev.google_status),
    ):
        if field and field.lower() == value:
            return name
    return "error.details reason" if value in (r.lower() for r in ev.reasons) else "inner error"


def _status_words(ev: Evidence, status: int | None) -> str:
    if status is not None and status != ev.status:
        where = "named in the body" if ev.status is not None else "in the body"
        return f"status {status} {where}" + (f" under HTTP {ev.status}" if ev.status else "")
    return f"HTTP status {status}"


def decide(ev: Evidence) -> tuple[str, str, str]:
    """``(code, source, why)``: ``source`` names the kind of evidence that decided and
    ``why`` says which (the field and value, the words a pattern matched, the status)."""
    code = _provider_signal(ev)
    if code:
        return code, "provider_signal", _signal_words(ev)
    for value in ev.codes:
        if value in _SPECIFIC:
            return _SPECIFIC[value], "structured_code", f"{_field(ev, value)} = {value}"
    status = _effective_status(ev)
    found = find_message(_texts(ev), status, ev.family)
    by_status = status_code(status)
    if found:
        code, words = found
        if code in _WEAK_TEXT and by_status and CODES[by_status].kind is CODES[code].kind:
            # the words only confirm what the status says
            return by_status, "status", f"{_status_words(ev, status)}, confirmed by {words!r}"
        return code, "message", f"message pattern matched {words!r}"
    for value in ev.codes:
        if value in _GENERIC:
            generic = _GENERIC[value]
            if by_status and not _refines(generic, by_status):
                # a generic type never overrules the status class
                return by_status, "status", f"{_status_words(ev, status)} (over {value})"
            return generic, "structured_type", f"{_field(ev, value)} = {value}"
    if by_status:
        return by_status, "status", _status_words(ev, status)
    if ev.has_error_shape:
        code = "ERR_LLM_STREAM_ERROR" if ev.in_stream else "ERR_UNKNOWN"
        return code, "error_shape", "an error object that names no cause"
    return "ERR_UNKNOWN", "nothing", "no evidence of a failure"


def _signal_words(ev: Evidence) -> str:
    if ev.headers.get("anthropic-ratelimit-unified-status", "").lower() == "rejected":
        return "header anthropic-ratelimit-unified-status = rejected"
    if ev.quota_ids:
        return f"quota id {ev.quota_ids[0]}"
    return "a Google quota failure"


def _apply_should_retry(ev: Evidence, code: str, source: str) -> str:
    flag = ev.headers.get("x-should-retry", "").strip().lower()
    info = CODES[code]
    if flag == "false" and info.retryable:
        return _NO_RETRY.get(info.kind, code)
    if flag == "true" and not info.retryable:
        generic = source in ("status", "structured_type", "error_shape", "nothing")
        if generic and info.kind in (FailureKind.INVALID_REQUEST, FailureKind.UNKNOWN):
            return "ERR_PROVIDER_RETRY_REQUESTED"
    return code


def _details(ev: Evidence, source: str, why: str, wait_from: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"source": source, "evidence": why}
    if wait_from:
        details["wait_from"] = wait_from
    candidates = {
        "error_type": ev.err_type,
        "error_code": ev.err_code,
        "google_status": ev.google_status,
        "reasons": list(ev.reasons),
        "quota_ids": list(ev.quota_ids[:6]),
        "request_id": ev.headers.get("request-id") or ev.headers.get("x-request-id"),
        "should_retry": ev.headers.get("x-should-retry"),
    }
    details.update({key: value for key, value in candidates.items() if value})
    if ev.in_stream:
        details["in_stream"] = True
    if source in ("nothing", "error_shape") and ev.body_text:
        details["body_excerpt"] = ev.body_text[:500]
    return details


def build_failure(ev: Evidence, *, now: _dt.datetime | None = None) -> Failure:
    """The ``Failure`` the evidence supports. Never raises for any evidence."""
    now = now or _dt.datetime.now(_dt.UTC)
    # Patterns, wait hints and the message kept read a bounded part of long texts.
    ev.message = bounded(ev.message)
    raw = ev.extra.get("raw")
    if isinstance(raw, str):
        ev.extra["raw"] = bounded(raw)
    code, source, why = decide(ev)
    if source == "message" and _within_horizon(ev, code, now):
        code, source = status_code(_effective_status(ev)) or "ERR_LLM_RATE_LIMITED", "message_wait"
        if CODES[code].kind is not FailureKind.RATE_LIMIT:
            code = "ERR_LLM_RATE_LIMITED"
        why += ", with a wait short enough to be a rate limit"
    if ev.in_stream:
        code = _IN_STREAM.get(code, code)
    should_retry = _apply_should_retry(ev, code, source)
    if should_retry != code:
        code = should_retry
        why += f"; header x-should-retry = {ev.headers.get('x-should-retry')}"
    retry_after_s, resets_at, wait_from = timing(ev, code, source, now)
    status = ev.status if ev.status is not None else ev.body_status
    return Failure(
        code=code,
        message=ev.message or CODES[code].description,
        retry_after_s=retry_after_s,
        resets_at=resets_at,
        provider=ev.provider or ev.family,
        status=status,
        details=_details(ev, source, why, wait_from),
    )
