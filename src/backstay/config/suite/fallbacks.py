"""``fallbacks``: a list of fallback candidates, each checked against ``FALLBACK_FIELDS``
and built as a ``backstay.fallback.Candidate`` of an adapter; no candidate twice."""

from __future__ import annotations

from typing import Any

from backstay.config._document import Document
from backstay.config._fields import check, describe_value
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key
from backstay.config.suite.spec import FALLBACK_FIELDS
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate


def candidate(doc: Document, path: Path, raw: object) -> Candidate | None:
    """One candidate; ``None`` and problems at ``path`` when it cannot be built."""
    before = len(doc.problems)
    body = mapping(doc, path, raw, "a fallback candidate")
    values: dict[str, Any] = {}
    for key, value in (body or {}).items():
        field = FALLBACK_FIELDS.get(key)
        if field is None:
            unknown_key(doc, path, key, list(FALLBACK_FIELDS))
            continue
        for sub, reason in check(field, value):
            doc.problem((*path, key, *sub), reason)
        values[key] = value
    for required in ("adapter", "model"):
        if body is not None and required not in body:
            doc.problem((*path, required), "is required")
    if body is None or len(doc.problems) > before:
        return None
    try:
        return Candidate(**values)
    except ConfigError as err:
        doc.problem((*path, (err.where or "").rpartition(".")[2]), err.reason)
        return None


def fallbacks(doc: Document, path: Path, raw: object) -> tuple[Candidate, ...] | None:
    """A list of distinct candidates (may be empty); ``None`` and problems otherwise."""
    if not isinstance(raw, list):
        doc.problem(path, f"must be a list of candidates, got {describe_value(raw)}")
        return None
    before = len(doc.problems)
    out: list[Candidate] = []
    for index, item in enumerate(raw):
        built = candidate(doc, (*path, f"[{index}]"), item)
        if built is None:
            continue
        if any(c.name == built.name for c in out):
            doc.problem((*path, f"[{index}]"), f"{built.name} is given twice in this list")
            continue
        out.append(built)
    return tuple(out) if len(doc.problems) == before else None
