"""A human's decision on an agent run's approval, reached from the engine's escalation.

A run that pauses for an approval (a tool needing one, or a framework's own request for
a human: a LangGraph ``interrupt()``, a LlamaIndex ``InputRequiredEvent``, an AutoGen
hand-off to the user) fails its task's attempt with ``ERR_APPROVAL_REQUIRED``; the
failure's details name the approval (``escalation_id``) and its ``tenant``, so the
engine's escalation of the task leads to it. ``decide_escalated`` records the decision
in the run store (``backstay escalations resolve ID --approve | --reject | --edit JSON``
does this, then resolves the escalation with ``retry``): the next attempt resumes the
run, which finds the decision instead of asking again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from backstay.errors import ConfigError
from backstay.failure import Failure
from backstay.runtime.records import Approval, ApprovalStatus
from backstay.runtime.store import RunStore

__all__ = ["APPROVAL_CODE", "approval_of", "decide_escalated", "edited_arguments"]

APPROVAL_CODE: Final = "ERR_APPROVAL_REQUIRED"


def approval_of(failure: Failure) -> tuple[str, int] | None:
    """``(tenant, approval id)`` of a failure that waits for an approval, else ``None``."""
    if failure.code != APPROVAL_CODE:
        return None
    approval_id = failure.details.get("escalation_id")
    tenant = failure.details.get("tenant", "default")
    if not isinstance(approval_id, int) or not isinstance(tenant, str):
        return None
    return tenant, approval_id


def edited_arguments(text: str, *, where: str = "--edit") -> dict[str, Any]:
    """The human's changed arguments (or answer), a JSON object given as ``text``."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise ConfigError(f"is not JSON ({err})", where=where) from None
    if not isinstance(value, Mapping):
        raise ConfigError(
            f'must be a JSON object (the arguments, or {{"answer": ...}}), got {text!r}',
            where=where,
        )
    return dict(value)


def decide_escalated(
    store: RunStore,
    failure: Failure,
    status: ApprovalStatus,
    *,
    edited: Mapping[str, Any] | None = None,
    note: str = "",
    by: str = "human",
    where: str = "escalation",
) -> Approval:
    """Record ``status`` on the approval ``failure`` waits for. ``ConfigError`` when the
    failure waits for none, or the approval is unknown or already decided (nothing is
    recorded then)."""
    found = approval_of(failure)
    if found is None:
        raise ConfigError(
            f"waits for no approval (its failure is {failure.code}): use --action", where=where
        )
    tenant, approval_id = found
    if status is ApprovalStatus.EDITED and edited is None:
        raise ConfigError("an edited decision needs the changed arguments", where="--edit")
    try:
        return store.decide(
            tenant,
            approval_id,
            status,
            edited_arguments=edited if status is ApprovalStatus.EDITED else None,
            note=note,
            by=by,
        )
    except ConfigError as err:
        raise ConfigError(f"{err.reason}; nothing was recorded", where=where) from None
