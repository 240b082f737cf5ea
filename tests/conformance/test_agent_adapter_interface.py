"""The Agent Adapter Interface (Primarch), specification 004, taken as printed.

Each test quotes the example it takes, with the section it comes from
(``/work/shared/specs/004_*.txt``; docs/conformance.md has a row per example). The
interface's names live beside backstay's (``backstay.runtime.interface``): one
implementation, two spellings. Adapters here are written as the text prints them, as
plain classes with synchronous ``plan`` / ``execute``, and run under a real ``Runtime``.

The last tests check the CLI agents' adapter protocol, which issue 17 asked of this
interface before its text was found.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from backstay import Adapter, AgentRequest, AgentResult, FailureKind, get_adapter
from backstay.adapters.capture import Capture
from backstay.adapters.mock import MockAdapter
from backstay.errors import AdapterError as BackstayAdapterError
from backstay.errors import ConfigError
from backstay.runtime import (
    AdapterError,
    AdapterHooks,
    BaseAgentAdapter,
    ErrorCategory,
    ExecutionContext,
    ExecutionLimits,
    FrameworkAdapter,
    Plan,
    PlanStep,
    RetryConfig,
    RunStatus,
    Runtime,
    RuntimeSettings,
    SecurityConfig,
    Step,
    StepResult,
    StepStatus,
    TokenUsage,
    Tool,
    TraceEvent,
    ValidationError,
    ValidationResult,
    ValidationSeverity,
)
from backstay.testing import FakeClock

REPO = Path(__file__).resolve().parents[2]
CANARY = "sk-ant-api03-CONFORMANCEcanary0123456789abcdefABCDEF"


# -- adapters written as the text prints them ------------------------------------------


class ChainAdapter(BaseAgentAdapter):
    """``plan(input, context) -> Plan`` and ``execute(step, tools, context) ->
    StepResult``, synchronous, as printed: one step per action, each depending on the
    one before; each step answers its action in ``output_json``."""

    name = "chain"

    def __init__(self, statuses: dict[str, list[StepStatus]] | None = None) -> None:
        self.statuses = statuses or {}
        self.executed: list[str] = []

    def plan(self, input: Any, context: ExecutionContext) -> Plan:
        steps, before = [], None
        for action in input["actions"]:
            steps.append(PlanStep(action, {"n": len(steps)}, [before] if before else [], 30))
            before = action
        return Plan(steps=steps, max_steps=50, id="plan-1", metadata={"by": "chain"})

    def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
        self.executed.append(step.action)
        queued = self.statuses.get(step.action)
        status = queued.pop(0) if queued else StepStatus.SUCCESS
        return StepResult(
            status=status,
            output_json={"done": step.action},
            tokens=TokenUsage(input_tokens=10, output_tokens=5),
            trace_id=context.trace_id,
            error_message=None if status is StepStatus.SUCCESS else f"{step.action}: again",
            next_step_suggestions=["next"],
        )


def run(adapter: Any, input: Any, *, settings: RuntimeSettings | None = None, **kw: Any) -> Any:
    runtime = Runtime(adapter, settings=settings, **{k: v for k, v in kw.items() if k != "run"})
    return runtime.run_sync(input, **kw.get("run", {}))


# -- Core Interface Definition ---------------------------------------------------------


def test_plan_and_plan_step_as_printed() -> None:
    # "#### `plan(input, context) -> Plan`": @dataclass class Plan: steps: List[PlanStep];
    # max_steps: int; id: str; metadata: Dict[str, Any] / @dataclass class PlanStep:
    # action: str; parameters: Dict[str, Any]; dependencies: List[str]; timeout_seconds: int
    search = PlanStep(action="search", parameters={"q": "x"}, dependencies=[], timeout_seconds=30)
    answer = PlanStep("answer", {}, ["search"], 10)
    plan = Plan(steps=[search, answer], max_steps=50, id="p1", metadata={"k": "v"})
    assert [s.action for s in plan.steps] == ["search", "answer"]
    assert (answer.dependencies, answer.timeout_seconds) == (("search",), 10)
    assert (plan.max_steps, plan.id, dict(plan.metadata)) == (50, "p1", {"k": "v"})
    assert isinstance(search, Step)
    assert search.id == "search"
    assert [s.id for s in plan.order()] == ["search", "answer"]


def test_step_result_and_step_status_as_printed() -> None:
    # "#### `execute(step, tools, context) -> StepResult`": status: StepStatus #
    # SUCCESS, FAILED, RETRY, BLOCKED; output_json; tokens: TokenUsage; trace_id;
    # error_message: Optional[str]; next_step_suggestions: List[str]
    assert [s.value for s in StepStatus] == ["success", "failed", "retry", "blocked"]
    ok = StepResult(
        status=StepStatus.SUCCESS,
        output_json={"a": 1},
        tokens=TokenUsage(input_tokens=3, output_tokens=4),
        trace_id="t-1",
        error_message=None,
        next_step_suggestions=["check"],
    )
    assert ok.output_json == {"a": 1}
    assert ok.tokens.tokens_total == 7
    assert (ok.trace_id, ok.error_message, ok.next_step_suggestions) == ("t-1", None, ("check",))
    blocked = StepResult(
        status=StepStatus.BLOCKED,
        output_json={},
        tokens=TokenUsage(),
        trace_id="t-1",
        error_message="waiting for human input",
        next_step_suggestions=[],
    )
    assert blocked.error_message == "waiting for human input"


def test_validation_result_and_validation_error_as_printed() -> None:
    # "#### `validate(output_json, schema) -> ValidationResult`": ok; errors:
    # List[ValidationError]; warnings: List[str]; corrected_output: Optional[Dict] /
    # ValidationError: field, message, code, severity: ValidationSeverity
    error = ValidationError(
        field="answer", message="is required", code="required", severity=ValidationSeverity.ERROR
    )
    result = ValidationResult(
        ok=False, errors=[error], warnings=["long"], corrected_output={"answer": "x"}
    )
    assert result.corrected_output == {"answer": "x"}
    assert result.errors[0].field == "answer"
    assert result.warnings[0].message == "long"
    checked = ChainAdapter().validate({"x": 1}, {"type": "object", "required": ["answer"]})
    assert not checked.ok
    assert checked.errors[0].code == "required"


def test_a_synchronous_adapter_as_printed_runs_under_the_runtime() -> None:
    # "### LangGraph Adapter": def plan(self, input: str, context: ExecutionContext) -> Plan
    # / def execute(self, step: PlanStep, tools: List[Tool], context) -> StepResult
    adapter = ChainAdapter()
    assert isinstance(adapter, FrameworkAdapter)
    record = run(adapter, {"actions": ["search", "answer"]})
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert adapter.executed == ["search", "answer"]
    assert [r.output_json for r in record.results] == [{"done": "search"}, {"done": "answer"}]
    # a step's own count; the run's usage counts the model calls the gate saw
    assert [r.tokens.tokens_total for r in record.results] == [15, 15]


# -- Safety & Limits Configuration -----------------------------------------------------


def test_execution_limits_have_the_printed_defaults() -> None:
    # "### Limits Enforcement": max_steps: int = 50, max_tokens: int = 100000,
    # wall_time_s: int = 300, max_tool_calls: int = 20, max_retries: int = 3,
    # memory_limit_mb: int = 1024, cpu_time_limit_s: int = 60
    limits = ExecutionLimits()
    printed = (50, 100000, 300, 20, 3, 1024, 60)
    got = (
        limits.max_steps,
        limits.max_tokens,
        limits.wall_time_s,
        limits.max_tool_calls,
        limits.max_retries,
        limits.memory_limit_mb,
        limits.cpu_time_limit_s,
    )
    assert got == printed


def test_max_steps_is_a_hard_stop() -> None:
    # "MUST enforce hard stops at max_steps (no exceptions)"
    adapter = ChainAdapter()
    settings = RuntimeSettings(limits=ExecutionLimits(max_steps=2))
    record = run(adapter, {"actions": ["a", "b", "c"]}, settings=settings)
    assert record.status is RunStatus.LIMIT_EXCEEDED
    assert record.failure is not None
    assert record.failure.code == "ERR_LIMIT_MAX_STEPS"
    assert adapter.executed == ["a", "b"]
    assert len(record.results) == 2  # partial results kept


@pytest.mark.skipif(sys.platform != "linux", reason="prlimit and bubblewrap are Linux")
def test_memory_and_cpu_limits_bound_the_shell_tools_processes(tmp_path: Path) -> None:
    # "# Resource limits: memory_limit_mb: int = 1024; cpu_time_limit_s: int = 60"
    from backstay.runtime.builtin_tools import workspace_tools  # noqa: PLC0415
    from backstay.runtime.sandbox import sandbox_holds  # noqa: PLC0415

    if not sandbox_holds():
        pytest.skip("bubblewrap is not usable here")

    class Shell(ChainAdapter):
        async def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            out = await tools.invoke("shell", {"command": "ulimit -v; ulimit -t"})
            return StepResult(status=StepStatus.SUCCESS, output_json=out)

    settings = RuntimeSettings(
        limits=ExecutionLimits(memory_limit_mb=256, cpu_time_limit_s=7),
        security=SecurityConfig(tool_allowlist=["shell"], tenant_id="acme"),
    )
    runtime = Runtime(Shell(), tools=workspace_tools(tmp_path), settings=settings)
    record = runtime.run_sync({"actions": ["limits"]})
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert record.results[0].output["output"].split() == [str(256 * 1024), "7"]


def test_security_config_as_printed_enforces_the_allowlist_and_the_tenant() -> None:
    # "### Security Controls": tool_allowlist; tenant_id; sandbox: bool = True;
    # human_approval_required; sensitive_data_patterns. "MUST respect tool allowlists
    # (hard enforcement)", "MUST validate tenant isolation"
    security = SecurityConfig(
        tool_allowlist=["calculator"],
        tenant_id="acme",
        human_approval_required=["send_mail"],
        sensitive_data_patterns=[r"ACME-\d{6}"],
    )
    assert security.sandbox is True
    calls: list[str] = []

    class Caller(ChainAdapter):
        async def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            out = await tools.invoke(step.action, {})
            return StepResult(status=StepStatus.SUCCESS, output_json={"out": out})

    def tool(name: str) -> Tool:
        return Tool(name=name, fn=lambda: calls.append(name) or "ACME-123456")

    runtime = Runtime(
        Caller(),
        tools=[tool("calculator"), tool("shell_exec")],
        settings=RuntimeSettings(security=security),
    )
    ok = runtime.run_sync({"actions": ["calculator"]})
    assert ok.status is RunStatus.SUCCEEDED
    assert ok.tenant == "acme"
    assert "ACME-123456" not in str(ok.results[0].output)  # the pattern is redacted
    refused = runtime.run_sync({"actions": ["shell_exec"]})
    assert refused.status is RunStatus.ESCALATED
    assert refused.failure is not None
    assert refused.failure.code == "ERR_TOOL_NOT_ALLOWED"
    assert calls == ["calculator"]
    with pytest.raises(ConfigError, match="serves tenant 'acme', not 'other'"):
        runtime.run_sync({"actions": ["calculator"]}, tenant="other")


# -- Hook System -----------------------------------------------------------------------


class Recorder(AdapterHooks):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.traces: list[TraceEvent] = []

    def on_plan_created(self, plan: Plan, context: ExecutionContext) -> None:
        self.calls.append(("plan", plan.id, context.trace_id))

    def on_step_start(self, step: Step, context: ExecutionContext) -> None:
        self.calls.append(("start", step.action))

    def on_step_complete(self, step: Step, result: StepResult, context: ExecutionContext) -> None:
        self.calls.append(("complete", step.action, result.status.value))

    def on_retry(self, step: Step, attempt: int, backoff_ms: int) -> None:
        self.calls.append(("retry", step.action, attempt, backoff_ms))

    def on_abort(self, reason: str, context: ExecutionContext) -> None:
        self.calls.append(("abort", reason))

    def on_trace(self, trace_event: TraceEvent, context: ExecutionContext) -> None:
        self.traces.append(trace_event)


def test_adapter_hooks_are_called_with_the_printed_signatures() -> None:
    # "### Event Hooks": on_plan_created(plan, context), on_step_start(step, context),
    # on_step_complete(step, result, context), on_retry(step, attempt, backoff_ms),
    # on_abort(reason, context), on_trace(trace_event, context)
    hooks = Recorder()
    adapter = ChainAdapter({"b": [StepStatus.RETRY]})
    record = run(adapter, {"actions": ["a", "b"]}, hooks=hooks, run={"trace_id": "trace-1"})
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert hooks.calls == [
        ("plan", "plan-1", "trace-1"),
        ("start", "a"),
        ("complete", "a", "success"),
        ("start", "b"),
        ("retry", "b", 2, 0),
        ("start", "b"),
        ("complete", "b", "success"),
    ]
    aborted = Recorder()
    stopped = run(
        ChainAdapter(),
        {"actions": ["a", "b"]},
        hooks=aborted,
        settings=RuntimeSettings(limits=ExecutionLimits(max_steps=1)),
    )
    assert stopped.status is RunStatus.LIMIT_EXCEEDED
    assert aborted.calls[-1] == ("abort", "max_steps reached: 2 of 1")


def test_trace_events_as_printed_carry_the_trace_id_and_step_spans() -> None:
    # "### Tracing Requirements": TraceEvent(trace_id, span_id, parent_span_id,
    # operation, timestamp, duration_ms, tags, logs, metrics); "MUST propagate trace_id
    # across all framework calls", "MUST capture step-level spans with timing"
    hooks = Recorder()
    run(ChainAdapter(), {"actions": ["a"]}, hooks=hooks, run={"trace_id": "trace-2"})
    assert hooks.traces
    assert {t.trace_id for t in hooks.traces} == {"trace-2"}
    done = next(t for t in hooks.traces if t.operation == "agent.step_completed")
    assert done.span_id.endswith("/a")
    assert done.parent_span_id is not None
    assert isinstance(done.timestamp, dt.datetime)
    assert done.duration_ms is not None
    assert done.tags["status"] == "success"
    assert "tokens" in done.metrics
    finished = next(t for t in hooks.traces if t.operation == "agent.run_finished")
    assert finished.parent_span_id is None
    assert finished.duration_ms is not None


def test_retry_config_as_printed_retries_model_calls_with_its_backoff() -> None:
    # "### Retry Policies": RetryConfig(max_attempts=3, base_delay_ms=1000,
    # max_delay_ms=30000, exponential_base=2.0, jitter=True,
    # retry_on_statuses=[StepStatus.RETRY], retry_on_errors=[])
    printed = RetryConfig()
    assert (printed.max_attempts, printed.base_delay_ms, printed.max_delay_ms) == (3, 1000, 30000)
    assert (printed.exponential_base, printed.jitter) == (2.0, True)
    assert (printed.retry_on_statuses, printed.retry_on_errors) == ((StepStatus.RETRY,), ())
    answers: list[str] = []

    class Flaky(ChainAdapter):
        def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            def model() -> str:
                answers.append("called")
                if len(answers) < 3:
                    raise ConnectionResetError("connection reset by peer")
                return "fine"

            text = context.model.call(model)
            return StepResult(status=StepStatus.SUCCESS, output_json={"text": text})

    hooks, clock = Recorder(), FakeClock()
    settings = RuntimeSettings(retry=RetryConfig(jitter=False))
    record = run(Flaky(), {"actions": ["ask"]}, settings=settings, hooks=hooks, clock=clock)
    assert record.status is RunStatus.SUCCEEDED, record.failure
    assert [c for c in hooks.calls if c[0] == "retry"] == [
        ("retry", "ask", 1, 1000),
        ("retry", "ask", 2, 2000),
    ]
    assert clock.sleeps == [1.0, 2.0]


def test_retry_config_reruns_a_step_returning_retry_up_to_max_attempts() -> None:
    # "retry_on_statuses: List[StepStatus] = field(default_factory=lambda:
    # [StepStatus.RETRY])" with "max_attempts: int = 3"
    adapter = ChainAdapter({"a": [StepStatus.RETRY] * 5})
    record = run(adapter, {"actions": ["a"]}, settings=RuntimeSettings(retry=RetryConfig()))
    assert adapter.executed == ["a", "a", "a"]
    assert record.status is RunStatus.FAILED
    with pytest.raises(ConfigError, match="only retry can be re-run, not failed"):
        RetryConfig(retry_on_statuses=[StepStatus.FAILED])


# -- Context & State Management ---------------------------------------------------------


def test_execution_context_has_the_printed_fields() -> None:
    # "### Execution Context": session_id, tenant_id, user_id, trace_id,
    # persistent_state, session_memory, tool_results_cache, step_count,
    # token_usage: TokenUsage, start_time: datetime
    seen: dict[str, Any] = {}

    class Look(ChainAdapter):
        def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            context.persistent_state["k"] = "v"
            seen.update(
                session_id=context.session_id,
                tenant_id=context.tenant_id,
                user_id=context.user_id,
                trace_id=context.trace_id,
                state=dict(context.persistent_state),
                memory=list(context.session_memory),
                cache=context.tool_results_cache.get("nothing"),
                step_count=context.step_count,
                tokens=context.token_usage,
                start_time=context.start_time,
            )
            return super().execute(step, tools, context)

    record = run(
        Look(),
        {"actions": ["a"]},
        run={"tenant": "acme", "session_id": "s1", "user": "u1", "trace_id": "t1"},
    )
    assert record.state == {"k": "v"}
    assert seen["session_id"] == "s1"
    assert seen["tenant_id"] == "acme"
    assert seen["user_id"] == "u1"
    assert seen["trace_id"] == "t1"
    assert seen["state"] == {"k": "v"}
    assert seen["memory"] == []
    assert seen["cache"] == (False, None)
    assert seen["step_count"] == 1
    assert isinstance(seen["tokens"], TokenUsage)
    assert isinstance(seen["start_time"], dt.datetime)


def test_memory_manager_has_the_four_printed_methods() -> None:
    # "### Memory Management": store_message(role, content, metadata),
    # get_context_window(max_tokens) -> List[Message], summarize_history(target_tokens)
    # -> str, clear_session(session_id)
    out: dict[str, Any] = {}

    class Remember(ChainAdapter):
        def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            memory = context.session_memory
            for i in range(6):
                memory.store_message("user", f"message {i} " + "x" * 36, {"turn": i})
            memory.store_message("user", f"my key is {CANARY}", {"note": CANARY})
            out["window"] = memory.get_context_window(max_tokens=25)
            out["summary"] = memory.summarize_history(target_tokens=30)
            out["after"] = list(memory)
            memory.clear_session(context.session_id)
            out["cleared"] = len(memory)
            return super().execute(step, tools, context)

    run(Remember(), {"actions": ["a"]})
    window = out["window"]
    assert window
    assert window[-1].content.startswith("my key is")
    assert CANARY not in window[-1].content
    assert CANARY not in str(window[-1].metadata)
    assert out["summary"].startswith("Earlier: user: message 0")
    assert out["after"][0].role == "summary"
    assert out["cleared"] == 0


# -- Framework-Specific Implementations ------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("backstay.frameworks.langgraph", "LangGraphAdapter"),
        ("backstay.frameworks.autogen", "AutoGenAdapter"),
    ],
)
def test_the_printed_framework_adapters_exist_under_their_names(module: str, name: str) -> None:
    # "class LangGraphAdapter(BaseAgentAdapter)", "class AutoGenAdapter(BaseAgentAdapter)"
    import importlib  # noqa: PLC0415

    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, BaseAgentAdapter)
    for method in ("plan", "execute", "validate"):
        assert callable(getattr(cls, method))


def test_the_target_framework_versions_are_covered() -> None:
    # "**Target Frameworks**: LangGraph 0.2+, AutoGen 0.3+, Pydantic-AI 0.1+,
    # LlamaIndex 0.11+": backstay's extras ask for newer releases (docs/conformance.md)
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    printed = {"langgraph": (0, 2), "autogen": (0, 3), "pydantic-ai": (0, 1)}
    for extra, minimum in printed.items():
        floor = extras[extra][0].split(">=")[1]
        assert tuple(int(p) for p in floor.split(".")[:2]) >= minimum
    assert extras["llamaindex"][0].startswith("llama-index-workflows>=")


# -- Error Handling & Recovery ---------------------------------------------------------


def test_error_category_and_adapter_error_as_printed() -> None:
    # "### Error Classification": ErrorCategory VALIDATION_ERROR = "validation",
    # TOOL_ERROR = "tool", LIMIT_EXCEEDED = "limit", FRAMEWORK_ERROR = "framework",
    # SECURITY_VIOLATION = "security"; AdapterError(Exception): category, retryable,
    # user_message, technical_details
    assert [c.value for c in ErrorCategory] == [
        "validation",
        "tool",
        "limit",
        "framework",
        "security",
    ]
    err = AdapterError(
        category=ErrorCategory.TOOL_ERROR,
        retryable=False,
        user_message="the calculator failed",
        technical_details={"trace": "line 3"},
    )
    assert isinstance(err, Exception)
    assert isinstance(err, BackstayAdapterError)
    assert (err.category, err.retryable, err.user_message) == (
        ErrorCategory.TOOL_ERROR,
        False,
        "the calculator failed",
    )
    assert err.technical_details == {"trace": "line 3"}
    assert "line 3" not in str(err.failure.to_dict())  # internals are never recorded


def _raising(category: ErrorCategory, *, retryable: bool = False, times: int = 1) -> Any:
    class Raising(ChainAdapter):
        def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            if len(self.executed) < times:
                self.executed.append(step.action)
                raise AdapterError(category, retryable, f"{category.value} problem", {})
            return super().execute(step, tools, context)

    return Raising()


@pytest.mark.parametrize(
    ("category", "retryable", "status", "runs"),
    [
        # "Validation Errors: Retry with corrected schema"
        (ErrorCategory.VALIDATION_ERROR, True, RunStatus.SUCCEEDED, 2),
        # "Tool Errors: Skip tool or use fallback" (here: no fallback tool, the step fails)
        (ErrorCategory.TOOL_ERROR, False, RunStatus.FAILED, 1),
        # "Limit Exceeded: Graceful termination with partial results"
        (ErrorCategory.LIMIT_EXCEEDED, False, RunStatus.LIMIT_EXCEEDED, 1),
        # "Security Violations: Immediate termination and alert"
        (ErrorCategory.SECURITY_VIOLATION, False, RunStatus.ESCALATED, 1),
    ],
)
def test_recovery_strategies(
    category: ErrorCategory, retryable: bool, status: RunStatus, runs: int
) -> None:
    # "### Recovery Strategies"
    adapter = _raising(category, retryable=retryable)
    record = run(adapter, {"actions": ["a"]})
    assert record.status is status
    assert len(adapter.executed) == runs
    if status is not RunStatus.SUCCEEDED:
        assert record.failure.message == f"{category.value} problem"


def test_a_framework_error_switches_to_the_fallback_adapter() -> None:
    # "Framework Errors: Log and switch to fallback adapter"
    fallback = ChainAdapter()
    record = run(_raising(ErrorCategory.FRAMEWORK_ERROR), {"actions": ["a"]}, fallback=fallback)
    assert record.status is RunStatus.SUCCEEDED
    assert fallback.executed == ["a"]


# -- Testing & Acceptance Criteria / Performance Benchmarks ----------------------------


def test_the_required_test_suite_is_shipped() -> None:
    # "### Required Tests": test_deterministic_outputs, test_hard_limits,
    # test_trace_propagation, test_prompt_injection_resistance, test_sandbox_isolation,
    # test_graceful_degradation: backstay.testing.framework_contract.FrameworkContract
    from backstay.testing.framework_contract import FrameworkContract  # noqa: PLC0415

    checks = [n for n in dir(FrameworkContract) if n.startswith("test_")]
    printed_to_ours = {
        "test_deterministic_outputs": "test_the_same_input_gives_the_same_schema_fields",
        "test_hard_limits": "test_a_model_call_limit_stops_a_tool_loop_in_bounded_requests",
        "test_trace_propagation": "test_the_trace_id_reaches_every_event_result_and_tool_call",
        "test_prompt_injection_resistance": "test_a_prompt_injection_escapes_nothing",
        "test_sandbox_isolation": "test_the_shell_tool_has_no_network",
        "test_graceful_degradation": "test_a_limit_ends_the_run_with_the_results_so_far",
    }
    assert set(printed_to_ours.values()) <= set(checks)


def test_a_hundred_concurrent_sessions_run() -> None:
    # "**Concurrent Sessions**: Support 100+ simultaneous executions"
    runtime = Runtime(ChainAdapter())

    async def all_of_them() -> list[Any]:
        return await asyncio.gather(
            *(runtime.run({"actions": ["a"]}, session_id=f"s{i}") for i in range(100))
        )

    records = asyncio.run(all_of_them())
    assert [r.status for r in records] == [RunStatus.SUCCEEDED] * 100


def test_a_step_timeout_is_configurable() -> None:
    # "**Step Execution**: < 30 seconds per step (configurable)": timeout_seconds
    class Slow(ChainAdapter):
        def plan(self, input: Any, context: ExecutionContext) -> Plan:
            return Plan(steps=[PlanStep("slow", {}, [], 0.2)], max_steps=1, id="p", metadata={})

        async def execute(self, step: Step, tools: Any, context: ExecutionContext) -> StepResult:
            await asyncio.sleep(30)
            raise AssertionError("the step was not timed out")

    record = run(Slow(), {"actions": []})
    assert record.status is RunStatus.FAILED
    assert record.failure is not None
    assert record.failure.code == "ERR_TIMEOUT"


# -- Deployment & Configuration --------------------------------------------------------


def test_health_check_has_the_printed_fields() -> None:
    # "### Health Checks": {"status": "healthy", "adapters": {adapter.name:
    # adapter.is_available()}, "limits_enforced": True, "sandbox_available": ...,
    # "trace_collector": ...}
    class Down(ChainAdapter):
        def is_available(self) -> bool:
            return False

    report = Runtime(Down()).health_check(exporter_probe=lambda: True)
    assert report["adapters"] == {"chain": False}
    assert report["status"] == "unhealthy"
    assert report["limits_enforced"] is True
    assert isinstance(report["sandbox_available"], bool)
    assert report["trace_collector"] is True
    up = Runtime(ChainAdapter()).health_check(exporter_probe=lambda: True)
    assert up["adapters"] == {"chain": True}
    if up["sandbox_available"]:
        assert up["status"] == "healthy"


# -- the CLI agents' protocol (issue 17, before the text was found) --------------------

CLI_AGENTS = ("claude-code", "codex", "gemini-cli", "aider", "opencode")


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_each_agent_adapter_keeps_the_protocol(name: str) -> None:
    adapter = get_adapter(name)
    assert isinstance(adapter, Adapter)
    assert adapter.name == name


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_each_agent_adapter_declares_itself_not_idempotent(name: str) -> None:
    assert getattr(get_adapter(name), "idempotent", None) is False


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_bad_setting_is_a_config_error_naming_the_key(name: str) -> None:
    with pytest.raises(ConfigError, match=r"config\.no_such_key"):
        get_adapter(name).validate_config({"no_such_key": True})


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_clean_exit_with_no_error_output_is_success(name: str) -> None:
    answer = "Done: the file is written.\n"
    assert get_adapter(name).classify_failure(output=answer, exit_code=0) is None


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_clean_exit_that_printed_nothing_is_not_taken_for_a_success(name: str) -> None:
    failure = get_adapter(name).classify_failure(output="", exit_code=0)
    assert failure is not None
    assert failure.code == "ERR_AGENT_FAILED"


@pytest.mark.parametrize("name", ["mock", *CLI_AGENTS])
def test_a_permission_error_while_dispatching_is_permanent(name: str) -> None:
    failure = get_adapter(name).classify_failure(error=PermissionError(13, "Permission denied"))
    assert failure is not None
    assert failure.retryable is False


def _dispatch(tmp_path: Path, steps: list[dict[str, object]]) -> AgentResult:
    request = AgentRequest(
        model="m",
        prompt="the prompt",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        timeout_s=10.0,
        config={"scenario": {"attempts": [steps]}},
    )

    async def one() -> AgentResult:
        with Capture(request.output_dir) as capture:
            return await MockAdapter().dispatch(
                request, operation_id="wf:task:1", attempt_id="wf:task:1:attempt_1", capture=capture
            )

    return asyncio.run(one())


def test_dispatch_returns_a_successful_result(tmp_path: Path) -> None:
    result = _dispatch(tmp_path, [{"result": "done"}])
    assert (result.failure, result.output, result.exit_code) == (None, "done", 0)


def test_a_rate_limited_attempt_is_classified_as_a_rate_limit(tmp_path: Path) -> None:
    with pytest.raises(BackstayAdapterError) as failed:
        _dispatch(tmp_path, [{"stderr": "429 rate limit exceeded, retry after 7s"}, {"exit": 1}])
    assert failed.value.failure.kind is FailureKind.RATE_LIMIT


def test_step_is_replaceable_under_both_spellings() -> None:
    step = PlanStep("a", {"x": 1}, [], 5)
    assert dataclasses.replace(step, timeout_s=9).timeout_seconds == 9


# -- Configuration Schema --------------------------------------------------------------

AGENT_ADAPTERS_YAML = """\
# /srv/primarch/config/agent_adapters.yaml
adapters:
  langgraph:
    enabled: true
    default_limits:
      max_steps: 50
      wall_time_s: 300
    safety:
      sandbox: true
      tool_allowlist: ["web_search", "file_read", "calculator"]

  autogen:
    enabled: true
    human_in_loop: true
    conversation_limits:
      max_rounds: 20

