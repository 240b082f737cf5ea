"""opencode (``opencode run --format json``).

Errors are ``{"type": "error", "error": {"name", "data": {"message", "statusCode",
"isRetryable", "responseHeaders", "responseBody"}}}``: the provider's own status, headers
and body travel inside, so they are classified as the provider's response.
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
    no_error_event,
)
from backstay.failure import Failure

AGENT = "opencode"

_NAMES = {
    "ContextOverflowError": "ERR_LLM_CONTEXT_LENGTH",
    "ProviderAuthError": "ERR_HTTP_401_UNAUTHORIZED",
    "MessageOutputLengthError": "ERR_OUTPUT_TRUNCATED",
    "MessageAbortedError": "ERR_CANCELLED",
    "StructuredOutputError": "ERR_OUTPUT_INVALID",
}


def _last_finish_reason(objects: list[dict[str, Any]]) -> str | None:
    for obj in reversed(objects):
        if obj.get("type") == "step_finish":
            part = obj.get("part")
            reason = part.get("reason") if isinstance(part, Mapping) else obj.get("reason")
            return reason if isinstance(reason, str) else None
    return None


def check(text: str, exit_code: int | None, now: _dt.datetime) -> Failure | None:
    objects = json_objects(text)
    errors = [
        o for o in objects if o.get("type") == "error" and isinstance(o.get("error"), Mapping)
    ]
    if not errors:
        if _last_finish_reason(objects) in ("content-filter", "content_filter"):
            return coded(
                "ERR_LLM_CONTENT_FILTER",
                "the last step finished on the provider's content filter",
                agent=AGENT,
                family=None,
                exit_code=exit_code,
            )
        if exit_code == 0 or (exit_code is None and objects):
            return None
        if objects:
            return no_error_event(AGENT, text, None, exit_code=exit_code, now=now)
        message = text.strip()[-4000:]
        return from_text(
            message,
            agent=AGENT,
            family=None,
            now=now,
            exit_code=exit_code,
        )
    error = errors[-1]["error"]
    name = str(error.get("name") or "")
    raw_data = error.get("data")
    data: Mapping[str, object] = raw_data if isinstance(raw_data, Mapping) else {}
    raw_headers = data.get("responseHeaders")
    message = str(data.get("message") or name or "error")
    if name in _NAMES:
        why = f"error.name = {name}"
        return coded(_NAMES[name], message, agent=AGENT, family=None, exit_code=exit_code, why=why)
    body = data.get("responseBody")
    return from_text(
        message,
        agent=AGENT,
        family=None,
        status=as_int(data.get("statusCode")),
        headers=raw_headers if isinstance(raw_headers, Mapping) else None,
        body=body if body else None,
        now=now,
        exit_code=exit_code,
    )
