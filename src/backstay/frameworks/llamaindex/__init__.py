"""``LlamaIndexAdapter``: a LlamaIndex workflow (``llama-index-workflows``) run under
backstay's runtime.

The user's agent is a factory ``build(kit) -> Workflow`` (``agent: module:function``);
without one, ``ToolLoop(kit)``: the model, its tool calls, the tools' results, until it
answers. The workflow's steps reach the model and the tools only through the kit:

* ``await kit.chat(messages)``: one OpenAI Chat Completions request (``openai.AsyncOpenAI``,
  ``max_retries=0``, the run's trace-id header, every registered tool offered) through
  ``context.model`` (classify → limiter → breaker → policy, hard limits before and after);
  LlamaIndex's own OpenAI LLM package requires openai<3, so the adapter talks to the SDK;
* ``await kit.call_tool(name, arguments)``: the ``ToolGate`` (allowlist, approvals,
  limits, sandbox); a tool's result comes back as the text a model reads; a function of
  the user's own a step calls is gated with ``@backstay.runtime.gated`` or
  ``kit.gated(fn)``;
* retries: every step's ``retry_policy`` is removed before the run (the model gate is
  the one retry loop; a LlamaIndex bug once retried forever without delay);
* checkpoint: before each model or tool call, the workflow's ``Context`` is serialised
  (``Context.to_dict``: its store and the event the running step works on) into the
  run's ``state``. A run paused for an approval is saved with the step in progress;
  ``resume`` restores the context (``Context.from_dict``) and the workflow runs that
  step again, whose tool call now finds the decision;
* human in the loop: a step's ``InputRequiredEvent`` becomes a durable approval and the
  run pauses; ``resume`` restores the context and sends the step a
  ``HumanResponseEvent`` carrying the human's decision (``llamaindex._run``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from backstay.adapters.usage import Usage
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
    tool_text,
    with_openai_http_client,
)
from backstay.frameworks.llamaindex._run import run_workflow
from backstay.runtime.context import ExecutionContext
from backstay.runtime.gated import GatedFn, gated
from backstay.runtime.plan import Step
from backstay.runtime.results import StepResult
from backstay.runtime.toolgate import ToolGate
from backstay.runtime.trace import TRACE_HEADER

__all__ = ["LlamaIndexAdapter", "LlamaIndexKit", "ToolLoop", "make_agent"]

EXTRA: Final = "llamaindex"
DEFAULT_MODEL: Final = "gpt-5"

require("workflows", EXTRA)

import openai  # noqa: E402
from workflows import Context, Workflow, step  # noqa: E402
from workflows.events import Event, StartEvent, StopEvent  # noqa: E402


def _usage(completion: Any) -> Usage:
    u = completion.usage
    if u is None:
        return Usage(api_calls=1)
    details = getattr(u, "prompt_tokens_details", None)
    return openai_usage(u.prompt_tokens, u.completion_tokens, getattr(details, "cached_tokens", 0))


class LlamaIndexKit:
    """What a workflow factory builds with: ``chat``, ``call_tool``, ``tool_specs``,
    ``config``."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        settings: ModelSettings,
        gate: ToolGate,
        context: ExecutionContext,
        config: Mapping[str, Any],
    ) -> None:
        self.config = config
        self._client = client
        self._settings = settings
        self._gate = gate
        self._context = context
        self.tool_calls = 0
        self.before_call: Callable[[], None] = lambda: None
        self.tool_specs: list[dict[str, Any]] = [
            {
                "type": "function",
                "function": {
                    "name": s["name"],
                    "description": s["description"] or s["name"],
                    "parameters": dict(s["parameters"]),
                },
            }
            for s in gate.specs()
        ]

    async def chat(self, messages: list[dict[str, Any]]) -> Any:
        """One chat completion (the SDK's ``ChatCompletionMessage``) through the gate."""
        self.before_call()
        extra: dict[str, Any] = {"tools": self.tool_specs} if self.tool_specs else {}
        completion = await self._context.model.acall(
            self._client.chat.completions.create,
            model=self._settings.model,
            messages=messages,
            usage_of=_usage,
            **extra,
        )
        return completion.choices[0].message

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Tool ``name`` through the gate; its result as text."""
        self.before_call()
        self.tool_calls += 1
        return tool_text(await self._gate.invoke(name, arguments))

    def gated(self, fn: Callable[..., Any], *, name: str | None = None) -> GatedFn:
        """``fn`` (a function a step calls itself) as a coroutine function whose calls go
        through the run's gate under ``name`` (default: its name); see
        ``backstay.runtime.gated``."""
        return gated(fn, name=name, gate=self._gate)


class Act(Event):
    calls: list[dict[str, Any]]


class Think(Event):
    pass


class ToolLoop(Workflow):
    """The default workflow: ``think`` (the model) and ``act`` (its tool calls) in turn,
    the conversation kept in the context's store, until the model answers."""

    def __init__(self, kit: LlamaIndexKit, **kwargs: Any) -> None:
        kwargs.setdefault("timeout", None)  # the run's wall-time limit bounds it
        super().__init__(**kwargs)
        self.kit = kit

    @step
    async def begin(self, ctx: Context, ev: StartEvent) -> Think:
        await ctx.store.set("messages", [{"role": "user", "content": ev.get("task")}])
        return Think()

    @step
    async def think(self, ctx: Context, ev: Think) -> Act | StopEvent:
        messages = await ctx.store.get("messages")
        reply = await self.kit.chat(messages)
        if not reply.tool_calls:
            return StopEvent(result=reply.content or "")
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in reply.tool_calls
        ]
        messages.append(
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls
                ],
            }
        )
        await ctx.store.set("messages", messages)
        return Act(calls=calls)

    @step
    async def act(self, ctx: Context, ev: Act) -> Think:
        messages = await ctx.store.get("messages")
        for call in ev.calls:
            arguments = json.loads(call["arguments"] or "{}")
            text = await self.kit.call_tool(call["name"], arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
        await ctx.store.set("messages", messages)
        return Think()


def _no_retries(workflow: Workflow) -> None:
    for fn in workflow._get_steps().values():
        config = getattr(fn, "_step_config", None)
        if config is not None and config.retry_policy is not None:
            config.retry_policy = None


class LlamaIndexAdapter(TaskAdapter):
    """A ``FrameworkAdapter`` over a LlamaIndex workflow (see the module)."""

    name = "llamaindex"

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
            factory=load_factory(agent) or ToolLoop,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            config=config,
            api=api,
        )
        self.http_client = http_client

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        run = functools.partial(self._execute, step, tools, context)
        return await with_openai_http_client(self.http_client, run)

    async def _execute(
        self, step: Step, tools: ToolGate, context: ExecutionContext, http_client: Any
    ) -> StepResult:
        s = self.settings
        client = openai.AsyncOpenAI(
            base_url=s.base_url,
            api_key=s.api_key or "unset",
            timeout=s.timeout_s,
            max_retries=0,
            default_headers={TRACE_HEADER: context.trace_id},
            http_client=http_client,
        )
        kit = LlamaIndexKit(client, s, tools, context, self.config)
        workflow: Workflow = self.factory(kit)
        _no_retries(workflow)
        checkpoint = Checkpoint(context, self.name, step)
        inputs = Checkpoint(context, f"{self.name}.input", step)

        def set_saver(save: Callable[[], None]) -> None:
            kit.before_call = save

        result = await run_workflow(
            workflow,
            step_id=step.id,
            tools=tools,
            checkpoint=checkpoint,
            inputs=inputs,
            start={"task": task_text(step, context)},
            set_saver=set_saver,
        )
        checkpoint.clear()
        inputs.clear()
        return answer(step, result if isinstance(result, str) else str(result), kit.tool_calls)


def make_agent(config: Mapping[str, Any]) -> LlamaIndexAdapter:
    """The factory a suite task names (``agent: backstay.frameworks.llamaindex:make_agent``):
    ``config`` gives ``agent`` (``module:function``), ``model``, ``base_url``, ``api_key``
    (or ``api_key_env``), ``timeout_s``."""
    return LlamaIndexAdapter(**adapter_arguments(config, default_model=DEFAULT_MODEL))
