"""A policy given where it is used (a suite, a task, ``backstay run --policy``): the name
of a policy in a registry, or a mapping of policy settings.

An inline policy starts from the policy it ``extends``, else from ``base`` (the policy it
replaces), and its own settings apply on top, merged as in ``backstay.yaml``.
"""

from __future__ import annotations

from backstay.config._document import Document
from backstay.config._fields import describe_value, listing, suggestion
from backstay.config._paths import Path
from backstay.config._policies import (
    build_policy,
    check_policy_settings,
    merge_settings,
    policy_settings,
)
from backstay.config._sections import policy_name
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy

_NAMED = "an inline policy is named after where it is given; remove this"


def policy_reference(
    doc: Document,
    path: Path,
    raw: object,
    registry: PolicyRegistry,
    *,
    name: str,
    base: RetryPolicy,
) -> RetryPolicy | None:
    """The policy ``raw`` names or describes (an inline one is called ``name``); ``None``
    and problems at ``path`` when there is none."""
    if isinstance(raw, str):
        checked = policy_name(doc, path, raw, registry.names())
        return None if checked is None else registry.get(checked)
    if not isinstance(raw, dict):
        doc.problem(
            path,
            f"must be a policy name or a mapping of policy settings, got {describe_value(raw)}",
        )
        return None
    before = len(doc.problems)
    own = check_policy_settings(doc, path, raw, named=_NAMED) or {}
    extends = own.pop("extends", None)
    if extends is not None:
        if extends in registry:
            base = registry.get(extends)
        else:
            known = registry.names()
            doc.problem(
                (*path, "extends"),
                f"unknown policy {extends!r}{suggestion(extends, known)}; known: {listing(known)}",
            )
    if len(doc.problems) > before:
        return None
    return build_policy(doc, path, merge_settings(policy_settings(base), own), name)
