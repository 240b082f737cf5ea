"""A scripted framework adapter for the runtime's own tests: each step's action names a
script of model and tool calls that goes through the runtime's real gates."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from backstay.adapters.usage import Usage
from backstay.runtime import (
    ExecutionContext,
    Plan,
    Step,
    StepResult,
    StepStatus,
    ToolGate,
    ValidationResult,
)
from backstay.runtime.schema_check import check_output

Script = Callable[[Step, ToolGate, ExecutionContext], Any]


class ScriptedFramework:
    """``plan`` makes one step per action of ``input["actions"]`` (a chain) or takes
    ``input["steps"]``; ``execute`` runs ``scripts[step.action]`` and returns its output."""

    name = "scripted"

    def __init__(self, scripts: Mapping[str, Script], *, fail_plan: Exception | None = None):
        self.scripts = dict(scripts)
        self.fail_plan = fail_plan
        self.executed: list[str] = []

    async def plan(self, input: Any, context: ExecutionContext) -> Plan:
        if self.fail_plan is not None:
            raise self.fail_plan
        if "steps" in input:
            steps = tuple(Step.from_dict(s) for s in input["steps"])
        else:
            steps = tuple(
                Step(
                    id=f"s{i}",
                    action=a,
                    parameters={"n": i},
                    depends_on=(f"s{i - 1}",) if i else (),
                )
                for i, a in enumerate(input["actions"])
            )
        return Plan(id="plan", steps=steps, max_steps=max(len(steps), 1))

    async def execute(self, step: Step, tools: ToolGate, context: ExecutionContext) -> StepResult:
        self.executed.append(step.id)
        output = await self.scripts[step.action](step, tools, context)
        if isinstance(output, StepResult):
            return output
        return StepResult(step_id=step.id, status=StepStatus.SUCCESS, output=output)

    def validate(self, output: Any, schema: Mapping[str, Any] | None) -> ValidationResult:
        return check_output(output, schema)


def model_reply(text: str, tokens: int = 10, cost: float | None = None) -> Script:
    """A script making one model call that answers ``text`` using ``tokens`` tokens."""

    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        async def model() -> str:
            return text

        return await ctx.model.acall(
            model, usage_of=lambda _: Usage(input_tokens=tokens, cost_usd=cost)
        )

    return script


def tool_call(name: str, **arguments: Any) -> Script:
    async def script(step: Step, tools: ToolGate, ctx: ExecutionContext) -> Any:
        return await tools.invoke(name, arguments)

    return script
