"""The exceptions the runtime's gates raise into framework code.

::

    BackstayError
    └── RunHalted                 the run may not go on; ``failure`` says why
        ├── LimitExceeded         a hard limit was reached (``breach``)
        ├── SecurityViolation     a forbidden tool, path or command was asked for
        └── ApprovalRequired      a tool call waits for a human decision (``escalation_id``)

They are ordinary exceptions, so a framework may catch them; it gains nothing by it: the
runtime remembers the first halt of a run, every later model or tool call of that run
raises it again, and the runtime ends the run from what it remembered once the adapter
returns. Their messages name the limit, tool or path, never prompts or internals.
"""

from __future__ import annotations

from backstay.errors import BackstayError
from backstay.failure import Failure
from backstay.runtime.limits import LimitBreach

__all__ = ["ApprovalRequired", "LimitExceeded", "RunHalted", "SecurityViolation"]


class RunHalted(BackstayError):
    """The run stops; ``failure`` is what the run records."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(f"{failure.kind}/{failure.code}: {failure.message}")


class LimitExceeded(RunHalted):
    def __init__(self, breach: LimitBreach) -> None:
        self.breach = breach
        super().__init__(
            Failure(
                code=_LIMIT_CODES.get(breach.limit, "ERR_LIMIT_EXCEEDED"),
                message=breach.message,
                details={
                    "limit": str(breach.limit),
                    "allowed": breach.allowed,
                    "reached": breach.reached,
                },
            )
        )


class SecurityViolation(RunHalted):
    def __init__(self, message: str, *, code: str = "ERR_SECURITY_VIOLATION") -> None:
        super().__init__(Failure(code=code, message=message))


class ApprovalRequired(RunHalted):
    """``escalation_id``: the approval's id in the run store of ``tenant`` (both are in
    the failure's details, so an engine escalation of the task can decide it)."""

    def __init__(self, tool: str, *, escalation_id: int, tenant: str = "") -> None:
        self.tool = tool
        self.escalation_id = escalation_id
        self.tenant = tenant
        details: dict[str, str | int] = {"tool": tool, "escalation_id": escalation_id}
        if tenant:
            details["tenant"] = tenant
        super().__init__(
            Failure(
                code="ERR_APPROVAL_REQUIRED",
                message=f"tool {tool!r} waits for approval (escalation {escalation_id})",
                details=details,
            )
        )


_LIMIT_CODES = {
    "max_steps": "ERR_LIMIT_MAX_STEPS",
    "max_tokens": "ERR_LIMIT_TOKENS",
    "wall_time_s": "ERR_LIMIT_WALL_TIME",
    "max_tool_calls": "ERR_LIMIT_TOOL_CALLS",
    "max_model_calls": "ERR_LIMIT_MAX_TURNS",
    "max_retries": "ERR_LIMIT_RETRIES",
    "max_cost_usd": "ERR_LIMIT_BUDGET",
    "loop": "ERR_LIMIT_LOOP",
}
