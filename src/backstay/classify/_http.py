"""Reading raw HTTP material without ever raising: headers of any shape, bodies of any type.

Bodies are read up to ``_MAX_BODY_CHARS``; JSON nested deeper than the interpreter's
recursion limit allows is read as text (``RecursionError`` is caught where JSON is
parsed), so the status and headers still decide.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay.classify._guard import unreadable

_MAX_BODY_CHARS: Final = 200_000
# At most this many characters are examined looking for JSON embedded in text, in all.
_MAX_EMBEDDED_SCAN: Final = 64 * 1024
# What a JSON parser raises on a document it cannot read: bad syntax, or nesting too deep.
_UNPARSABLE: Final = (ValueError, RecursionError)


def normalize_headers(headers: object) -> dict[str, str]:
    """Lower-cased name → value for any mapping, header object or sequence of pairs.

    Repeated headers keep their first value. Anything unreadable gives ``{}``.
    """
    if headers is None:
        return {}
    out: dict[str, str] = {}
    try:
        items: Iterable[Any]
        if hasattr(headers, "multi_items"):  # httpx.Headers
            items = headers.multi_items()
        elif isinstance(headers, Mapping) or hasattr(headers, "items"):
            items = headers.items()
        else:
            items = headers  # type: ignore[assignment]
        for pair in items:
            name, value = pair
            if isinstance(name, bytes):
                name = name.decode("latin-1")
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            key = str(name).strip().lower()
            if key and key not in out:
                out[key] = str(value).strip()
    except Exception:
        return out
    except BaseException as err:  # the headers object's own KeyboardInterrupt …
        unreadable(err)
    return out


_MAX_SSE_EVENTS = 10_000


def sse_events(text: str) -> list[tuple[str, Any]]:
    """``(event name, parsed data)`` for each JSON ``data:`` line of an SSE transcript."""
    events: list[tuple[str, Any]] = []
    event = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            try:
                events.append((event, json.loads(line[5:].strip())))
            except _UNPARSABLE:
                continue
            if len(events) >= _MAX_SSE_EVENTS:
                break
    return events


def _is_error_event(event: str, data: Any) -> bool:
    return event == "error" or (
        isinstance(data, Mapping)
        and ("error" in data or data.get("type") in ("error", "response.failed"))
    )


def _sse_error_data(text: str) -> Any | None:
    """The data of the first error event of an SSE transcript, else of its last event."""
    events = sse_events(text)
    for event, data in events:
        if _is_error_event(event, data):
            return data
    return events[-1][1] if events else None


def parse_body(body: object) -> tuple[Any | None, str]:
    """``(parsed JSON or None, text)`` for a str / bytes / parsed JSON / None body."""
    if body is None:
        return None, ""
    if isinstance(body, (bytes, bytearray, memoryview)):
        try:
            body = bytes(body)[: _MAX_BODY_CHARS * 4].decode("utf-8", errors="replace")
        except Exception:
            return None, ""
    if isinstance(body, str):
        text = body[:_MAX_BODY_CHARS]
        stripped = text.strip()
        if not stripped:
            return None, ""
        if stripped[0] in "{[":
            try:
                return json.loads(stripped), text
            except RecursionError:  # nested too deep: the status and headers decide
                return None, text
            except ValueError:
                pass
        if stripped.startswith(("event:", "data:")):
            data = _sse_error_data(stripped)
            if data is not None:
                return data, text
        embedded = find_embedded_json(stripped)
        return embedded, text
    if isinstance(body, (Mapping, list)):
        try:
            text = json.dumps(body, default=str, ensure_ascii=False)[:_MAX_BODY_CHARS]
        except Exception:
            text = _text_of(body)
        except BaseException as err:  # an object inside the body raised it from __str__
            unreadable(err)
        return body, text
    return None, _text_of(body)


def _text_of(body: object) -> str:
    try:
        return str(body)[:_MAX_BODY_CHARS]
    except Exception:  # RecursionError included: a structure nested too deep to print
        return ""
    except BaseException as err:
        unreadable(err)


_ERROR_KEYS = frozenset({"error", "type", "error_type", "error_code"})


def find_embedded_json(text: str) -> Any | None:
    """The first JSON object with an ``error`` key embedded in free text, or ``None``.

    Agent CLIs and SDK messages wrap provider bodies: ``Error code: 429 - {'error': …}``,
    ``[API Error: {"error": …}]``. Python-repr dicts are tried as JSON after quote swapping.
    """
    start = text.find("{")
    tries = 0
    budget = _MAX_EMBEDDED_SCAN  # characters examined, over every try
    while start != -1 and tries < 8 and budget > 0:
        tries += 1
        end = min(len(text), start + budget)
        close = _closing_brace(text, start, end)
        budget -= (end if close is None else close + 1) - start
        if close is not None:
            parsed = _loads_lenient(text[start : close + 1])
            if isinstance(parsed, Mapping) and _ERROR_KEYS.intersection(parsed):
                return parsed
        start = text.find("{", start + 1)
    return None


def _closing_brace(text: str, start: int, end: int) -> int | None:
    """The index of the brace closing the one at ``start``, looked for before ``end``."""
    depth = 0
    in_str: str | None = None
    escaped = False
    for i in range(start, end):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'":
            in_str = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _loads_lenient(fragment: str) -> Any | None:
    try:
        return json.loads(fragment)
    except _UNPARSABLE:
        pass
    try:
        value = ast.literal_eval(fragment)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, Mapping) else None


_MAX_INT_DIGITS: Final = 18


def as_int(value: object) -> int | None:
    """An int from an int or a string of up to 18 decimal digits; ``None`` otherwise (bools
    excluded, and digits ``int`` cannot read, such as ``"²"``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdecimal() and len(text) <= _MAX_INT_DIGITS:
            return int(text)
    return None


def as_list(value: object) -> list[Any]:
    """``value`` if it is a list, else ``[]``: bodies put anything anywhere."""
    return value if isinstance(value, list) else []


def as_str(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None
