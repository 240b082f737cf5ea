"""``ToolGate``: the one way a framework's tool calls reach a tool.

``await tools.invoke(name, arguments)``, in this order:

1. a halted run stays halted (the halt is raised again);
2. the same call (tool and arguments) ``loop_repeats`` times in a row is a loop:
   ``LimitExceeded`` (``ERR_LIMIT_LOOP``);
3. a tool not on the allowlist (or not registered) is never invoked:
   ``SecurityViolation`` (``ERR_TOOL_NOT_ALLOWED``); the run ends escalated;
4. the hard limits, with the call counted (``max_tool_calls``, wall time, tokens …);
5. a tool that needs approval runs only after a human approved it (or with the edited
   arguments); with no decision yet the gate records a durable approval request and
   raises ``ApprovalRequired``: the run pauses and ``resume`` continues after the decision.
   A rejected call is not run; the model is told so;
6. a cacheable tool's earlier result for the same arguments in the same tenant is reused;
7. the tool runs; a ``SecurityViolation`` from it (a sandbox refusal) halts the run; any
   other error goes to the tool's fallback if one is configured, else it is skipped: the
   model gets ``{"error": ...}`` naming the tool and the error type, never its internals.

A framework agent's own tool (a function the user gave the framework, not registered
with the ``Runtime``) goes through the same gate: ``invoke(name, arguments, run=call)``
checks the allowlist (by ``name``), approvals, limits and cache as above and then awaits
``call(arguments)`` instead of a registered function. ``approval=True`` makes the call
wait for a human whatever ``ToolPolicy.approval`` says (a tool the framework itself marks
as needing approval, such as a Pydantic-AI ``requires_approval`` tool).

A framework's own request for a human (a LangGraph ``interrupt()``, a LlamaIndex
``InputRequiredEvent``, an AutoGen hand-off to the user) is not a tool call:
``ask(kind, request, key=...)`` records it as the same durable approval (tool ``kind``,
arguments ``request``) and returns the ``HumanDecision`` once one is recorded; until then
it raises ``ApprovalRequired`` and the run pauses.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from backstay.clock import SYSTEM_CLOCK, Clock
from backstay.runtime.context import ExecutionContext
from backstay.runtime.errors import ApprovalRequired, LimitExceeded, SecurityViolation
from backstay.runtime.events import ApprovalRequested, RuntimeEvent, ToolCalled
from backstay.runtime.limits import ExecutionLimits
from backstay.runtime.records import ApprovalStatus, HumanDecision
from backstay.runtime.store import RunStore
from backstay.runtime.tools import Tool, ToolPolicy

__all__ = ["ToolGate", "call_key"]

OwnTool = Callable[[dict[str, Any]], Awaitable[Any]]

_MAX_FALLBACKS: Final = 3


def call_key(name: str, arguments: Mapping[str, Any]) -> str:
    """A stable id of a call: the tool and its canonical JSON arguments, hashed."""
    text = json.dumps({"tool": name, "arguments": dict(arguments)}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ToolGate:
    """The tool calls of one run."""

    def __init__(
        self,
        context: ExecutionContext,
        *,
        tools: Mapping[str, Tool],
        policy: ToolPolicy,
        store: RunStore,
        emit: Callable[[type[RuntimeEvent], dict[str, Any]], None],
        redact: Callable[[Any], Any],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._ctx = context
        self._tools = dict(tools)
        self.policy = policy
        self._store = store
        self._emit = emit
        self._redact = redact
        self._clock = clock
        self._last: str | None = None
        self._repeats = 0

    @property
    def limits(self) -> ExecutionLimits:
        """The run's hard limits (the shell tool bounds its processes by them)."""
        return self._ctx.tracker.limits

    def names(self) -> tuple[str, ...]:
        """Every registered tool (the allowlist decides which of them may run)."""
        return tuple(sorted(self._tools))

    def specs(self, *, allowed_only: bool = False) -> list[dict[str, Any]]:
        """Tool descriptions to offer the framework's model."""
        return [
            t.spec()
            for n, t in sorted(self._tools.items())
            if not allowed_only or self.policy.allows(n)
        ]

    def _tool_event(self, tool: str, outcome: str) -> None:
        self._emit(ToolCalled, {"tool": tool, "outcome": outcome})

    def _loop_check(self, key: str) -> None:
        self._repeats = self._repeats + 1 if key == self._last else 1
        self._last = key
        breach = self._ctx.tracker.loop(self._repeats)
        if breach is not None:
            raise self._ctx.halt(LimitExceeded(breach))

    async def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        run: OwnTool | None = None,
        approval: bool = False,
    ) -> Any:
        """Run tool ``name`` with ``arguments`` under the run's policy (see the module);
        ``run``: the framework agent's own tool of that name, called instead of a
        registered one; ``approval``: the call waits for a human even when the policy
        does not say so."""
        ctx = self._ctx
        ctx.check_halted()
        args = dict(arguments or {})
        key = call_key(name, args)
        self._loop_check(key)
        if not self.policy.allows(name) or (run is None and name not in self._tools):
            self._tool_event(name, "refused")
            raise ctx.halt(
                SecurityViolation(f"tool {name!r} is not allowed", code="ERR_TOOL_NOT_ALLOWED")
            )
        self._check_limits()
        if approval or name in self.policy.approval:
            decided = self._approval(name, key, args)
            if decided is None:
                self._tool_event(name, "rejected")
                return {"error": f"a human rejected the call of tool {name!r}"}
            args = decided
        if name in self.policy.cacheable:
            hit, value = ctx.cache.get(key)
            if hit:
                self._tool_event(name, "cached")
                return value
        value = await self._run(name, args, own=run)
        if name in self.policy.cacheable and not _is_error(value):
            ctx.cache.put(key, self._redact(value))
        return value

    def ask(self, kind: str, request: Mapping[str, Any], *, key: str) -> HumanDecision:
        """The human's decision on a framework's own request ``request`` (JSON), recorded
        as a durable approval of tool ``kind`` under ``key`` (stable across a resume:
        the step, the request and where in the run it was made); ``ApprovalRequired``
        while it is undecided. Not a tool call: no allowlist, no tool limits."""
        ctx = self._ctx
        ctx.check_halted()
        found = self._store.approval_for(ctx.tenant, ctx.run_id, key)
        if found is None:
            found = self._store.request_approval(
                ctx.tenant, ctx.run_id, tool=kind, key=key, arguments=self._redact(dict(request))
            )
            self._emit(ApprovalRequested, {"tool": kind, "escalation_id": found.id})
        if not found.status.decided:
            raise ctx.halt(ApprovalRequired(kind, escalation_id=found.id, tenant=ctx.tenant))
        return HumanDecision(status=found.status, edited=found.edited_arguments, note=found.note)

    def _check_limits(self) -> None:
        ctx = self._ctx
        breach = ctx.tracker.check_before(self._clock.monotonic(), call="tool")
        if breach is not None:
            raise ctx.halt(LimitExceeded(breach))
        ctx.tracker.record_tool_call()

    def _approval(self, name: str, key: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments to run with once approved; ``None`` when rejected; raises
        ``ApprovalRequired`` while no decision is recorded."""
        ctx = self._ctx
        found = self._store.approval_for(ctx.tenant, ctx.run_id, key)
        if found is None or not found.status.decided:
            if found is None:
                found = self._store.request_approval(
                    ctx.tenant, ctx.run_id, tool=name, key=key, arguments=self._redact(args)
                )
                self._emit(ApprovalRequested, {"tool": name, "escalation_id": found.id})
            self._tool_event(name, "approval_required")
            raise ctx.halt(ApprovalRequired(name, escalation_id=found.id, tenant=ctx.tenant))
        if found.status is ApprovalStatus.REJECTED:
            return None
        if found.status is ApprovalStatus.EDITED and found.edited_arguments is not None:
            return dict(found.edited_arguments)
        return args

    async def _run(
        self, name: str, args: dict[str, Any], depth: int = 0, *, own: OwnTool | None = None
    ) -> Any:
        ctx = self._ctx
        try:
            value = own(args) if own is not None else self._tools[name].fn(**args)
            if inspect.isawaitable(value):
                value = await value
        except SecurityViolation as exc:
            self._tool_event(name, "refused")
            raise ctx.halt(exc) from None
        except Exception as exc:  # noqa: BLE001 - a failed tool is skipped or falls back
            fallback = self.policy.fallbacks.get(name)
            if (
                fallback in self._tools
                and depth < _MAX_FALLBACKS
                and self.policy.allows(fallback or "")
            ):
                self._tool_event(name, "fallback")
                self._check_limits()
                return await self._run(fallback, args, depth + 1)
            self._tool_event(name, "failed")
            return {"error": f"tool {name!r} failed ({type(exc).__name__})"}
        breach = ctx.tracker.check_after(self._clock.monotonic())
        self._tool_event(name, "ran")
        if breach is not None:
            raise ctx.halt(LimitExceeded(breach))
        return value


def _is_error(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"error"}
