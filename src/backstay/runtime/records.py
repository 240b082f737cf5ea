"""What the runtime stores: a run's checkpoint (``RunRecord``) and approvals (``Approval``).

Every record carries its tenant, and every store method takes one: a store never returns
a record of another tenant, whatever id it is asked for.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from backstay.adapters.usage import Usage
from backstay.failure import Failure
from backstay.runtime.plan import Plan
from backstay.runtime.results import StepResult, usage_from_dict, usage_to_dict

__all__ = ["Approval", "ApprovalStatus", "HumanDecision", "RunRecord", "RunStatus"]


class RunStatus(enum.StrEnum):
    """``running``; ``succeeded``; ``failed``; ``limit_exceeded`` (partial results kept);
    ``escalated`` (a security violation: a human looks at it); ``paused`` (an approval is
    pending: ``resume`` continues after the decision)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    LIMIT_EXCEEDED = "limit_exceeded"
    ESCALATED = "escalated"
    PAUSED = "paused"

    @property
    def resumable(self) -> bool:
        return self in (RunStatus.RUNNING, RunStatus.PAUSED)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One run's checkpoint: its plan, the step results so far, the persistent ``state``."""

    tenant: str
    run_id: str
    adapter: str
    session_id: str
    trace_id: str
    status: RunStatus
    input: Any = None
    plan: Plan | None = None
    results: tuple[StepResult, ...] = ()
    state: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    usage: Usage = dataclasses.field(default_factory=Usage)
    failure: Failure | None = None

    def result(self, step_id: str) -> StepResult | None:
        for found in reversed(self.results):
            if found.step_id == step_id:
                return found
        return None

    def to_dict(self, *, results: bool = True, plan: bool = True) -> dict[str, Any]:
        """JSON-ready fields; without ``results`` (and ``plan``) the header alone."""
        out = {
            "tenant": self.tenant,
            "run_id": self.run_id,
            "adapter": self.adapter,
            "session_id": self.session_id,
            "trace_id": self.trace_id,
            "status": str(self.status),
            "input": self.input,
            "state": dict(self.state),
            "usage": usage_to_dict(self.usage),
            "failure": None if self.failure is None else self.failure.to_error_info(),
        }
        if plan:
            out["plan"] = None if self.plan is None else self.plan.to_dict()
        if results:
            out["results"] = [r.to_dict() for r in self.results]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        failure = data.get("failure")
        plan = data.get("plan")
        return cls(
            tenant=data["tenant"],
            run_id=data["run_id"],
            adapter=data["adapter"],
            session_id=data["session_id"],
            trace_id=data["trace_id"],
            status=RunStatus(data["status"]),
            input=data.get("input"),
            plan=None if plan is None else Plan.from_dict(plan),
            results=tuple(StepResult.from_dict(r) for r in data.get("results", ())),
            state=dict(data.get("state") or {}),
            usage=usage_from_dict(data.get("usage") or {}),
            failure=None if failure is None else Failure.from_error_info(failure),
        )


class ApprovalStatus(enum.StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    EDITED = "edited"
    REJECTED = "rejected"

    @property
    def decided(self) -> bool:
        return self is not ApprovalStatus.PENDING


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """A tool call waiting for (or given) a human decision. ``key`` identifies the call
    (tool and arguments) within its run; ``arguments`` are shown redacted; an ``edited``
    decision carries the ``edited_arguments`` the tool runs with instead."""

    id: int
    tenant: str
    run_id: str
    tool: str
    key: str
    arguments: Mapping[str, Any]
    status: ApprovalStatus = ApprovalStatus.PENDING
    edited_arguments: Mapping[str, Any] | None = None
    note: str = ""
    by: str = ""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HumanDecision:
    """A human's decision on a framework's own request for input (a LangGraph
    ``interrupt()``, a LlamaIndex ``InputRequiredEvent``, an AutoGen hand-off to the
    user): ``approved``, ``edited`` (``edited`` holds the human's changed arguments or
    answer) or ``rejected``; ``note`` is the reason given with it."""

    status: ApprovalStatus
    edited: Mapping[str, Any] | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "approve" | "edit" | "reject", "args": …, "reason": …}``: the value
        a framework is resumed with."""
        kind = {"approved": "approve", "edited": "edit", "rejected": "reject"}[self.status]
        out: dict[str, Any] = {"type": kind}
        if self.status is ApprovalStatus.EDITED:
            out["args"] = dict(self.edited or {})
        if self.note:
            out["reason"] = self.note
        return out
