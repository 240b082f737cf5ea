"""``LangGraphAdapter``: a LangGraph graph run under backstay's runtime.

The user's agent is a factory ``build(kit) -> StateGraph`` (``agent: module:function``
in a suite task); without one, a ReAct graph (model ⇄ tools) is used. The kit hands the
graph backstay's parts, so that nothing reaches a model or a tool around the gates:

* ``kit.model``: a LangChain chat model (``ChatOpenAI`` with ``max_retries=0``) whose
  every call goes through ``context.model`` (classify → limiter → breaker → policy, hard
  limits before and after), carrying the run's trace id as a header;
* ``kit.tools``: LangChain tools for every registered tool, each calling the
  ``ToolGate`` (allowlist, approvals, limits, sandbox); ``kit.tool_node()``: a graph node
  running the last message's tool calls through the gate (unknown names included, so a
  forbidden tool escalates); a ``ToolNode`` of the graph's own has each call of a tool
  not from ``kit.tools`` sent through the gate too (``langgraph._tools``); a function a
  node calls itself is gated with ``@backstay.runtime.gated`` or ``kit.gated(fn)``;
* retries: every node's ``retry_policy`` is removed before compiling (the model gate is
  the one retry loop); ``recursion_limit`` (config, default 50 super-steps) stops a
  cycling graph as an ``ERR_LIMIT_MAX_STEPS`` halt;
* checkpoint: the graph is compiled with an in-memory checkpointer, thread id
  ``<run_id>:<step_id>``; after each super-step the thread's values (messages as
  LangChain's JSON) and the node that wrote them are kept in the run's ``state``. A run
  paused for an approval (or halted) is saved with them; ``resume`` rebuilds the thread
  from them (``update_state(as_node=…)``) and continues where it stopped: the model is not
  asked again for a tool call it already made;
* human in the loop: a node's ``interrupt(request)`` becomes a durable approval and the
  run pauses; ``resume`` answers it with ``Command(resume=decision)``, the human's
  ``{"type": "approve" | "edit" | "reject", …}`` (``langgraph._run``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from backstay.adapters.usage import Usage
from backstay.frameworks._common import (
    Checkpoint,
    TaskAdapter,
    adapter_arguments,
    answer,
    load_factory,
    require,
    task_text,
    tool_text,
    with_openai_http_client,
)
from backstay.frameworks.langgraph._run import run_graph
from backstay.frameworks.langgraph._tools import gate_tool_nodes
from backstay.runtime.context import ExecutionContext
from backstay.runtime.errors import LimitExceeded
from backstay.runtime.gated import GatedFn, gated
from backstay.runtime.limits import LimitBreach, LimitName
from backstay.runtime.plan import Step
from backstay.runtime.results import StepResult
from backstay.runtime.toolgate import ToolGate
from backstay.runtime.trace import TRACE_HEADER

__all__ = ["DEFAULT_RECURSION_LIMIT", "LangGraphAdapter", "LangGraphKit", "make_agent"]

EXTRA: Final = "langgraph"
DEFAULT_MODEL: Final = "gpt-5"
DEFAULT_RECURSION_LIMIT: Final = 50

require("langgraph", EXTRA)
require("langchain_openai", EXTRA)

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatResult  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.tools import BaseTool, StructuredTool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from pydantic import ConfigDict  # noqa: E402


def _usage(result: ChatResult) -> Usage:
    total = Usage()
    for gen in result.generations:
        meta = getattr(gen.message, "usage_metadata", None) or {}
        cached = (meta.get("input_token_details") or {}).get("cache_read") or 0
        total += Usage(
            input_tokens=max(0, meta.get("input_tokens", 0) - cached),
            cache_read_tokens=cached,
            output_tokens=meta.get("output_tokens", 0),
        )
    return total + Usage(api_calls=1)


class GatedChatModel(BaseChatModel):
    """A LangChain chat model whose calls all go through a run's model gate."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    inner: BaseChatModel
    gate: Any

    @property
    def _llm_type(self) -> str:
        return "backstay-gated"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        """The inner model's tool binding, with every call still through the gate."""
        bound = self.inner.bind_tools(tools, **kwargs)
        return self.bind(**getattr(bound, "kwargs", {}))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result: ChatResult = self.gate.call(
            self.inner._generate, messages, stop=stop, usage_of=_usage, **kwargs
        )
        return result

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result: ChatResult = await self.gate.acall(
            self.inner._agenerate, messages, stop=stop, usage_of=_usage, **kwargs
        )
        return result


