"""``AutoGenAdapter``: an AutoGen agent (``autogen-agentchat``) run under backstay's
runtime. autogen-agentchat is in maintenance upstream, so this adapter is kept thin.

The user's agent is a factory ``build(kit) -> agent`` (``agent: module:function``): any
agentchat agent with ``run_stream``, ``save_state`` and ``load_state`` (an
``AssistantAgent``, a team); without one, ``AssistantAgent`` with the kit's client and
tools. The kit hands it:

* ``kit.model_client``: a ``ChatCompletionClient`` wrapping ``OpenAIChatCompletionClient``
  (``max_retries=0``, the run's trace-id header) whose every ``create`` goes through
  ``context.model`` (classify → limiter → breaker → policy, hard limits before and after
  with the result's usage); ``create_stream`` is refused;
* ``kit.tools``: a tool for every registered tool, each calling the ``ToolGate``. AutoGen
  turns a tool's exception into an error result for the model; a halt (forbidden tool,
  sandbox escape, approval) is sticky all the same: the next model call raises it again
  and the run ends from it;
* the agent's own tools (``AssistantAgent(tools=[fn])``) go through the gate too, and
  a ``UserProxyAgent`` or a hand-off to the user becomes a durable approval that
  ``resume`` answers (``autogen._gates``);
* checkpoint: after every message of the run, ``save_state()`` is kept in the run's
  ``state``; ``resume`` loads it (``load_state``) and runs the agent on without a new task.
  The agent's context then ends with its pending tool call, and AutoGen asks the model
  again before calling the (now decided) tool: one request more than the other adapters.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Final, NoReturn

from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.frameworks._common import (
    Checkpoint,
    TaskAdapter,
    adapter_arguments,
    answer,
    load_factory,
    openai_usage,
    require,
    task_text,
    tool_text,
)
from backstay.frameworks.autogen._gates import HumanInput, gate_agent
from backstay.runtime.context import ExecutionContext
from backstay.runtime.errors import LimitExceeded
from backstay.runtime.limits import LimitBreach, LimitName
from backstay.runtime.plan import Step
from backstay.runtime.results import StepResult
from backstay.runtime.toolgate import ToolGate
from backstay.runtime.trace import TRACE_HEADER

__all__ = ["AutoGenAdapter", "AutoGenKit", "make_agent"]

EXTRA: Final = "autogen"
DEFAULT_MODEL: Final = "gpt-5"
# Hand-offs to the user answered in one step before the agent must have finished.
_MAX_HANDOFFS: Final = 32

require("autogen_agentchat", EXTRA)
require("autogen_ext.models.openai", EXTRA)

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.base import TaskResult  # noqa: E402
from autogen_agentchat.messages import HandoffMessage  # noqa: E402
from autogen_core import CancellationToken  # noqa: E402
from autogen_core.models import ChatCompletionClient, CreateResult, ModelInfo  # noqa: E402
from autogen_core.tools import BaseTool, ToolSchema  # noqa: E402
from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402

_MODEL_INFO: Final = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family="unknown",
    structured_output=False,
)


def _usage(result: CreateResult) -> Usage:
    return openai_usage(result.usage.prompt_tokens, result.usage.completion_tokens)


class GatedClient(ChatCompletionClient):
    """A ``ChatCompletionClient`` whose ``create`` calls go through a run's model gate."""

    def __init__(self, inner: ChatCompletionClient, gate: Any) -> None:
        self.inner = inner
        self.gate = gate

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        with warnings.catch_warnings():  # autogen's model-name mapping, not a problem
            warnings.filterwarnings("ignore", message="Resolved model mismatch")
            result: CreateResult = await self.gate.acall(
                self.inner.create, *args, usage_of=_usage, **kwargs
            )
        return result

    def create_stream(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError("streamed model calls are not supported under backstay", where="autogen")

    async def close(self) -> None:
        await self.inner.close()

    def actual_usage(self) -> Any:
        return self.inner.actual_usage()

    def total_usage(self) -> Any:
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
        return self.inner.count_tokens(messages, **kwargs)

    def remaining_tokens(self, messages: Sequence[Any], **kwargs: Any) -> int:
        return self.inner.remaining_tokens(messages, **kwargs)

    @property
    def capabilities(self) -> Any:
        return self.inner.model_info

    @property
    def model_info(self) -> ModelInfo:
        return self.inner.model_info


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="allow")


