"""``ReferenceAdapter``: a minimal framework adapter over the official Anthropic SDK, the
model to copy when writing one for a real framework.

Its "framework" is a plain tool loop: ask the model (through ``context.model.acall``,
the SDK's own retries off), run each ``tool_use`` it answers with through the
``ToolGate``, send the results back, until the model answers with text. Pointed at the
project's fake provider (``base_url``), the tool calls are the ones the provider's
scenario scripts. ``make_agent(config)`` is its factory for a suite task
(``agent: backstay.runtime.reference:make_agent``).

The input is a task text (one ``answer`` step) or ``{"steps": [{"id", "action",
"parameters", "depends_on"}…]}`` for a plan of several steps; the output of a step is
``{"answer": text, "tool_calls": n}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.runtime.context import ExecutionContext
from backstay.runtime.plan import Plan, Step
from backstay.runtime.results import StepResult, StepStatus, ValidationResult
from backstay.runtime.schema_check import check_output
from backstay.runtime.toolgate import ToolGate
from backstay.runtime.trace import TRACE_HEADER

__all__ = ["DEFAULT_MODEL", "MAX_TURNS", "ReferenceAdapter", "make_agent"]

DEFAULT_MODEL: Final = "claude-sonnet-4-6"
MAX_TURNS: Final = 8
_MAX_TOKENS: Final = 512


def _usage(message: Any) -> Usage:
    u = message.usage
    return Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens, api_calls=1)


class ReferenceAdapter:
    """The reference ``FrameworkAdapter`` (see the module)."""

    name = "reference"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str = DEFAULT_MODEL,
        http_client: Any = None,
        timeout_s: float = 30.0,
    ) -> None:
        import anthropic  # noqa: PLC0415 - an optional dependency

        kwargs: dict[str, Any] = {"base_url": base_url, "api_key": api_key, "timeout": timeout_s}
        if http_client is not None:
            kwargs["http_client"] = http_client
        # The SDK's retries are off: every retry is the model gate's.
        self.client = anthropic.AsyncAnthropic(max_retries=0, **kwargs)
        self.model = model

    async def aclose(self) -> None:
        """Close the SDK client and its connections."""
        await self.client.close()

    async def plan(self, input: Any, context: ExecutionContext) -> Plan:
        if isinstance(input, Mapping) and "steps" in input:
            steps = tuple(Step.from_dict(s) for s in input["steps"])
            return Plan(id=f"plan-{context.run_id}", steps=steps, max_steps=max(1, len(steps)))
        step = Step(id="answer", action="answer", parameters={"task": str(input)})
        return Plan(id=f"plan-{context.run_id}", steps=(step,), max_steps=1)

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        task = str(step.parameters.get("task", step.action))
        if context.feedback:
            task += f"\n\nYour previous answer did not hold: {context.feedback}"
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        offered = [
            {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
            for s in tools.specs()
        ]
        calls = 0
        for _turn in range(MAX_TURNS):
            reply = await context.model.acall(
                self.client.messages.create,
                model=self.model,
                max_tokens=_MAX_TOKENS,
                messages=messages,
                tools=offered,
                extra_headers={TRACE_HEADER: context.trace_id},
                usage_of=_usage,
            )
            uses = [b for b in reply.content if b.type == "tool_use"]
            if not uses:
                text = "".join(b.text for b in reply.content if b.type == "text")
                context.memory.store("assistant", text)
                return StepResult(
                    step_id=step.id,
                    status=StepStatus.SUCCESS,
                    output={"answer": text, "tool_calls": calls},
                )
            messages.append(
                {"role": "assistant", "content": [b.model_dump() for b in reply.content]}
            )
            results = []
            for use in uses:
                calls += 1
                value = await tools.invoke(use.name, dict(use.input))
                results.append(
                    {"type": "tool_result", "tool_use_id": use.id, "content": str(value)}
                )
            messages.append({"role": "user", "content": results})
        raise ConfigError(f"no answer after {MAX_TURNS} turns", where=f"step {step.id}")

    def validate(self, output: Any, schema: Mapping[str, Any] | None) -> ValidationResult:
        return check_output(output, schema)


def make_agent(config: Mapping[str, Any]) -> ReferenceAdapter:
    """The factory a suite task names: ``base_url`` and ``api_key`` from ``config``."""
    return ReferenceAdapter(
        base_url=str(config["base_url"]),
        api_key=str(config.get("api_key", "")),
        model=str(config.get("model", DEFAULT_MODEL)),
    )
