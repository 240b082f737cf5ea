"""``check_output``: the small JSON-schema subset the runtime validates outputs against
without a schema library: ``type``, ``required``, ``properties``, ``enum``, ``items``,
``minLength``. Each problem becomes a ``ValidationIssue`` with a JSON path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.runtime.results import ValidationIssue, ValidationResult

__all__ = ["check_output"]

_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(name, (object,)))


def _walk(value: Any, schema: Mapping[str, Any], path: str, out: list[ValidationIssue]) -> None:
    kind = schema.get("type")
    if isinstance(kind, str) and not _type_ok(value, kind):
        out.append(ValidationIssue(field=path, message=f"must be of type {kind}", code="type"))
        return
    if "enum" in schema and value not in schema["enum"]:
        out.append(
            ValidationIssue(field=path, message=f"must be one of {schema['enum']}", code="enum")
        )
    if isinstance(value, str) and len(value) < int(schema.get("minLength", 0)):
        out.append(ValidationIssue(field=path, message="is too short", code="min_length"))
    if isinstance(value, dict):
        out.extend(
            ValidationIssue(field=_join(path, name), message="is required", code="required")
            for name in schema.get("required", ())
            if name not in value
        )
        for name, sub in (schema.get("properties") or {}).items():
            if name in value and isinstance(sub, Mapping):
                _walk(value[name], sub, _join(path, name), out)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{i}]", out)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def check_output(output: Any, schema: Mapping[str, Any] | None) -> ValidationResult:
    """Whether ``output`` holds to ``schema`` (``None``: anything holds)."""
    if schema is None:
        return ValidationResult(ok=True)
    issues: list[ValidationIssue] = []
    _walk(output, schema, "", issues)
    return ValidationResult(ok=not issues, errors=tuple(issues))