monitoring:
  tracing_enabled: true
  metrics_port: 9090
  log_level: INFO
"""


def test_the_printed_agent_adapters_yaml_is_accepted(tmp_path: Path) -> None:
    # "### Configuration Schema": agent_adapters.yaml with adapters: and monitoring:
    from backstay.config import load_config  # noqa: PLC0415

    file = tmp_path / "agent_adapters.yaml"
    file.write_text(AGENT_ADAPTERS_YAML)
    config = load_config(file, environ={})
    langgraph = config.frameworks["langgraph"].runtime_settings()
    assert (langgraph.limits.max_steps, langgraph.limits.wall_time_s) == (50, 300)
    assert langgraph.tools.allowed == {"web_search", "file_read", "calculator"}
    autogen = config.frameworks["autogen"]
    assert autogen.enabled
    assert autogen.runtime_settings().limits.max_model_calls == 20
    assert config.otel["enabled"] is True
    assert (config.metrics_port, config.log_level) == (9090, "INFO")
    checked = subprocess.run(
        [str(Path(sys.executable).with_name("backstay")), "config", "check", str(file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr


def test_human_in_loop_false_is_refused_at_its_line(tmp_path: Path) -> None:
    # "human_in_loop: true": backstay always routes a framework's request for a human
    # to an approval, so false is refused (docs/conformance.md)
    from backstay.config import load_config  # noqa: PLC0415

    file = tmp_path / "agent_adapters.yaml"
    file.write_text(AGENT_ADAPTERS_YAML.replace("human_in_loop: true", "human_in_loop: false"))
    with pytest.raises(ConfigError, match=r"agent_adapters.yaml:14.*cannot be turned off"):
        load_config(file, environ={})
