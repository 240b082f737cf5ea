"""opencode (``opencode run --format json``).

Errors are ``{"type": "error", "error": {"name", "data": {"message", "statusCode",
"isRetryable", "responseHeaders", "responseBody"}}}``: the provider's own status, headers
and body travel inside, so they are classified as the provider's response.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from backstay.classify._http import as_int
from backstay.classify.agents._common import coded, from_text, json_objects, status_from_text
from backstay.taxonomy import Failure

AGENT = "opencode"

_NAMES = {
    "ContextOverflowError": "ERR_LLM_CONTEXT_LENGTH",
    "ProviderAuthError": "ERR_HTTP_401_UNAUTHORIZED",
    "MessageOutputLengthError": "ERR_OUTPUT_TRUNCATED",
    "MessageAbortedError": "ERR_CANCELLED",
    "StructuredOutputError": "ERR_OUTPUT_INVALID",
}


def check(text: str, exit_code: int | None, now: _dt.datetime) -> Failure | None:
    objects = json_objects(text)
    errors = [
        o for o in objects if o.get("type") == "error" and isinstance(o.get("error"), Mapping)
    ]
    if not errors:
        if exit_code == 0 or (exit_code is None and objects):
            return None
        message = text.strip()[-4000:]
        return from_text(
            message,
            agent=AGENT,
            family=None,
            status=status_from_text(message),
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
        return coded(_NAMES[name], message, agent=AGENT, family=None, exit_code=exit_code)
    body = data.get("responseBody")
    return from_text(
        message,
        agent=AGENT,
        family=None,
        status=as_int(data.get("statusCode")) or status_from_text(message),
        headers=raw_headers if isinstance(raw_headers, Mapping) else None,
        body=body if body else None,
        now=now,
        exit_code=exit_code,
    )