class GatedTool(BaseTool[_Arguments, Any]):
    """A registered tool as AutoGen sees it; calls go through the ``ToolGate``."""

    def __init__(self, spec: Mapping[str, Any], kit: AutoGenKit) -> None:
        super().__init__(_Arguments, str, spec["name"], spec["description"] or spec["name"])
        self._parameters = dict(spec["parameters"])
        self._kit = kit

    @property
    def schema(self) -> ToolSchema:
        params = self._parameters
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": params.get("properties", {}),
                "required": params.get("required", []),
            },
        )

    async def run(self, args: _Arguments, cancellation_token: CancellationToken) -> Any:
        return await self.run_json(args.model_dump(), cancellation_token)

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        self._kit.tool_calls += 1
        return tool_text(await self._kit.gate.invoke(self.name, dict(args)))


class AutoGenKit:
    """What an agent factory builds with: ``model_client``, ``tools``, ``config``."""

    def __init__(
        self, model_client: GatedClient, gate: ToolGate, config: Mapping[str, Any]
    ) -> None:
        self.model_client = model_client
        self.gate = gate
        self.config = config
        self.tool_calls = 0
        self.tools: list[BaseTool[Any, Any]] = [GatedTool(s, self) for s in gate.specs()]


def default_agent(kit: AutoGenKit) -> AssistantAgent:
    """The default agent: the kit's client and tools, answering after its tool calls."""
    return AssistantAgent(
        "assistant",
        model_client=kit.model_client,
        tools=list[Any](kit.tools),
        reflect_on_tool_use=bool(kit.tools),
    )


def _final_text(result: TaskResult | None) -> str:
    for message in reversed(result.messages if result else []):
        if getattr(message, "type", "") in ("TextMessage", "ToolCallSummaryMessage"):
            return str(getattr(message, "content", ""))
    return ""


class AutoGenAdapter(TaskAdapter):
    """A ``FrameworkAdapter`` over an AutoGen agent (see the module)."""

    name = "autogen"

    def __init__(
        self,
        *,
        agent: Any = None,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str = "",
        timeout_s: float = 60.0,
        api: str = "openai",
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

    def model_client(self, context: ExecutionContext) -> GatedClient:
        """The run's client: the SDK's retries off, every call through the gate."""
        s = self.settings
        where: dict[str, Any] = {} if s.base_url is None else {"base_url": s.base_url}
        inner = OpenAIChatCompletionClient(
            model=s.model,
            api_key=s.api_key or "unset",
            timeout=s.timeout_s,
            max_retries=0,
            default_headers={TRACE_HEADER: context.trace_id},
            model_info=_MODEL_INFO,
            **where,
        )
        return GatedClient(inner, context.model)

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        client = self.model_client(context)
        try:
            kit = AutoGenKit(client, tools, self.config)
            agent = self.factory(kit)
            checkpoint = Checkpoint(context, self.name, step)
            human = HumanInput(tools, Checkpoint(context, f"{self.name}.input", step), step.id)
            names = gate_agent(agent, gate=tools, kit=kit, human=human)
            saved = checkpoint.load()
            task: Any = task_text(step, context)
            if saved:
                await agent.load_state(saved)
                task = human.answer_handoff(None)
            for _ in range(_MAX_HANDOFFS):
                result = await _run(agent, task, checkpoint, context)
                last = result.messages[-1] if result is not None and result.messages else None
                if not (isinstance(last, HandoffMessage) and last.target not in names):
                    break
                task = human.answer_handoff(last)
            else:
                breach = LimitBreach(
                    limit=LimitName.LOOP, allowed=_MAX_HANDOFFS, reached=_MAX_HANDOFFS + 1
                )
                raise context.halt(LimitExceeded(breach))
            checkpoint.clear()
            human.clear()
            return answer(step, _final_text(result), kit.tool_calls)
        finally:
            await client.close()


async def _run(
    agent: Any, task: Any, checkpoint: Checkpoint, context: ExecutionContext
) -> TaskResult | None:
    result: TaskResult | None = None
    stream: AsyncGenerator[Any, None] = agent.run_stream(task=task)
    async for item in stream:
        if isinstance(item, TaskResult):
            result = item
        elif context.halted is None:  # a halt AutoGen made a tool result of: not kept
            checkpoint.save(await agent.save_state())
    return result


def make_agent(config: Mapping[str, Any]) -> AutoGenAdapter:
    """The factory a suite task names (``agent: backstay.frameworks.autogen:make_agent``):
    ``config`` gives ``agent`` (``module:function``), ``model``, ``base_url``, ``api_key``
    (or ``api_key_env``), ``timeout_s``."""
    return AutoGenAdapter(**adapter_arguments(config, default_model=DEFAULT_MODEL))
