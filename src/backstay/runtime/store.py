"""``RunStore``: checkpoints, approvals and the tool result cache of the runtime, per tenant.

``MemoryRunStore`` keeps them in the process; ``SQLiteRunStore``
(``backstay.store.sqlite.runs``) in a SQLite file, by default the engine's
``state.sqlite``. Every method takes the tenant, and keys are (tenant, id): one tenant
can never read another's results, approvals or cache.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from backstay.errors import ConfigError
from backstay.runtime.records import Approval, ApprovalStatus, RunRecord
from backstay.runtime.results import StepResult

__all__ = ["MemoryRunStore", "RunStore"]


@runtime_checkable
class RunStore(Protocol):
    def save_run(self, record: RunRecord) -> None:
        """Store ``record`` whole (its step results replace those stored)."""

    def save_progress(self, record: RunRecord, result: StepResult) -> None:
        """Store the run's header (status, plan, state, usage, failure) and ``result``,
        its newest step result; the other results stored stay as they are. A run's
        checkpoint after each step costs one step, not the whole history."""

    def load_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    def request_approval(
        self, tenant: str, run_id: str, *, tool: str, key: str, arguments: Mapping[str, Any]
    ) -> Approval: ...

    def approval_for(self, tenant: str, run_id: str, key: str) -> Approval | None: ...

    def approvals(self, tenant: str, *, open_only: bool = True) -> tuple[Approval, ...]: ...

    def decide(
        self,
        tenant: str,
        approval_id: int,
        status: ApprovalStatus,
        *,
        edited_arguments: Mapping[str, Any] | None = None,
        note: str = "",
        by: str = "human",
    ) -> Approval: ...

    def cache_get(self, tenant: str, key: str) -> tuple[bool, Any]: ...

    def cache_put(self, tenant: str, key: str, value: Any) -> None: ...


def check_decision(approval: Approval | None, status: ApprovalStatus, approval_id: int) -> Approval:
    """``approval``; ``ConfigError`` unless it exists, is open and ``status`` decides."""
    if approval is None:
        raise ConfigError(f"no approval {approval_id}", where="approval_id")
    if approval.status.decided:
        raise ConfigError(
            f"approval {approval_id} is already {approval.status}", where="approval_id"
        )
    if not status.decided:
        raise ConfigError("a decision is approved, edited or rejected", where="status")
    return approval


class MemoryRunStore:
    """Everything in dicts keyed by tenant first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], RunRecord] = {}
        self._approvals: dict[int, Approval] = {}
        self._cache: dict[tuple[str, str], Any] = {}

    def save_run(self, record: RunRecord) -> None:
        with self._lock:
            self._runs[(record.tenant, record.run_id)] = record

    def save_progress(self, record: RunRecord, result: StepResult) -> None:
        self.save_run(record)

    def load_run(self, tenant: str, run_id: str) -> RunRecord | None:
        with self._lock:
            return self._runs.get((tenant, run_id))

    def request_approval(
        self, tenant: str, run_id: str, *, tool: str, key: str, arguments: Mapping[str, Any]
    ) -> Approval:
        with self._lock:
            for found in self._approvals.values():
                if (found.tenant, found.run_id, found.key) == (tenant, run_id, key):
                    return found
            new = Approval(
                id=len(self._approvals) + 1,
                tenant=tenant,
                run_id=run_id,
                tool=tool,
                key=key,
                arguments=dict(arguments),
            )
            self._approvals[new.id] = new
            return new

    def approval_for(self, tenant: str, run_id: str, key: str) -> Approval | None:
        with self._lock:
            for found in self._approvals.values():
                if (found.tenant, found.run_id, found.key) == (tenant, run_id, key):
                    return found
            return None

    def approvals(self, tenant: str, *, open_only: bool = True) -> tuple[Approval, ...]:
        with self._lock:
            return tuple(
                a
                for a in self._approvals.values()
                if a.tenant == tenant and not (open_only and a.status.decided)
            )

    def decide(
        self,
        tenant: str,
        approval_id: int,
        status: ApprovalStatus,
        *,
        edited_arguments: Mapping[str, Any] | None = None,
        note: str = "",
        by: str = "human",
    ) -> Approval:
        status = ApprovalStatus(status)
        with self._lock:
            found = self._approvals.get(approval_id)
            found = found if found is not None and found.tenant == tenant else None
            found = check_decision(found, status, approval_id)
            decided = dataclasses.replace(
                found,
                status=status,
                edited_arguments=None if edited_arguments is None else dict(edited_arguments),
                note=note,
                by=by,
            )
            self._approvals[approval_id] = decided
            return decided

    def cache_get(self, tenant: str, key: str) -> tuple[bool, Any]:
        with self._lock:
            if (tenant, key) in self._cache:
                return True, self._cache[(tenant, key)]
            return False, None

    def cache_put(self, tenant: str, key: str, value: Any) -> None:
        with self._lock:
            self._cache[(tenant, key)] = value
