"""The agent runtime: agent frameworks (LangGraph, Pydantic-AI, LlamaIndex workflows,
AutoGen …) run under one contract, with backstay doing the deciding. See
``docs/frameworks.md``. (``backstay.agents`` is another thing: it installs and locates the
agent CLIs.)

* ``protocol``: ``FrameworkAdapter`` (``plan`` / ``execute`` / ``validate``);
* ``plan``, ``results``: ``Plan``, ``Step``, ``StepResult``, ``ValidationResult``;
* ``context``: ``ExecutionContext``; ``memory``: ``MemoryManager`` and its stores;
* ``limits``: ``ExecutionLimits``; ``tools``: ``Tool``, ``ToolPolicy``;
* ``modelgate`` / ``toolgate``: the gates every model and tool call passes;
* ``runtime``: ``Runtime`` (``run`` / ``resume``); ``records``, ``store``: checkpoints,
  approvals, the tool cache; ``hooks``, ``events``: what a run tells the world;
* ``sensitive``: ``SensitiveRedactor``; ``errors``: what the gates raise;
* ``interface``, ``adapter_hooks``: the agent adapter interface's own names (``PlanStep``,
  ``TokenUsage``, ``SecurityConfig``, ``RetryConfig``, ``AdapterHooks``, ``TraceEvent``,
  ``ErrorCategory``, ``AdapterError``, ``BaseAgentAdapter`` …), aliases of the above.
"""

from __future__ import annotations

from backstay.runtime.adapter_hooks import AdapterHooks, LogEntry, TraceEvent
from backstay.runtime.context import ExecutionContext, ToolCache
from backstay.runtime.errors import ApprovalRequired, LimitExceeded, RunHalted, SecurityViolation
from backstay.runtime.events import (
    ApprovalRequested,
    PlanCreated,
    RunAborted,
    RunFinished,
    RuntimeEvent,
    StepCompleted,
    StepStarted,
    ToolCalled,
)
from backstay.runtime.gated import current_tool_gate, gated
from backstay.runtime.health import HealthReport, health_check
from backstay.runtime.hooks import Hooks
from backstay.runtime.interface import (
    AdapterError,
    BaseAgentAdapter,
    ErrorCategory,
    RetryConfig,
    SecurityConfig,
    TokenUsage,
    ValidationError,
    ValidationSeverity,
)
from backstay.runtime.limits import ExecutionLimits, LimitBreach, LimitName
from backstay.runtime.memory import InMemoryMemory, MemoryManager, Message, SessionMemory
from backstay.runtime.modelgate import ModelGate
from backstay.runtime.plan import Plan, PlanStep, Step
from backstay.runtime.protocol import AgentFactory, FrameworkAdapter
from backstay.runtime.records import (
    Approval,
    ApprovalStatus,
    HumanDecision,
    RunRecord,
    RunStatus,
)
from backstay.runtime.results import (
    Severity,
    StepResult,
    StepStatus,
    ValidationIssue,
    ValidationResult,
)
from backstay.runtime.runtime import Runtime
from backstay.runtime.sensitive import SensitiveRedactor
from backstay.runtime.settings import RuntimeSettings
from backstay.runtime.store import MemoryRunStore, RunStore
from backstay.runtime.toolgate import ToolGate
from backstay.runtime.tools import Tool, ToolPolicy
from backstay.runtime.trace import TRACE_HEADER, current_trace_id

__all__ = [
    "TRACE_HEADER",
    "AdapterError",
    "AdapterHooks",
    "AgentFactory",
    "Approval",
    "ApprovalRequested",
    "ApprovalRequired",
    "ApprovalStatus",
    "BaseAgentAdapter",
    "ErrorCategory",
    "ExecutionContext",
    "ExecutionLimits",
    "FrameworkAdapter",
    "HealthReport",
    "Hooks",
    "HumanDecision",
    "InMemoryMemory",
    "LimitBreach",
    "LimitExceeded",
    "LimitName",
    "LogEntry",
    "MemoryManager",
    "MemoryRunStore",
    "Message",
    "ModelGate",
    "Plan",
    "PlanCreated",
    "PlanStep",
    "RetryConfig",
    "RunAborted",
    "RunFinished",
    "RunHalted",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "Runtime",
    "RuntimeEvent",
    "RuntimeSettings",
    "SecurityConfig",
    "SecurityViolation",
    "SensitiveRedactor",
    "SessionMemory",
    "Severity",
    "Step",
    "StepCompleted",
    "StepResult",
    "StepStarted",
    "StepStatus",
    "TokenUsage",
    "Tool",
    "ToolCache",
    "ToolCalled",
    "ToolGate",
    "ToolPolicy",
    "TraceEvent",
    "ValidationError",
    "ValidationIssue",
    "ValidationResult",
    "ValidationSeverity",
    "current_tool_gate",
    "current_trace_id",
    "gated",
    "health_check",
]
