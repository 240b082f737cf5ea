"""``tiers``: a list of evaluation tiers, each checked against ``TIER_FIELDS`` and built as
a ``TierConfig``; tier ids are unique within the list."""

from __future__ import annotations

from typing import Any, Final

from backstay.adapters.contract import TierConfig
from backstay.config._document import Document
from backstay.config._fields import check, describe_value
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key
from backstay.config.suite.spec import DEFAULT_TIER_ID, TIER_FIELDS
from backstay.errors import ConfigError

# Suite key → TierConfig field, where they differ.
_FIELD_OF: Final = {"tier_prompt": "system_prompt"}
_KEY_OF: Final = {field: key for key, field in _FIELD_OF.items()}


def first_seen(doc: Document, path: Path) -> str:
    """`` (first on line 12)`` for a key path read from a file, else an empty string."""
    source = doc.source_of(path)
    line = "" if source is None else source.location.rpartition(":")[2]
    return f" (first on line {line})" if line.isdigit() else ""


def tier(doc: Document, path: Path, raw: object) -> TierConfig | None:
    """One tier; ``None`` and problems at ``path`` when it cannot be built."""
    before = len(doc.problems)
    body = mapping(doc, path, raw, "tier settings")
    values: dict[str, Any] = {}
    for key, value in (body or {}).items():
        field = TIER_FIELDS.get(key)
        if field is None:
            unknown_key(doc, path, key, list(TIER_FIELDS))
            continue
        for sub, reason in check(field, value):
            doc.problem((*path, key, *sub), reason)
        values[_FIELD_OF.get(key, key)] = tuple(value) if isinstance(value, list) else value
    if body is not None and "tier_id" not in body:
        doc.problem((*path, "tier_id"), f"is required, e.g. tier_id: {DEFAULT_TIER_ID}")
    if body is None or len(doc.problems) > before:
        return None
    try:
        return TierConfig(**values)
    except ConfigError as err:  # a rule relating two keys (allowed_tools, tools_enabled)
        name = (err.where or "").removeprefix("tier.")
        doc.problem((*path, _KEY_OF.get(name, name)), err.reason)
        return None


def tiers(doc: Document, path: Path, raw: object) -> tuple[TierConfig, ...] | None:
    """A non-empty list of tiers with distinct ids; ``None`` and problems otherwise."""
    if not isinstance(raw, list):
        doc.problem(path, f"must be a list of tiers, got {describe_value(raw)}")
        return None
    if not raw:
        doc.problem(
            path, f"must hold at least one tier (leave it out for one tier, {DEFAULT_TIER_ID})"
        )
        return None
    before = len(doc.problems)
    out: list[TierConfig] = []
    first: dict[str, Path] = {}
    for index, item in enumerate(raw):
        item_path = (*path, f"[{index}]")
        tier_id = item.get("tier_id") if isinstance(item, dict) else None
        if isinstance(tier_id, str) and tier_id in first:
            doc.problem(
                (*item_path, "tier_id"),
                f"tier {tier_id!r} is given twice in this list"
                + first_seen(doc, (*first[tier_id], "tier_id")),
            )
        elif isinstance(tier_id, str):
            first[tier_id] = item_path
        built = tier(doc, item_path, item)
        if built is not None:
            out.append(built)
    return tuple(out) if len(doc.problems) == before else None
