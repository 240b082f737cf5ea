"""Gemini CLI (``gemini -p --output-format json|stream-json``).

Its exit code is the HTTP status modulo 256 (429 → 173, 500 → 244, 400 → 144) and small
codes for its own fatal errors (41 auth, 42 input, 44 sandbox setup, 52 config, 53 turn limit,
130 cancelled), which in json mode it also writes into ``error.code``.
In json mode the error goes to stderr as ``{"error": {"type", "message", "code"}}``; in
stream-json mode stdout ends with a ``result`` whose message often embeds the raw provider
body (``[API Error: {...}]``), which is read as a Gemini response.

A reply the CLI cannot use (no finish reason, a safety stop with no text, a malformed
function call) ends a stream-json run with exit code 0, an ``error`` event naming the
reason and a ``result`` with ``status: error``: a failure, classified by that reason.
A prompt the provider blocked (``promptFeedback.blockReason``) reaches the CLI as a
stream without a finish reason: the block's reason is lost, so it is an unrecognised
agent failure, not a content-policy one.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from backstay.classify._http import as_int
from backstay.classify.agents._common import (
    coded,
    from_text,
    json_objects,
    outside_json,
    status_from_text,
)
from backstay.failure import Failure

AGENT = "gemini-cli"
_FAMILY = "gemini"

_FATAL_EXIT = {
    41: "ERR_AGENT_CONFIG",
    42: "ERR_REQUEST_INVALID",
    44: "ERR_AGENT_CONFIG",
    52: "ERR_AGENT_CONFIG",
    53: "ERR_LIMIT_MAX_TURNS",
    130: "ERR_CANCELLED",
}
# The CLI's own words for a reply it cannot use (its InvalidStreamError reasons).
_INVALID_STREAM = (
    ("due to safety settings", "ERR_LLM_CONTENT_FILTER"),
    ("(MAX_TOKENS) with empty response", "ERR_OUTPUT_TRUNCATED"),
    ("malformed function call", "ERR_OUTPUT_INVALID"),
    ("unexpected tool call", "ERR_OUTPUT_INVALID"),
    ("without a finish reason", "ERR_RESPONSE_MALFORMED"),
)
_HTTP_STATUSES = (400, 401, 403, 404, 408, 409, 413, 429, 499, 500, 502, 503, 504, 529)
_STATUS_BY_EXIT = {s & 0xFF: s for s in _HTTP_STATUSES}


def _error_of(objects: list[dict[str, Any]]) -> Mapping[str, Any] | None:
    for obj in reversed(objects):
        error = obj.get("error")
        if isinstance(error, Mapping) and (obj.get("type") in (None, "result", "error")):
            return error
    return None


def _failed_run(objects: list[dict[str, Any]]) -> str | None:
    """The reason a stream-json run gave for ending with ``status: error`` and no error
    object (its last ``error`` event); ``None`` unless it ended so."""
    results = [o for o in objects if o.get("type") == "result"]
    if not results or results[-1].get("status") != "error" or "error" in results[-1]:
        return None
    events = [o for o in objects if o.get("type") == "error" and o.get("message")]
    return str(events[-1]["message"]) if events else "the run ended with status error"


def check(text: str, exit_code: int | None, now: _dt.datetime) -> Failure | None:
    objects = json_objects(text)
    reason = _failed_run(objects)
    if reason is not None:
        code = next((c for words, c in _INVALID_STREAM if words in reason), None)
        if code is not None:
            why = f"the CLI's stream error: {reason[:80]!r}"
            return coded(code, reason, agent=AGENT, family=_FAMILY, exit_code=exit_code, why=why)
        return from_text(reason, agent=AGENT, family=_FAMILY, now=now, exit_code=exit_code)
    error = _error_of(objects)
    if error is None:
        ok = any(o.get("status") == "success" or "response" in o for o in objects)
        if exit_code == 0 or (exit_code is None and ok):
            return None
        # In stream-json mode only what the CLI printed outside the stream is evidence.
        message = (outside_json(text) if objects else text.strip())[-4000:]
        status = None
    else:
        message = str(error.get("message") or "")
        status = as_int(error.get("code"))
        if status is not None and not 400 <= status < 600:
            # The CLI's own exit code, written into the JSON: not an HTTP status.
            exit_code = status if exit_code is None else exit_code
            status = None
    status = status or status_from_text(message)
    if status is None and exit_code in _FATAL_EXIT:
        found = from_text(message, agent=AGENT, family=_FAMILY, now=now, exit_code=exit_code)
        if found.code != "ERR_AGENT_FAILED":
            return found
        return coded(
            _FATAL_EXIT[exit_code],
            message,
            agent=AGENT,
            family=_FAMILY,
            exit_code=exit_code,
            why=f"exit code {exit_code} (the CLI's own fatal error)",
        )
    if status is None and exit_code is not None:
        status = _STATUS_BY_EXIT.get(exit_code)
    return from_text(
        message or f"gemini exited with {exit_code}",
        agent=AGENT,
        family=_FAMILY,
        status=status,
        now=now,
        exit_code=exit_code,
    )
