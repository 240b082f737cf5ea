"""What the four framework adapters share.

* ``require(module, extra)``: the lazy import of a framework, a ``ConfigError`` naming
  ``pip install 'backstay[extra]'`` when it is missing;
* ``ModelSettings``: the model a suite task's ``config`` names (``model``, ``base_url``,
  ``api_key`` or ``api_key_env``, ``timeout_s``);
* ``load_factory``: the user's agent given as ``module:function`` (or a callable);
* ``task_plan`` / ``task_text``: a task text (one step) or ``{"steps": [...]}``, and the
  step's prompt with the validation feedback of a previous attempt;
* ``Checkpoint``: the framework's own checkpoint of a step, kept in the run's persistent
  ``state`` (saved by the runtime with the run record, so ``resume`` finds it);
* ``openai_usage``: an OpenAI-style token count as backstay's ``Usage``;
* ``TaskAdapter``: the base of the four adapters (factory, model settings, task config,
  ``plan`` and ``validate``); ``adapter_arguments``: its arguments from a suite task's
  ``config``; ``with_openai_http_client``: a step run with the adapter's HTTP client or a
  new one closed when the step ends.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, ClassVar, Final

from backstay._checks import check_name, check_number, check_url
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.runtime.context import ExecutionContext
from backstay.runtime.interface import BaseAgentAdapter
from backstay.runtime.plan import Plan, Step
from backstay.runtime.results import StepResult, StepStatus, ValidationResult
from backstay.runtime.schema_check import check_output

__all__ = [
    "Checkpoint",
    "ModelSettings",
    "TaskAdapter",
    "adapter_arguments",
    "answer",
    "load_factory",
    "openai_http_client",
    "openai_usage",
    "require",
    "task_plan",
    "task_text",
    "tool_text",
    "with_openai_http_client",
]

DEFAULT_TIMEOUT_S: Final = 60.0
# The wire formats a kit's model may speak: OpenAI Chat Completions, Anthropic Messages.
MODEL_APIS: Final = ("openai", "anthropic")
_KEY_VARIABLES: Final = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def require(module: str, extra: str) -> ModuleType:
    """``import module``, or a ``ConfigError`` naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"needs the {module.partition('.')[0]!r} package, which is not installed: "
            f"pip install 'backstay[{extra}]'",
            where=module,
        ) from exc


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """A chat model: ``model``, the wire format it speaks (``api``: ``openai`` Chat
    Completions or ``anthropic`` Messages), ``base_url`` (``None``: the SDK's default),
    the key (never logged) and the per-request ``timeout_s``."""

    model: str
    base_url: str | None = None
    api_key: str = dataclasses.field(default="", repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    api: str = "openai"

    def __post_init__(self) -> None:
        check_name(self.model, where="config.model")
        if self.api not in MODEL_APIS:
            raise ConfigError(
                f"must be one of {', '.join(MODEL_APIS)}, got {self.api!r}", where="config.api"
            )
        if self.base_url is not None:
            check_url(self.base_url, where="config.base_url")
        check_number(self.timeout_s, where="config.timeout_s", above=True)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, default_model: str) -> ModelSettings:
        """From a suite task's ``config``: the key is ``api_key``, else the variable
        ``api_key_env`` names (default ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` with
        ``api: anthropic``)."""
        api = config.get("api", "openai")
        key = config.get("api_key")
        if key is None:
            env = config.get("api_key_env", _KEY_VARIABLES.get(api, "OPENAI_API_KEY"))
            check_name(env, where="config.api_key_env")
            key = os.environ.get(env, "")
        if not isinstance(key, str):
            raise ConfigError("must be a string", where="config.api_key")
        return cls(
            model=config.get("model", default_model),
            base_url=config.get("base_url"),
            api_key=key,
            timeout_s=config.get("timeout_s", DEFAULT_TIMEOUT_S),
            api=api,
        )


def load_factory(spec: object, *, where: str = "config.agent") -> Callable[..., Any] | None:
    """The callable ``module:function`` names (a callable is returned as it is;
    ``None``: the adapter's default agent)."""
    if spec is None or callable(spec):
        return spec
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ConfigError(f"must be 'module:function', got {spec!r}", where=where)
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r}: {exc}", where=where) from None
    found = getattr(module, attr, None)
    if not callable(found):
        raise ConfigError(f"{module_name!r} has no function {attr!r}", where=where)
    return found  # type: ignore[no-any-return]


