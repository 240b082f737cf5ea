"""Which of the wait hints a failure carries applies, and where it came from.

Structured hints outrank prose: a body's ``resets_at`` / ``resets_in_seconds``, Claude's
unified reset and an epoch ``x-ratelimit-reset`` say when a quota resets better than
"resets in 10 days" in the message beside them; ``retry-after`` and Google's ``RetryInfo``
say how long to wait better than "try again in 7 seconds".
"""

from __future__ import annotations

import datetime as _dt

from backstay.classify._evidence import Evidence
from backstay.classify._waits import (
    MAX_HINT_S,
    next_pacific_midnight,
    parse_datetime,
    reset_wait_from_headers,
    resets_at_from_message,
    retry_after_from_headers,
    wait_from_message,
)
from backstay.taxonomy import CODES, FailureKind

# (retry_after_s, resets_at, where the hint was read; None when there was none)
Timing = tuple[float | None, _dt.datetime | None, str | None]


def structured_reset(ev: Evidence, now: _dt.datetime) -> tuple[_dt.datetime | None, str | None]:
    """A reset stated in fields or headers, never in prose, and the field it came from."""
    epoch = ev.extra.get("reset_epoch")
    if epoch is not None:
        return parse_datetime(str(epoch)), "body field resets_at"
    seconds = ev.extra.get("reset_in_s")
    if seconds is not None:
        wait = min(float(seconds), MAX_HINT_S)
        return now + _dt.timedelta(seconds=wait), "body field resets_in_seconds"
    resets_at = parse_datetime(ev.headers.get("anthropic-ratelimit-unified-reset"))
    if resets_at is not None:
        return resets_at, "header anthropic-ratelimit-unified-reset"
    if ev.headers.get("x-ratelimit-reset", "").isdigit():  # epoch (OpenRouter)
        return parse_datetime(ev.headers["x-ratelimit-reset"]), "header x-ratelimit-reset"
    return None, None


def _quota(ev: Evidence, code: str, source: str, now: _dt.datetime) -> Timing:
    resets_at, where = structured_reset(ev, now)
    if resets_at is None:
        resets_at, where = resets_at_from_message(ev.message, now), "reset time in the message"
    if resets_at is None and source != "provider_signal":
        # "try again in 4 days 10 hours"; never Google's short hint on a per-day quota
        wait = wait_from_message(ev.message)
        if wait is not None:
            resets_at, where = now + _dt.timedelta(seconds=wait), "wait in the message"
    if resets_at is None and code == "ERR_LLM_DAILY_QUOTA" and ev.family == "gemini":
        resets_at, where = next_pacific_midnight(now), "Google's per-day quotas reset at midnight"
    if resets_at is None:
        return None, None, None
    return max(0.0, (resets_at - now).total_seconds()), resets_at, where


def timing(ev: Evidence, code: str, source: str, now: _dt.datetime) -> Timing:
    """How long to wait (or until when) before the failure may pass, and from which hint."""
    kind = CODES[code].kind
    if kind is FailureKind.QUOTA_EXHAUSTED:
        return _quota(ev, code, source, now)
    wait = retry_after_from_headers(ev.headers, now)
    if wait is not None:
        return wait, None, "header retry-after"
    if ev.retry_delay_s is not None:
        return ev.retry_delay_s, None, "Google RetryInfo.retryDelay"
    if ev.extra.get("reset_in_s") is not None:
        return float(ev.extra["reset_in_s"]), None, "body field resets_in_seconds"
    if kind is FailureKind.RATE_LIMIT:
        wait = reset_wait_from_headers(ev.headers, now)
        if wait is not None:
            return wait, None, "rate-limit reset headers"
    wait = wait_from_message(ev.message)
    if wait is not None:
        return wait, None, "wait in the message"
    return None, None, None
