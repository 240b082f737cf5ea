"""Engine task adapters named for the frameworks: ``adapter: langgraph`` (``pydantic-ai``,
``llamaindex``, ``autogen``) in a suite task.

Each is the runtime's ``RuntimeTaskAdapter`` (checkpoint in the batch's own store,
approvals escalating the task, ``backstay resume`` continuing the run) with the framework
fixed: ``config.agent`` is the user's own factory (``module:function``: a graph, agent or
workflow built from the kit; optional, each framework has a default agent) and
``config.options`` the framework adapter's settings (``base_url``, ``timeout_s`` …). The
model's key is ``OPENAI_API_KEY`` and its endpoint ``OPENAI_BASE_URL``, taken from the
caller's environment like any adapter's provider variables (``api_key_env`` names another
variable for the key; ``options.base_url`` wins over the variable). With
``options.api: anthropic`` (the Pydantic-AI adapter) they are ``ANTHROPIC_API_KEY`` and
``ANTHROPIC_BASE_URL``, which the caller passes on with ``api_key_env`` / ``pass_env``::

    - id: notes
      adapter: langgraph
      model: gpt-5
      prompt: Save a note saying hi.
      config:
        agent: graph_agent:build
        options: {base_url: "http://127.0.0.1:8787/v1"}
        allowed_tools: [read_file, write_file]
        approval_tools: [write_file]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from backstay.adapters.base import BaseAdapter
from backstay.adapters.contract import AgentRequest
from backstay.adapters.provider_env import OPENAI_ENV, ProviderEnv
from backstay.errors import ConfigError
from backstay.frameworks import framework_adapter
from backstay.runtime.engine_adapter import RuntimeTaskAdapter
from backstay.runtime.limits import ExecutionLimits
from backstay.runtime.protocol import FrameworkAdapter

__all__ = ["AutoGenTask", "LangGraphTask", "LlamaIndexTask", "PydanticAITask"]

_OPENAI_KEY: Final = "OPENAI_API_KEY"
_OPENAI_BASE_URL: Final = "OPENAI_BASE_URL"
# ``options.api: anthropic`` (a kit speaking the Messages API, Pydantic-AI's): its variables.
_ANTHROPIC_KEY: Final = "ANTHROPIC_API_KEY"
_ANTHROPIC_BASE_URL: Final = "ANTHROPIC_BASE_URL"


class _FrameworkTask(RuntimeTaskAdapter):
    """A ``RuntimeTaskAdapter`` whose framework is fixed by ``name``; its model is an
    OpenAI-compatible chat model, so it reads the OpenAI SDK's variables."""

    provider_env: ClassVar[ProviderEnv] = OPENAI_ENV

    def validate_config(self, config: Mapping[str, Any]) -> bool:
        BaseAdapter.validate_config(self, config)
        for key in ("options", "limits"):
            if not isinstance(config.get(key, {}), Mapping):
                raise ConfigError("must be a mapping", where=f"config.{key}")
        ExecutionLimits(**dict(config.get("limits") or {}))
        self.validate_gates(config)
        return True

    def make_framework(self, request: AgentRequest) -> FrameworkAdapter:
        config = request.config
        options: dict[str, Any] = {"model": request.model, **dict(config.get("options") or {})}
        if config.get("agent") is not None:
            options["agent"] = config["agent"]
        # The provider's usual variables reach the request's environment (inherited unless
        # the run is isolated); ``api_key_env`` and ``options.base_url`` name others.
        anthropic = options.get("api") == "anthropic"
        key_env = str(config.get("api_key_env") or (_ANTHROPIC_KEY if anthropic else _OPENAI_KEY))
        options["api_key"] = request.env.get(key_env, "")
        base_url = request.env.get(_ANTHROPIC_BASE_URL if anthropic else _OPENAI_BASE_URL)
        if "base_url" not in options and base_url:
            options["base_url"] = base_url
        return framework_adapter(self.name, options)


class LangGraphTask(_FrameworkTask):
    name: ClassVar[str] = "langgraph"


class PydanticAITask(_FrameworkTask):
    name: ClassVar[str] = "pydantic-ai"


class LlamaIndexTask(_FrameworkTask):
    name: ClassVar[str] = "llamaindex"


class AutoGenTask(_FrameworkTask):
    name: ClassVar[str] = "autogen"
