"""``PydanticAIAdapter``: a Pydantic-AI agent run under backstay's runtime.

The user's agent is a factory ``build(kit) -> Agent`` (``agent: module:function``);
without one, ``Agent(kit.model, toolsets=[kit.toolset])``. The kit hands it:

* ``kit.model``: a ``WrapperModel`` over ``OpenAIChatModel`` (an ``openai.AsyncOpenAI``
  with ``max_retries=0`` and the run's trace-id header; with ``api: anthropic``,
  ``AnthropicModel`` over an ``anthropic.AsyncAnthropic`` with the same) whose every
  ``request`` goes through ``context.model`` (classify → limiter → breaker → policy,
  hard limits before and after with the response's usage). The run is started with
  ``model=kit.model`` whatever model the agent was built with, so no request goes
  around the gate; streamed requests (``run_stream``) are refused;
* ``kit.toolset``: a ``FunctionToolset`` with every registered tool, each calling the
  ``ToolGate`` (allowlist, approvals, limits, sandbox);
* the agent's own function tools (``@agent.tool``, ``@agent.tool_plain``, ``tools=[...]``,
  toolsets of its own): the run is started with every toolset of the agent behind a
  ``GatedToolset``, so each call of a tool not from ``kit.toolset`` goes through
  ``ToolGate.invoke`` under its name (allowlist, approvals, limits, cache) before the
  function runs: a tool not on the allowlist is never invoked, the run ends escalated;
* human in the loop: a tool the agent marks ``requires_approval=True`` (and one that
  raises Pydantic-AI's ``ApprovalRequired`` until ``ctx.tool_call_approved``) waits for
  backstay's durable approval instead of ending the run with ``DeferredToolRequests``:
  the run pauses; once approved (or edited: the tool runs with the human's arguments)
  ``resume`` runs it with ``ctx.tool_call_approved`` set; a rejected call is not run and
  the model is told so;
* retries: the run is started with ``retries=0`` (no re-asking the model on a bad tool
  argument or output: backstay's correction loop does that with ``context.feedback``)
  and ``UsageLimits(request_limit=None)`` (backstay's limits are the limits);
* checkpoint: the message history, as Pydantic-AI's own JSON, is kept in the run's
  ``state`` after every node. A run paused for an approval is saved with the model's
  tool call in it; ``resume`` starts the agent again from that history, which runs the
  (now decided) tool call without asking the model again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, NoReturn

from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.frameworks._common import (
    Checkpoint,
    ModelSettings,
    TaskAdapter,
    adapter_arguments,
    answer,
    load_factory,
    openai_usage,
    require,
    task_text,
    with_openai_http_client,
)
from backstay.runtime.context import ExecutionContext
from backstay.runtime.plan import Step
from backstay.runtime.results import StepResult
from backstay.runtime.toolgate import ToolGate
from backstay.runtime.trace import TRACE_HEADER

__all__ = ["PydanticAIAdapter", "PydanticAIKit", "make_agent"]

EXTRA: Final = "pydantic-ai"
DEFAULT_MODEL: Final = "gpt-5"

require("pydantic_ai", EXTRA)

import openai  # noqa: E402
from pydantic_ai import Agent, Tool  # noqa: E402
from pydantic_ai.exceptions import ApprovalRequired as PAIApprovalRequired  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse  # noqa: E402
from pydantic_ai.models import ModelRequestParameters  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.models.wrapper import WrapperModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.settings import ModelSettings as PAIModelSettings  # noqa: E402
from pydantic_ai.tools import RunContext  # noqa: E402
from pydantic_ai.toolsets import (  # noqa: E402
    AbstractToolset,
    CombinedToolset,
    FunctionToolset,
    ToolsetTool,
    WrapperToolset,
)
from pydantic_ai.usage import UsageLimits  # noqa: E402


def _usage(response: ModelResponse) -> Usage:
    u = response.usage
    return openai_usage(u.input_tokens, u.output_tokens, u.cache_read_tokens)


class GatedModel(WrapperModel):
    """A Pydantic-AI model whose requests all go through a run's model gate."""

    def __init__(self, wrapped: Any, gate: Any) -> None:
        super().__init__(wrapped)
        self.gate = gate

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: PAIModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response: ModelResponse = await self.gate.acall(
            self.wrapped.request,
            messages,
            model_settings,
            model_request_parameters,
            usage_of=_usage,
        )
        return response

    def request_stream(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError(
            "streamed runs are not supported under backstay: use run or iter",
            where="pydantic-ai",
        )


class PydanticAIKit:
    """What an agent factory builds with: ``model``, ``toolset``, ``config``."""

    def __init__(self, model: GatedModel, gate: ToolGate, config: Mapping[str, Any]) -> None:
        self.model = model
        self.config = config
        self.gate = gate
        self.tool_calls = 0
        self.toolset: FunctionToolset[Any] = FunctionToolset(
            [self._tool(spec) for spec in gate.specs()]
        )

    def _tool(self, spec: Mapping[str, Any]) -> Tool[Any]:
        name = spec["name"]

        async def run(**arguments: Any) -> Any:
            self.tool_calls += 1
            return await self.gate.invoke(name, arguments)

        return Tool.from_schema(
            run,
            name=name,
            description=spec["description"] or name,
            json_schema=dict(spec["parameters"]),
        )


def _source(tool: ToolsetTool[Any]) -> AbstractToolset[Any]:
    """The toolset a (combined) tool comes from."""
    while (inner := getattr(tool, "source_tool", None)) is not None:
        tool = inner
    return tool.toolset


@dataclass(frozen=True)
class _AwaitsApproval:
    """What a tool raising Pydantic-AI's ``ApprovalRequired`` leaves instead of a result."""


_AWAITS_APPROVAL: Final = _AwaitsApproval()


@dataclass
class GatedToolset(WrapperToolset[Any]):
    """Every toolset of an agent, each call of a tool of the agent's own through the gate;
    the kit's tools call the gate themselves. A tool needing approval (``requires_approval``,
    Pydantic-AI's ``unapproved`` kind) is offered as a plain function tool and its calls
    wait for backstay's approval instead."""

    kit: PydanticAIKit = field(kw_only=True)
    needs_approval: set[str] = field(default_factory=set, kw_only=True)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools = await super().get_tools(ctx)
        for name, tool in tools.items():
            if tool.tool_def.kind == "unapproved":
                self.needs_approval.add(name)
                tools[name] = replace(tool, tool_def=replace(tool.tool_def, kind="function"))
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        if _source(tool) is self.kit.toolset:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        gate = self.kit.gate
        approval = name in self.needs_approval

        async def own(arguments: dict[str, Any]) -> Any:
            run_ctx = replace(ctx, tool_call_approved=True) if approval else ctx
            try:
                return await self.wrapped.call_tool(name, arguments, run_ctx, tool)
            except PAIApprovalRequired:
                return _AWAITS_APPROVAL

        self.kit.tool_calls += 1
        value = await gate.invoke(name, tool_args, run=own, approval=approval)
        if value is _AWAITS_APPROVAL:  # the tool asked for approval itself
            approval = True
            value = await gate.invoke(name, tool_args, run=own, approval=True)
        return value


def default_agent(kit: PydanticAIKit) -> Agent[Any, Any]:
    """The default agent: the kit's model and tools, no retries of its own."""
    return Agent(kit.model, toolsets=[kit.toolset], retries=0)


def _anthropic_model(s: ModelSettings, context: ExecutionContext, http_client: Any) -> Any:
    """``AnthropicModel`` over an ``anthropic.AsyncAnthropic`` with ``max_retries=0``."""
    sdk = require("anthropic", "anthropic")
    from pydantic_ai.models.anthropic import AnthropicModel  # noqa: PLC0415 - optional
    from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: PLC0415

    client = sdk.AsyncAnthropic(
        base_url=s.base_url,
        api_key=s.api_key or "unset",
        timeout=s.timeout_s,
        max_retries=0,
        default_headers={TRACE_HEADER: context.trace_id},
        http_client=http_client,
    )
    return AnthropicModel(s.model, provider=AnthropicProvider(anthropic_client=client))


class PydanticAIAdapter(TaskAdapter):
    """A ``FrameworkAdapter`` over a Pydantic-AI agent (see the module)."""

    name = "pydantic-ai"
    apis = ("openai", "anthropic")

    def __init__(
        self,
        *,
        agent: Any = None,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str = "",
        timeout_s: float = 60.0,
        api: str = "openai",
        http_client: Any = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            factory=load_factory(agent) or default_agent,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            config=config,
            api=api,
        )
        self.http_client = http_client

    def model(self, context: ExecutionContext, http_client: Any) -> GatedModel:
        """The run's model: the SDK's retries off, every request through the gate."""
        s = self.settings
        if s.api == "anthropic":
            return GatedModel(_anthropic_model(s, context, http_client), context.model)
        client = openai.AsyncOpenAI(
            base_url=s.base_url,
            api_key=s.api_key or "unset",
            timeout=s.timeout_s,
            max_retries=0,
            default_headers={TRACE_HEADER: context.trace_id},
            http_client=http_client,
        )
        inner = OpenAIChatModel(s.model, provider=OpenAIProvider(openai_client=client))
        return GatedModel(inner, context.model)

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        run = functools.partial(self._execute, step, tools, context)
        return await with_openai_http_client(self.http_client, run)

    async def _execute(
        self, step: Step, tools: ToolGate, context: ExecutionContext, http_client: Any
    ) -> StepResult:
        kit = PydanticAIKit(self.model(context, http_client), tools, self.config)
        agent = self.factory(kit)
        gated = GatedToolset(CombinedToolset(list(agent.toolsets)), kit=kit)
        checkpoint = Checkpoint(context, self.name, step)
        saved = checkpoint.load()
        history = ModelMessagesTypeAdapter.validate_python(saved) if saved else None
        prompt = None if history else task_text(step, context)
        with agent.override(tools=[], toolsets=[gated]):
            result = await self._iterate(
                agent, prompt, history, kit=kit, checkpoint=checkpoint, context=context
            )
        checkpoint.clear()
        output = "" if result is None else result.output
        return answer(step, output if isinstance(output, str) else str(output), kit.tool_calls)

    @staticmethod
    async def _iterate(
        agent: Agent[Any, Any],
        prompt: str | None,
        history: list[ModelMessage] | None,
        *,
        kit: PydanticAIKit,
        checkpoint: Checkpoint,
        context: ExecutionContext,
    ) -> Any:
        async with agent.iter(
            prompt,
            message_history=history,
            model=kit.model,
            retries=0,
            usage_limits=UsageLimits(request_limit=None),
            metadata={"backstay_trace_id": context.trace_id},
        ) as run:
            async for _node in run:
                messages = run.all_messages()
                checkpoint.save(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))
            return run.result


def make_agent(config: Mapping[str, Any]) -> PydanticAIAdapter:
    """The factory a suite task names (``agent: backstay.frameworks.pydantic_ai:make_agent``):
    ``config`` gives ``agent`` (``module:function``), ``model``, ``base_url``, ``api_key``
    (or ``api_key_env``), ``timeout_s``."""
    return PydanticAIAdapter(**adapter_arguments(config, default_model=DEFAULT_MODEL))
