"""One setting's type and limits: checked against user input, and rendered as JSON Schema.

The same ``Field`` drives both, so the schema and the checks cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Iterable
from typing import Any, Literal

from backstay.config._paths import Path
from backstay.taxonomy import CODES, FailureKind

FieldType = Literal["integer", "number", "string", "boolean", "strings", "kinds", "kinds_or_codes"]

KIND_VALUES: tuple[str, ...] = tuple(kind.value for kind in FailureKind)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """A leaf setting. ``minimum`` is inclusive unless ``exclusive_minimum``; ``choices``
    limits a string; ``excluded`` removes kinds from a list of kinds. ``pattern`` (a regular
    expression, described to people by ``pattern_hint``) limits a string or each item of a
    list of strings (``strings``). A ``sensitive`` value is never repeated in a message."""

    type: FieldType
    help: str
    minimum: float | None = None
    exclusive_minimum: bool = False
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    nullable: bool = False
    pattern: str | None = None
    pattern_hint: str = ""
    sensitive: bool = False

    @property
    def allowed(self) -> tuple[str, ...]:
        """The values a string or list item may take (empty: any string)."""
        if self.type == "kinds":
            return tuple(k for k in KIND_VALUES if k not in self.excluded)
        if self.type == "kinds_or_codes":
            return (*KIND_VALUES, *sorted(CODES))
        return self.choices


MAX_LISTED = 12


def listing(names: Iterable[str]) -> str:
    """``a, b, c``; a long list is cut short with its length."""
    items = list(names)
    if len(items) <= MAX_LISTED:
        return ", ".join(items)
    return f"{', '.join(items[:MAX_LISTED])} … ({len(items)} in all)"


def suggestion(value: object, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss, else an empty string."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe_value(value: object) -> str:
    """How a wrong value is named in a message: ``null``, ``a list``, ``'fast'`` …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _check_number(field: Field, value: object) -> str | None:
    if field.type == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        return f"must be a whole number, got {describe_value(value)}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number, got {describe_value(value)}"
    if math.isnan(value) or math.isinf(value):
        return f"must be finite, got {value!r}"
    if field.minimum is not None:
        if field.exclusive_minimum and value <= field.minimum:
            return f"must be > {field.minimum:g}, got {value!r}"
        if value < field.minimum:
            return f"must be >= {field.minimum:g}, got {value!r}"
    if field.maximum is not None and value > field.maximum:
        return f"must be <= {field.maximum:g}, got {value!r}"
    return None


def _shown(field: Field, value: object) -> str:
    if field.sensitive and not isinstance(value, bool | int | float | list | dict):
        return "a value not shown here"
    return describe_value(value)


def _check_text(field: Field, value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be text, got {_shown(field, value)}"
    if field.pattern is not None and not re.fullmatch(field.pattern, value):
        got = "" if field.sensitive else f", got {value!r}"
        return f"must be {field.pattern_hint or f'text matching {field.pattern}'}{got}"
    return None


def _check_item(field: Field, value: object) -> str | None:
    allowed = field.allowed
    if field.type in ("string", "strings") and not allowed:
        return _check_text(field, value)
    if isinstance(value, str) and value in allowed:
        return None
    if field.type == "string":
        return f"must be one of {', '.join(allowed)}; got {describe_value(value)}" + suggestion(
            value, allowed
        )
    what = "a failure kind" if field.type == "kinds" else "a failure kind or an ERR_* code"
    if isinstance(value, str) and value in field.excluded:
        return f"{value!r} is not allowed here; one of {', '.join(allowed)}"
    return f"{describe_value(value)} is not {what}" + suggestion(value, allowed)


def check(field: Field, value: object) -> list[tuple[Path, str]]:
    """Every problem with ``value``, each with the sub-path it concerns (``()`` or a list
    item ``("[i]",)``)."""
    if value is None:
        return [] if field.nullable else [((), f"must be set, got null ({_hint(field)})")]
    if field.type in ("integer", "number"):
        reason = _check_number(field, value)
    elif field.type == "string":
        reason = _check_item(field, value)
    elif field.type == "boolean":
        ok = isinstance(value, bool)
        reason = None if ok else f"must be true or false, got {describe_value(value)}"
    elif not isinstance(value, list):
        reason = f"must be a list, got {_shown(field, value)}"
        if isinstance(value, str) and not field.sensitive:
            reason += f"; write [{value}]"
    else:
        return [
            ((f"[{i}]",), item_reason)
            for i, item in enumerate(value)
            if (item_reason := _check_item(field, item)) is not None
        ]
    return [] if reason is None else [((), reason)]


def _hint(field: Field) -> str:
    return {
        "integer": "a whole number",
        "number": "a number",
        "string": "text",
        "boolean": "true or false",
        "strings": "a list of texts",
        "kinds": "a list of failure kinds",
        "kinds_or_codes": "a list of failure kinds or ERR_* codes",
    }[field.type]


def json_schema(field: Field) -> dict[str, Any]:
    """The JSON Schema of one field."""
    out: dict[str, Any] = {"description": field.help}
    if field.type in ("integer", "number"):
        out["type"] = [field.type, "null"] if field.nullable else field.type
        if field.minimum is not None:
            key = "exclusiveMinimum" if field.exclusive_minimum else "minimum"
            out[key] = _json_number(field.minimum)
        if field.maximum is not None:
            out["maximum"] = _json_number(field.maximum)
    elif field.type == "string":
        out["type"] = ["string", "null"] if field.nullable else "string"
        if field.choices:
            out["enum"] = list(field.choices)
        if field.pattern is not None:
            out["pattern"] = field.pattern
    elif field.type == "boolean":
        out["type"] = ["boolean", "null"] if field.nullable else "boolean"
    elif field.type == "strings":
        out["type"] = ["array", "null"] if field.nullable else "array"
        item: dict[str, Any] = {"type": "string"}
        if field.pattern is not None:
            item["pattern"] = field.pattern
        out["items"] = item
    else:
        out["type"] = ["array", "null"] if field.nullable else "array"
        out["items"] = {"type": "string", "enum": list(field.allowed)}
    return out


def _json_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
