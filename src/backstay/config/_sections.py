"""The plain sections: ``circuit_breaker``, ``budget``, ``rate_limits``, and the policy
references ``default_policy`` and ``operation_policies``.

The first three are checked for shape only and kept as validated read-only mappings; the
objects they configure are built from them elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

from backstay.config._document import Document
from backstay.config._fields import Field, check, describe_value, listing, suggestion
from backstay.config._paths import Path
from backstay.config._spec import OPERATION_TYPES, RATE_LIMIT_FIELDS, RATE_LIMIT_KEY_PATTERN
from backstay.taxonomy import FailureKind

_RATE_LIMIT_KEY = re.compile(RATE_LIMIT_KEY_PATTERN)


def mapping(doc: Document, path: Path, raw: object, what: str) -> dict[str, Any] | None:
    """``raw`` as a mapping (null is empty); ``None`` and a problem when it is not one."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        doc.problem(path, f"must be a mapping of {what}, got {describe_value(raw)}")
        return None
    return raw


def unknown_key(doc: Document, path: Path, key: str, known: Collection[str]) -> None:
    doc.problem(
        (*path, key),
        f"unknown key{suggestion(key, known)}; known: {', '.join(known)}",
    )


def _normalise(field: Field, value: Any) -> Any:
    if field.type == "kinds":
        return tuple(FailureKind(v) for v in value)
    if isinstance(value, list):
        return tuple(value)
    return value


def check_fields(
    doc: Document, path: Path, raw: object, fields: Mapping[str, Field], what: str
) -> dict[str, Any]:
    """The valid keys of ``raw`` (each checked against ``fields``); problems for the rest."""
    body = mapping(doc, path, raw, what)
    out: dict[str, Any] = {}
    for key, value in (body or {}).items():
        field = fields.get(key)
        if field is None:
            unknown_key(doc, path, key, list(fields))
            continue
        problems = check(field, value)
        for sub, reason in problems:
            doc.problem((*path, key, *sub), reason)
        if not problems:
            out[key] = _normalise(field, value)
    return out


def section(
    doc: Document, path: Path, raw: object, fields: Mapping[str, Field]
) -> Mapping[str, Any]:
    """A read-only mapping of the valid settings of a plain section."""
    return MappingProxyType(check_fields(doc, path, raw, fields, "settings"))


def rate_limits(doc: Document, path: Path, raw: object) -> Mapping[str, Mapping[str, Any]]:
    """``provider`` or ``provider/model`` → its validated limits."""
    body = mapping(doc, path, raw, "provider or provider/model → limits")
    out: dict[str, Mapping[str, Any]] = {}
    for key, value in (body or {}).items():
        if not _RATE_LIMIT_KEY.match(key):
            doc.problem((*path, key), "must be a provider or provider/model, e.g. openai/gpt-4o")
            continue
        limits = check_fields(doc, (*path, key), value, RATE_LIMIT_FIELDS, "limits")
        if value is None or (isinstance(value, dict) and not value):
            doc.problem((*path, key), "give requests_per_minute or tokens_per_minute, or both")
        if limits:
            out[key] = MappingProxyType(limits)
    return MappingProxyType(out)


def policy_name(doc: Document, path: Path, raw: object, known: Collection[str]) -> str | None:
    """``raw`` if it names a known policy; a problem otherwise."""
    if not isinstance(raw, str):
        doc.problem(path, f"must be a policy name, got {describe_value(raw)}")
        return None
    if raw not in known:
        doc.problem(
            path,
            f"unknown policy {raw!r}{suggestion(raw, known)}; known: {listing(sorted(known))}",
        )
        return None
    return raw


def operation_policies(
    doc: Document, path: Path, raw: object, known: Collection[str]
) -> dict[str, str]:
    """Operation type → a known policy name."""
    body = mapping(doc, path, raw, "operation type → policy name")
    out: dict[str, str] = {}
    for op, name in (body or {}).items():
        if op not in OPERATION_TYPES:
            doc.problem(
                (*path, op),
                f"unknown operation type{suggestion(op, OPERATION_TYPES)}; "
                f"one of {', '.join(OPERATION_TYPES)}",
            )
            continue
        checked = policy_name(doc, (*path, op), name, known)
        if checked is not None:
            out[op] = checked
    return out
