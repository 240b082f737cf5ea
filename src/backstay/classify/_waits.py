"""Wait hints: how long a provider asks us to wait, and when a quota resets.

Sources, strongest first: ``retry-after-ms``, ``retry-after`` (seconds or HTTP-date),
Google ``RetryInfo.retryDelay``, rate-limit reset headers (OpenAI relative durations,
Anthropic absolute RFC 3339 times; the latest of the exhausted dimensions), and waits
written in messages ("try again in 34.337s"). Every parser returns ``None`` on anything
it cannot read.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping

_UTC = _dt.UTC
# Waits beyond this are not waits but nonsense (the anthropic SDK clamps at ~49.7 days).
MAX_HINT_S = 4_294_967.0

_GO_DURATION = re.compile(r"^\s*((?:\d+(?:\.\d+)?(?:h|ms|us|µs|ns|m|s))+)\s*$")
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _finite(value: float) -> float | None:
    if math.isnan(value) or math.isinf(value) or value < 0:
        return None
    return min(value, MAX_HINT_S)


def parse_float(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return _finite(float(value.strip()))
    except (ValueError, AttributeError):
        return None


def parse_go_duration(value: str | None) -> float | None:
    """Seconds in ``6ms``, ``1.5s``, ``6m0s``, ``1h2m3s``, or a bare number of seconds."""
    if not value:
        return None
    match = _GO_DURATION.match(value)
    if match is None:
        return parse_float(value)
    total = sum(float(n) * _UNIT_S[unit] for n, unit in _GO_PART.findall(match.group(1)))
    return _finite(total)


def parse_datetime(value: str | None) -> _dt.datetime | None:
    """An aware datetime from RFC 3339 / ISO 8601, an HTTP-date, or a Unix epoch."""
    if not value:
        return None
    text = value.strip()
    if re.fullmatch(r"\d{9,13}(\.\d+)?", text):
        seconds = float(text)
        if seconds > 1e12:  # epoch milliseconds
            seconds /= 1000.0
        try:
            return _dt.datetime.fromtimestamp(seconds, tz=_UTC)
        except (OverflowError, OSError, ValueError):
            return None
    try:
        parsed = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            import email.utils  # noqa: PLC0415 - an HTTP date is rare; not paid at import

            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_UTC)
    return parsed


def _seconds_until(when: _dt.datetime, now: _dt.datetime) -> float:
    return max(0.0, (when - now).total_seconds())


def retry_after_from_headers(headers: Mapping[str, str], now: _dt.datetime) -> float | None:
    """``retry-after-ms``, then ``retry-after`` as seconds or as an HTTP-date."""
    ms = parse_float(headers.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = parse_float(raw)
    if seconds is not None:
        return seconds
    when = parse_datetime(raw)
    return None if when is None else min(_seconds_until(when, now), MAX_HINT_S)


_DIMENSIONS = ("requests", "tokens", "input-tokens", "output-tokens")


def _exhausted(headers: Mapping[str, str], prefix: str, dim: str, order: str) -> bool:
    name = f"{prefix}remaining-{dim}" if order == "openai" else f"{prefix}{dim}-remaining"
    remaining = parse_float(headers.get(name))
    return remaining is not None and remaining <= 0


def reset_wait_from_headers(headers: Mapping[str, str], now: _dt.datetime) -> float | None:
    """The wait until the rate-limit window resets, from OpenAI or Anthropic headers.

    Takes the latest reset among the dimensions whose ``remaining`` is zero, or among all
    dimensions when none says so.
    """
    candidates: list[tuple[bool, float]] = []
    for dim in _DIMENSIONS:
        seconds = parse_go_duration(headers.get(f"x-ratelimit-reset-{dim}"))
        if seconds is not None:
            candidates.append((_exhausted(headers, "x-ratelimit-", dim, "openai"), seconds))
        when = parse_datetime(headers.get(f"anthropic-ratelimit-{dim}-reset"))
        if when is not None:
            spent = _exhausted(headers, "anthropic-ratelimit-", dim, "anthropic")
            candidates.append((spent, _seconds_until(when, now)))
    if not candidates:
        return None
    exhausted = [s for flag, s in candidates if flag]
    return max(exhausted or [s for _flag, s in candidates])


_UNIT_WORD = (
    r"(?:ms|milliseconds?|d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)(?![a-z])"
)
_DURATION_TEXT = rf"(?:\d+(?:\.\d+)?\s*{_UNIT_WORD}[\s,]*(?:and\s+)?)+"
# "Please try again in 34.337s", "try again in 6m0s", "Please retry in 35.4s",
# "retry after 6 seconds", "try again in 4 days 10 hours 5 minutes", "reset after 4h28m20s",
# and an open circuit's "next probe in 27.412 s" (``CircuitOpen``, as the gateway words it).
_MESSAGE_WAIT = re.compile(
    rf"(?i)\b(?:try again|retry|resets?|will reset|next probe)\s+(?:in|after)\s+"
    rf"({_DURATION_TEXT})"
)
_DURATION_PART = re.compile(rf"(?i)(\d+(?:\.\d+)?)\s*({_UNIT_WORD})")


def _unit_seconds(unit: str) -> float:
    unit = unit.lower()
    if unit == "ms" or unit.startswith("milli"):
        return 1e-3
    return {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}[unit[0]]


def wait_from_message(message: str) -> float | None:
    """A wait written in an error message, in seconds: the last one written, since a
    transcript of retries ends with the latest word."""
    match = None
    for match in _MESSAGE_WAIT.finditer(message):  # noqa: B007 - the last match is wanted
        pass
    if match is None:
        return None
    parts = _DURATION_PART.findall(match.group(1))
    return _finite(sum(float(n) * _unit_seconds(u) for n, u in parts)) if parts else None


_REGAIN = re.compile(
    r"(?i)(?:regain access|access will (?:be )?restor\w*|resets?|reset (?:at|on))\s+(?:on|at)?\s*"
    r"(\d{4}-\d{2}-\d{2})(?:[ T,]+(?:at\s+)?(\d{1,2}:\d{2}(?::\d{2})?))?\s*(UTC|Z)?"
)
_EPOCH_SUFFIX = re.compile(r"\|\s*(\d{10,13})\s*$", re.MULTILINE)
_CLOCK_RESET = re.compile(
    r"(?i)\bresets?\s+(?:at\s+|on\s+)?"
    r"(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2}),?\s+(?:at\s+)?)?"
    r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\s*\(([A-Za-z_]+(?:/[A-Za-z_\-+0-9]+)*)\)"
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _next_wall_clock(
    hour: int,
    minute: int,
    tz_name: str,
    now: _dt.datetime,
    month_day: tuple[int, int] | None = None,
) -> _dt.datetime | None:
    """The next time after ``now`` that the wall clock in ``tz_name`` shows ``hour:minute``
    (on ``month_day`` if given)."""
    try:
        from zoneinfo import ZoneInfo  # noqa: PLC0415 - a named zone is rare; not paid at import

        zone = ZoneInfo(tz_name)
    except Exception:
        return None
    local_now = now.astimezone(zone)
    try:
        if month_day is None:
            candidate = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
            if candidate <= local_now:
                candidate += _dt.timedelta(days=1)
        else:
            month, day = month_day
            candidate = local_now.replace(
                month=month, day=day, hour=hour, minute=minute, second=0, microsecond=0
            )
            if candidate <= local_now - _dt.timedelta(days=1):
                candidate = candidate.replace(year=candidate.year + 1)
    except ValueError:  # Feb 30 and the like
        return None
    return candidate.astimezone(_UTC)


def resets_at_from_message(message: str, now: _dt.datetime) -> _dt.datetime | None:
    """When a quota or usage cap resets, as written in a message.

    Reads ``…|1735689600`` (Claude usage limits), ``resets 4:50am (Europe/Rome)``, and
    ``regain access on 2025-10-01 at 00:00 UTC``.
    """
    match = _EPOCH_SUFFIX.search(message)
    if match:
        when = parse_datetime(match.group(1))
        if when is not None:
            return when
    match = _CLOCK_RESET.search(message)
    if match:
        month_name, day, hour_s, minute_s, meridiem, zone = match.groups()
        hour, minute = int(hour_s), int(minute_s or 0)
        if (meridiem or "").lower() == "pm" and hour < 12:
            hour += 12
        elif (meridiem or "").lower() == "am" and hour == 12:
            hour = 0
        month_day = (_MONTHS.index(month_name.lower()[:3]) + 1, int(day)) if month_name else None
        if 0 <= hour < 24 and 0 <= minute < 60:
            return _next_wall_clock(hour, minute, zone, now, month_day)
    match = _REGAIN.search(message)
    if match:
        time_part = match.group(2) or "00:00"
        return parse_datetime(f"{match.group(1)}T{time_part}+00:00")
    return None


def next_pacific_midnight(now: _dt.datetime) -> _dt.datetime | None:
    """Google's per-day quotas reset at midnight Pacific time."""
    return _next_wall_clock(0, 0, "America/Los_Angeles", now)


def google_retry_delay(value: object) -> float | None:
    """``RetryInfo.retryDelay``: ``"26s"``, ``"1.5s"``, or ``{"seconds": 26, "nanos": …}``."""
    if isinstance(value, str):
        return parse_go_duration(value)
    if isinstance(value, Mapping):
        try:
            seconds = float(value.get("seconds", 0) or 0)
            nanos = float(value.get("nanos", 0) or 0)
        except (TypeError, ValueError):
            return None
        return _finite(seconds + nanos / 1e9)
    return None
