"""Codex CLI (``codex exec --json``).

The final error is ``turn.failed.error.message`` (else the last ``error`` event that is not
a "Reconnecting…" notice). Codex writes its own phrases around provider text:
"exceeded retry limit, last status: 429 …", "unexpected status 401 Unauthorized: …",
"Quota exceeded. Check your plan and billing details.", "Codex ran out of room in the
model's context window.", "stream disconnected before completion: …" and, for a 500 with no
status at all, "We're currently experiencing high demand …".
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from backstay.classify.agents._common import (
    from_text,
    json_objects,
    no_error_event,
)
from backstay.failure import Failure
from backstay.taxonomy import FailureKind

AGENT = "codex"
_FAMILY = "openai"


def _message(event: dict[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    message = event.get("message")
    return message if isinstance(message, str) else ""


def _first_specific(messages: list[str], exit_code: int | None, now: _dt.datetime) -> Failure:
    """The failure of the first message that names a cause; else that of the first."""
    found = [
        from_text(m, agent=AGENT, family=_FAMILY, now=now, exit_code=exit_code)
        for m in messages[:20]
    ]
    return next((f for f in found if f.kind is not FailureKind.UNKNOWN), found[0])


def check(text: str, exit_code: int | None, now: _dt.datetime) -> Failure | None:
    objects = json_objects(text)
    failed = [o for o in objects if o.get("type") == "turn.failed"]
    errors = [
        o
        for o in objects
        if o.get("type") == "error" and not _message(o).startswith("Reconnecting")
    ]
    completed = any(o.get("type") == "turn.completed" for o in objects)
    if failed or errors:
        # The final error first, then the earlier ones: a generic last word ("exceeded retry
        # limit") must not hide the specific error printed before it in the same run.
        messages = [m for m in map(_message, [*failed[-1:], *reversed(errors)]) if m]
        return _first_specific(messages, exit_code, now) if messages else None
    if completed or exit_code == 0:
        return None
    if objects:
        return no_error_event(AGENT, text, _FAMILY, exit_code=exit_code, now=now)
    message = text.strip()[-4000:]
    if not message:
        return None
    return from_text(
        message,
        agent=AGENT,
        family=_FAMILY,
        now=now,
        exit_code=exit_code,
    )
