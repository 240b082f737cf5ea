"""The error events of an SSE stream, found without reading the rest as an error.

A stream is checked by its error events only: an Anthropic ``event: error``, an OpenAI
chunk ``data: {"error": …}``, a Responses ``type: error`` or ``response.failed``, a
Gemini ``{"error": …}`` chunk. Each one found is handed to the classifier on its own;
the ordinary events around it (``message_start`` and the rest) are never classified, so
none of them can be mistaken for an error.
"""

from __future__ import annotations

import json
import re
from typing import Final

__all__ = ["ended", "error_event"]

_BLANK_LINE: Final = re.compile(r"\r?\n\r?\n")
_ERROR_TYPES: Final = frozenset({"error", "response.failed"})
# The events a provider ends a whole stream with: Anthropic's ``message_stop``, the
# Responses API's ``response.completed`` / ``response.incomplete``; Chat Completions ends
# with ``data: [DONE]``, and a Gemini stream's last chunk carries a ``finishReason``.
_LAST_TYPES: Final = frozenset({"message_stop", "response.completed", "response.incomplete"})
# How many of a stream's last events are looked at for its end (a keep-alive ``ping``
# may follow it).
_TAIL_EVENTS: Final = 3


def _json_object(data: str) -> dict[str, object] | None:
    """An event's data read as a JSON object (``None``: it is not one)."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _is_error(name: str | None, data: str) -> bool:
    if name in _ERROR_TYPES:
        return True
    if "error" not in data:  # the common case: no JSON to read
        return False
    parsed = _json_object(data)
    if parsed is None:
        return False
    return parsed.get("error") is not None or parsed.get("type") in _ERROR_TYPES


def error_event(body: bytes) -> str | None:
    """The text of the first error event of the SSE ``body`` (``None``: none). An event
    cut at the end of ``body`` is read as far as it goes."""
    for block, name, data in _events(body.decode("utf-8", errors="replace")):
        if _is_error(name, data):
            return block.strip() + "\n\n"
    return None


def _events(text: str) -> list[tuple[str, str | None, str]]:
    """The SSE events of ``text``, in order: each one's block, name and data."""
    events: list[tuple[str, str | None, str]] = []
    for block in _BLANK_LINE.split(text):
        name: str | None = None
        data: list[str] = []
        for line in block.splitlines():
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if name is not None or data:
            events.append((block, name, "\n".join(data)))
    return events


def _is_last(name: str | None, data: str) -> bool:
    if name in _LAST_TYPES or data.strip() == "[DONE]":
        return True
    if "type" not in data and "finishReason" not in data:
        return False
    parsed = _json_object(data)
    if parsed is None:
        return False
    if parsed.get("type") in _LAST_TYPES:
        return True
    candidates = parsed.get("candidates")
    return isinstance(candidates, list) and any(
        isinstance(candidate, dict) and candidate.get("finishReason") for candidate in candidates
    )


def ended(body: bytes) -> bool:
    """Whether the SSE ``body`` holds its provider's last event (among its last few): a
    stream without it stopped early, however cleanly its connection ended."""
    tail = body[-65_536:].decode("utf-8", errors="replace")
    return any(_is_last(name, data) for _, name, data in _events(tail)[-_TAIL_EVENTS:])
