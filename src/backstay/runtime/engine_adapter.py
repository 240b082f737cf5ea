"""``RuntimeTaskAdapter``: a framework agent as a task of backstay's engine.

A suite task names it (``adapter: agent-runtime``, or the name a framework adapter
registers its subclass under, such as ``langgraph``) with the agent as an importable
factory::

    - id: summarise
      adapter: agent-runtime
      model: claude-sonnet-4-6
      prompt: Summarise the notes.
      config:
        agent: my_package.agents:make_agent     # called with the options below
        options: {base_url: "http://127.0.0.1:8080"}
        api_key_env: ANTHROPIC_API_KEY
        allowed_tools: [read_file, list_dir]
        approval_tools: [write_file]
        limits: {max_steps: 10, max_tokens: 20000}
        breaker: {failure_threshold: 3}         # or false; default: backstay's breaker
        rate_limit: {requests_per_minute: 50}   # or false; default: learnt from the headers

Every model call of the agent goes classify → rate limiter → circuit breaker → retry
policy. The breaker and the limiter belong to the adapter instance, one per ``(adapter
name, model)`` (see ``engine_gates``): the tasks of a batch share them, so a model in an
outage opens its circuit for the later tasks too, and a 429's wait holds them all back.

The agent run's id is the task's ``operation_id``; it is recorded under the task's
``tenant`` (else ``config.tenant``, else ``default``), and its checkpoint lives in the
batch's own store, the one the engine gives the attempt (``AgentRequest.store``; see
``run_stores``): ``state.sqlite`` of the state directory, or the batch's Redis. Outside an
engine (``backstay run``) it is ``state.sqlite`` in the run's output directory. A retried
attempt, or a ``backstay resume`` after a crash, continues the half-done run after its
last successful step instead of starting again. A run that pauses for an approval fails
the attempt with ``ERR_APPROVAL_REQUIRED`` (the engine escalates the task); once the
approval is decided (``backstay escalations resolve ID --approve``, or ``decide`` on the
run store) and the escalation resolved with ``retry``, the next attempt runs the
approved call.

A framework adapter registers its own name by subclassing with ``name = "langgraph"``
and listing ``"langgraph": "module:Class"`` under the ``backstay.adapters`` entry points
(or in ``BUILTIN_ADAPTERS``).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from backstay.adapters.base import BaseAdapter
from backstay.adapters.capture import Capture
from backstay.adapters.contract import AgentRequest, AgentResult, AgentStatus
from backstay.errors import AdapterError, ConfigError
from backstay.runtime.builtin_tools import workspace_tools
from backstay.runtime.engine_gates import TaskGates, breaker_settings, rate_limit_settings
from backstay.runtime.limits import ExecutionLimits
from backstay.runtime.protocol import FrameworkAdapter
from backstay.runtime.records import RunRecord, RunStatus
from backstay.runtime.run_stores import open_run_stores
from backstay.runtime.runtime import Runtime
from backstay.runtime.settings import RuntimeSettings
from backstay.runtime.store import RunStore
from backstay.runtime.tools import ToolPolicy
from backstay.store.location import StoreLocation

__all__ = ["RuntimeTaskAdapter", "load_factory", "run_location", "run_tenant"]


def load_factory(target: str) -> Any:
    """The callable ``module:function`` names; ``ConfigError`` saying what is wrong."""
    module_name, sep, attribute = str(target).partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"must be module:function, got {target!r}", where="config.agent")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"cannot import {target!r}: {err}", where="config.agent") from None
    if not callable(value):
        raise ConfigError(f"{target!r} is not callable", where="config.agent")
    return value


def run_location(request: AgentRequest) -> StoreLocation:
    """Where the run of ``request`` is recorded: the batch's store the engine gave it,
    else (no engine) ``state.sqlite`` in the request's output directory."""
    return request.store or StoreLocation.sqlite(request.output_dir)


def run_tenant(request: AgentRequest) -> str:
    """Whose run it is: the task's tenant, else the adapter's ``tenant`` setting, else
    ``default``."""
    return request.tenant or str(request.config.get("tenant") or "default")


def _outputs(record: RunRecord) -> str:
    return json.dumps({r.step_id: r.output for r in record.results if r.ok}, sort_keys=True)


