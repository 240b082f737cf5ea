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

__all__ = ["error_event"]

_BLANK_LINE: Final = re.compile(r"\r?\n\r?\n")
_ERROR_TYPES: Final = frozenset({"error", "response.failed"})


def _is_error(name: str | None, data: str) -> bool:
    if name in _ERROR_TYPES:
        return True
    if "error" not in data:  # the common case: no JSON to read
        return False
    try:
        parsed = json.loads(data)
    except ValueError:
        return False
    if not isinstance(parsed, dict):
        return False
    return parsed.get("error") is not None or parsed.get("type") in _ERROR_TYPES


def error_event(body: bytes) -> str | None:
    """The text of the first error event of the SSE ``body`` (``None``: none). An event
    cut at the end of ``body`` is read as far as it goes."""
    text = body.decode("utf-8", errors="replace")
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
        if (name is not None or data) and _is_error(name, "\n".join(data)):
            return block.strip() + "\n\n"
    return None
