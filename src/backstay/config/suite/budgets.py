"""Spending budgets in a suite: ``budget`` (the batch's, at the top level; each run's, in
``defaults`` or a task) and ``tenants`` (each tenant's), checked against ``BUDGET_FIELDS``."""

from __future__ import annotations

import re
from typing import Any

from backstay.config._document import Document
from backstay.config._fields import check
from backstay.config._paths import Path
from backstay.config._sections import mapping, unknown_key
from backstay.config.suite.spec import BUDGET_FIELDS, ID_HINT, ID_PATTERN, TENANT_KEYS
from backstay.policy.spend import SpendBudget


def budget(doc: Document, path: Path, raw: object) -> SpendBudget | None:
    """A budget mapping (``usd``, ``tokens``); ``None`` and problems when it is wrong."""
    before = len(doc.problems)
    body = mapping(doc, path, raw, "usd and/or tokens")
    if body is None:
        return None
    values: dict[str, Any] = {}
    for key, value in body.items():
        field = BUDGET_FIELDS.get(key)
        if field is None:
            unknown_key(doc, path, key, list(BUDGET_FIELDS))
            continue
        for sub, reason in check(field, value):
            doc.problem((*path, key, *sub), reason)
        values[key] = value
    if not body:
        doc.problem(path, "give usd and/or tokens")
    if len(doc.problems) > before:
        return None
    return SpendBudget(**values)


def tenants(doc: Document, raw: object) -> dict[str, SpendBudget]:
    """The ``tenants`` section: tenant name → its budget."""
    path: Path = ("tenants",)
    body = mapping(doc, path, raw, "tenant name → settings") or {}
    out: dict[str, SpendBudget] = {}
    for name, settings in body.items():
        here: Path = (*path, str(name))
        if not isinstance(name, str) or not re.fullmatch(ID_PATTERN, name):
            doc.problem(here, f"a tenant name must be {ID_HINT}")
            continue
        entry = mapping(doc, here, settings, "tenant settings (budget)")
        if entry is None:
            continue
        for key in entry:
            if key not in TENANT_KEYS:
                unknown_key(doc, here, key, list(TENANT_KEYS))
        if "budget" not in entry:
            doc.problem((*here, "budget"), "is required: the tenant's budget (usd, tokens)")
            continue
        found = budget(doc, (*here, "budget"), entry["budget"])
        if found is not None:
            out[name] = found
    return out