class RuntimeTaskAdapter(BaseAdapter):
    """Runs the agent ``config.agent`` names under a ``Runtime`` (see the module)."""

    name: ClassVar[str] = "agent-runtime"
    config_keys: ClassVar[frozenset[str]] = frozenset(
        {
            "agent",
            "options",
            "api_key_env",
            "tenant",
            "allowed_tools",
            "approval_tools",
            "cacheable_tools",
            "builtin_tools",
            "allow_weak_sandbox",
            "limits",
            "redact_patterns",
            "breaker",
            "rate_limit",
        }
    )

    task_limits: ClassVar[Mapping[str, str]] = {
        "max_turns": "limits.max_model_calls",
        "max_tokens": "limits.max_tokens",
        "max_cost_usd": "limits.max_cost_usd",
        "max_steps": "limits.max_steps",
        "max_tool_calls": "limits.max_tool_calls",
        "wall_time_s": "limits.wall_time_s",
    }

    def __init__(self) -> None:
        # Kept for the adapter's lifetime: the tasks of a batch share breakers and limiters.
        self.gates = TaskGates()

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        super().validate_config(config)
        if "agent" not in config:
            raise ConfigError("names the agent factory (module:function)", where="config.agent")
        for key in ("options", "limits"):
            if not isinstance(config.get(key, {}), Mapping):
                raise ConfigError("must be a mapping", where=f"config.{key}")
        if not isinstance(config.get("allow_weak_sandbox", False), bool):
            raise ConfigError("must be true or false", where="config.allow_weak_sandbox")
        ExecutionLimits(**dict(config.get("limits") or {}))
        self.validate_gates(config)
        return True

    @staticmethod
    def validate_gates(config: Mapping[str, Any]) -> None:
        """Check ``config.breaker`` and ``config.rate_limit`` (``ConfigError`` if wrong)."""
        breaker_settings(config.get("breaker"))
        rate_limit_settings(config.get("rate_limit"))

    def make_framework(self, request: AgentRequest) -> FrameworkAdapter:
        """The framework adapter of this task, from its factory."""
        config = request.config
        options: dict[str, Any] = {"model": request.model, **dict(config.get("options") or {})}
        key_env = config.get("api_key_env")
        if key_env:
            options["api_key"] = request.env.get(str(key_env), "")
        made = load_factory(str(config["agent"]))(options)
        if not isinstance(made, FrameworkAdapter):
            raise ConfigError(
                f"{config['agent']} returned {type(made).__name__}, not a FrameworkAdapter",
                where="config.agent",
            )
        return made

    def settings(self, request: AgentRequest) -> RuntimeSettings:
        config = request.config
        return RuntimeSettings(
            limits=ExecutionLimits(**dict(config.get("limits") or {})),
            tools=ToolPolicy(
                allowed=frozenset(config.get("allowed_tools") or ()),
                approval=frozenset(config.get("approval_tools") or ()),
                cacheable=frozenset(config.get("cacheable_tools") or ()),
            ),
            redact_patterns=tuple(config.get("redact_patterns") or ()),
        )

    async def execute(
        self, request: AgentRequest, *, operation_id: str, attempt_id: str, capture: Capture
    ) -> AgentResult:
        config = request.config
        tenant = run_tenant(request)
        framework = self.make_framework(request)
        weak = config.get("allow_weak_sandbox") is True
        tools = (
            workspace_tools(request.workspace, allow_weak_sandbox=weak)
            if config.get("builtin_tools", True)
            else ()
        )
        location = run_location(request)
        if location.path is not None:
            location.path.mkdir(parents=True, exist_ok=True)
        with open_run_stores(location) as stores:
            store = stores.runs
            runtime = Runtime(
                framework,
                tools=tools,
                settings=self.settings(request),
                store=store,
                memory=stores.memory,
                breaker=self.gates.breaker(config, self.name, request.model),
                limiter=self.gates.limiter(config, self.name, request.model),
            )
            try:
                record = await self._run(runtime, store, request, tenant, operation_id)
            finally:
                close = getattr(framework, "aclose", None)
                if close is not None:
                    await close()
        await capture.alog(f"agent run {operation_id}: {record.status}")
        if record.status is RunStatus.SUCCEEDED:
            return AgentResult(
                status=AgentStatus.SUCCEEDED, output=_outputs(record), usage=record.usage
            )
        failure = record.failure
        if failure is None:  # a run that stopped without saying why
            raise ConfigError(f"agent run ended {record.status} without a failure")
        raise AdapterError(failure, partial_output=_outputs(record))

    async def _run(
        self,
        runtime: Runtime,
        store: RunStore,
        request: AgentRequest,
        tenant: str,
        run_id: str,
    ) -> RunRecord:
        found = store.load_run(tenant, run_id)
        if found is None:
            return await runtime.run(request.read_prompt(), tenant=tenant, run_id=run_id)
        if found.status is RunStatus.SUCCEEDED:
            return found
        # A new attempt of the task: the run goes on after its last successful step.
        store.save_run(dataclasses.replace(found, status=RunStatus.RUNNING, failure=None))
        return await runtime.resume(run_id, tenant=tenant, clear_input=request.read_prompt())