def task_plan(input: Any, context: ExecutionContext, *, action: str) -> Plan:
    """One step ``run`` for a task text (or ``{"task": text}``); ``{"steps": [...]}``
    for several, each with its own ``parameters.task``."""
    if isinstance(input, Mapping) and "steps" in input:
        steps = tuple(Step.from_dict(s) for s in input["steps"])
        return Plan(id=f"plan-{context.run_id}", steps=steps, max_steps=max(1, len(steps)))
    task = input.get("task") if isinstance(input, Mapping) else input
    if not isinstance(task, str) or not task:
        raise ConfigError("must be a task text, {'task': text} or {'steps': [...]}", where="input")
    step = Step(id="run", action=action, parameters={"task": task})
    return Plan(id=f"plan-{context.run_id}", steps=(step,), max_steps=1)


def task_text(step: Step, context: ExecutionContext) -> str:
    """The step's task, with what did not hold in the previous attempt's output."""
    task = str(step.parameters.get("task", step.action))
    if context.feedback:
        task += f"\n\nYour previous answer did not hold: {context.feedback}"
    return task


def tool_text(value: Any) -> str:
    """A tool's JSON result as the text a model reads."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def answer(step: Step, text: str, tool_calls: int) -> StepResult:
    """A step that ended with the model's answer: ``{"answer", "tool_calls"}``."""
    return StepResult(
        step_id=step.id,
        status=StepStatus.SUCCESS,
        output={"answer": text, "tool_calls": tool_calls},
    )


class Checkpoint:
    """The framework checkpoint of one step in ``context.state`` (JSON). Written while
    the step runs, so that a run halted mid-step (an approval, a limit) keeps it, and
    cleared when the step returns."""

    __slots__ = ("_ctx", "key")

    def __init__(self, context: ExecutionContext, framework: str, step: Step) -> None:
        self._ctx = context
        self.key = f"{framework}:{step.id}"

    def load(self) -> Any:
        return self._ctx.state.get(self.key)

    def save(self, data: Any) -> None:
        self._ctx.state[self.key] = data

    def clear(self) -> None:
        self._ctx.state.pop(self.key, None)


def openai_http_client() -> Any:
    """A new HTTP client of the openai SDK's own kind (``openai.DefaultAsyncHttpxClient``),
    to close when the step ends (an async context manager)."""
    sdk = require("openai", "openai")
    return sdk.DefaultAsyncHttpxClient()


def openai_usage(
    prompt_tokens: int | None, completion_tokens: int | None, cached_tokens: int | None = None
) -> Usage:
    """One model call's OpenAI-style count (cached tokens inside the prompt's)."""
    cached = cached_tokens or 0
    return Usage(
        input_tokens=max(0, (prompt_tokens or 0) - cached),
        cache_read_tokens=cached,
        output_tokens=completion_tokens or 0,
        api_calls=1,
    )


async def with_openai_http_client(
    http_client: Any, run: Callable[[Any], Awaitable[StepResult]]
) -> StepResult:
    """``run(http_client)``; without one (``None``), with a new ``openai_http_client()``
    closed when the run returns."""
    if http_client is not None:
        return await run(http_client)
    async with openai_http_client() as own:
        return await run(own)


def adapter_arguments(config: Mapping[str, Any], *, default_model: str) -> dict[str, Any]:
    """An adapter's keyword arguments from a suite task's ``config``: ``agent``,
    ``model``, ``base_url``, the key (``api_key`` or ``api_key_env``), ``timeout_s``,
    ``api``."""
    s = ModelSettings.from_config(config, default_model=default_model)
    return {
        "agent": config.get("agent"),
        "model": s.model,
        "base_url": s.base_url,
        "api_key": s.api_key,
        "timeout_s": s.timeout_s,
        "api": s.api,
        "config": config,
    }


class TaskAdapter(BaseAgentAdapter):
    """What every framework adapter holds: the user's agent ``factory``, the model
    ``settings`` and the task's ``config``; its ``plan`` (``task_plan``) and ``validate``
    (``check_output``). A subclass names itself (``name``) and runs a step (``execute``)."""

    name: ClassVar[str]
    # The model wire formats the adapter's kit builds (``ModelSettings.api``).
    apis: ClassVar[tuple[str, ...]] = ("openai",)

    def __init__(
        self,
        *,
        factory: Callable[..., Any],
        model: str,
        base_url: str | None,
        api_key: str,
        timeout_s: float,
        config: Mapping[str, Any] | None,
        api: str = "openai",
    ) -> None:
        self.factory = factory
        self.settings = ModelSettings(
            model=model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, api=api
        )
        if api not in self.apis:
            raise ConfigError(
                f"the {self.name} adapter's kit builds {' or '.join(self.apis)} models, "
                f"not {api!r}",
                where="config.api",
            )
        self.config = dict(config or {})

    async def plan(self, input: Any, context: ExecutionContext) -> Plan:
        return task_plan(input, context, action=self.name)

    def validate(self, output: Any, schema: Mapping[str, Any] | None) -> ValidationResult:
        return check_output(output, schema)