class LangGraphKit:
    """What a graph factory builds with: ``model``, ``tools``, ``tool_node()``,
    ``config`` (the suite task's)."""

    def __init__(self, model: BaseChatModel, gate: ToolGate, config: Mapping[str, Any]) -> None:
        self.model = model
        self.config = config
        self.gate = gate
        self.tools: list[BaseTool] = [self._tool(spec) for spec in gate.specs()]
        self.tool_calls = 0

    def _tool(self, spec: Mapping[str, Any]) -> BaseTool:
        name = spec["name"]

        async def run(**arguments: Any) -> str:
            self.tool_calls += 1
            return tool_text(await self.gate.invoke(name, arguments))

        return StructuredTool.from_function(
            coroutine=run,
            name=name,
            description=spec["description"] or name,
            args_schema=dict(spec["parameters"]),
        )

    def gated(self, fn: Callable[..., Any], *, name: str | None = None) -> GatedFn:
        """``fn`` (a function a node calls itself) as a coroutine function whose calls go
        through the run's gate under ``name`` (default: its name); see
        ``backstay.runtime.gated``."""
        return gated(fn, name=name, gate=self.gate)

    def tool_node(self) -> Any:
        """A node that runs the last AI message's tool calls through the gate."""

        async def tools(state: Mapping[str, Any]) -> dict[str, Any]:
            last = state["messages"][-1]
            out = []
            for call in getattr(last, "tool_calls", None) or []:
                self.tool_calls += 1
                value = await self.gate.invoke(call["name"], call["args"])
                out.append(ToolMessage(content=tool_text(value), tool_call_id=call["id"]))
            return {"messages": out}

        return tools


def react_graph(kit: LangGraphKit) -> StateGraph[Any]:
    """The default agent: the model, and its tool calls through the gate, until it answers."""
    model = kit.model.bind_tools(kit.tools) if kit.tools else kit.model

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else END

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", kit.tool_node())
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder


def _no_retries(builder: StateGraph[Any]) -> None:
    for name, spec in list(builder.nodes.items()):
        if spec.retry_policy is not None:
            builder.nodes[name] = _replace(spec, retry_policy=None)


def _replace(spec: Any, **changes: Any) -> Any:
    import dataclasses  # noqa: PLC0415

    return dataclasses.replace(spec, **changes)


def _final_text(values: Mapping[str, Any]) -> str:
    for message in reversed(values.get("messages") or []):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message.text if isinstance(message.text, str) else str(message.content)
    return ""


class LangGraphAdapter(TaskAdapter):
    """A ``FrameworkAdapter`` over a LangGraph graph (see the module)."""

    name = "langgraph"

    def __init__(
        self,
        *,
        agent: Any = None,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str = "",
        timeout_s: float = 60.0,
        api: str = "openai",
        recursion_limit: int = DEFAULT_RECURSION_LIMIT,
        http_client: Any = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            factory=load_factory(agent) or react_graph,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            config=config,
            api=api,
        )
        self.recursion_limit = recursion_limit
        self.http_client = http_client

    def chat_model(self, context: ExecutionContext, http_client: Any) -> GatedChatModel:
        """The run's chat model: the SDK's retries off, every call through the gate."""
        s = self.settings
        inner = ChatOpenAI(
            model=s.model,
            base_url=s.base_url,
            api_key=s.api_key or "unset",  # type: ignore[arg-type]
            timeout=s.timeout_s,
            max_retries=0,
            default_headers={TRACE_HEADER: context.trace_id},
            http_async_client=http_client,
        )
        return GatedChatModel(inner=inner, gate=context.model)

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        run = functools.partial(self._execute, step, tools, context)
        return await with_openai_http_client(self.http_client, run)

    async def _execute(
        self, step: Step, tools: ToolGate, context: ExecutionContext, http_client: Any
    ) -> StepResult:
        kit = LangGraphKit(self.chat_model(context, http_client), tools, self.config)
        builder = self.factory(kit)
        builder = getattr(builder, "builder", builder)  # a compiled graph: its builder
        _no_retries(builder)
        restore = gate_tool_nodes((spec.runnable for spec in builder.nodes.values()), kit)
        try:
            return await self._run_graph(builder, step, kit, context)
        finally:
            restore()

    async def _run_graph(
        self, builder: Any, step: Step, kit: LangGraphKit, context: ExecutionContext
    ) -> StepResult:
        graph = builder.compile(checkpointer=InMemorySaver())
        run_config: RunnableConfig = {
            "configurable": {"thread_id": f"{context.run_id}:{step.id}"},
            "recursion_limit": self.recursion_limit,
            "metadata": {"backstay_trace_id": context.trace_id, "tenant": context.tenant},
        }
        start = {"messages": [("user", task_text(step, context))]}
        try:
            await run_graph(
                graph,
                run_config,
                step,
                tools=kit.gate,
                context=context,
                start=start,
                framework=self.name,
            )
        except GraphRecursionError:
            breach = LimitBreach(
                limit=LimitName.STEPS,
                allowed=self.recursion_limit,
                reached=self.recursion_limit + 1,
            )
            raise context.halt(LimitExceeded(breach)) from None
        values = (await graph.aget_state(run_config)).values
        Checkpoint(context, self.name, step).clear()
        return answer(step, _final_text(values), kit.tool_calls)


def make_agent(config: Mapping[str, Any]) -> LangGraphAdapter:
    """The factory a suite task names (``agent: backstay.frameworks.langgraph:make_agent``):
    ``config`` gives ``agent`` (``module:function``), ``model``, ``base_url``, ``api_key``
    (or ``api_key_env``), ``timeout_s``, ``recursion_limit``."""
    return LangGraphAdapter(
        **adapter_arguments(config, default_model=DEFAULT_MODEL),
        recursion_limit=config.get("recursion_limit", DEFAULT_RECURSION_LIMIT),
    )
