"""Framework adapters: agent frameworks run under ``backstay.runtime``'s contract.

Each adapter is an optional extra, imported only when asked for:

| name | module | extra |
|---|---|---|
| ``langgraph`` | ``backstay.frameworks.langgraph`` | ``pip install 'backstay[langgraph]'`` |
| ``pydantic-ai`` | ``backstay.frameworks.pydantic_ai`` | ``pip install 'backstay[pydantic-ai]'`` |
| ``llamaindex`` | ``backstay.frameworks.llamaindex`` | ``pip install 'backstay[llamaindex]'`` |
| ``autogen`` | ``backstay.frameworks.autogen`` | ``pip install 'backstay[autogen]'`` |

``framework_adapter(name, config)`` builds one from a suite task's ``config`` (``agent``:
the user's ``module:function`` factory, ``model``, ``base_url``, ``api_key`` or
``api_key_env``, ``timeout_s``); each module's ``make_agent(config)`` does the same and
is the ``AgentFactory`` a task can name directly
(``agent: backstay.frameworks.langgraph:make_agent``). See ``docs/frameworks/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final

from backstay.errors import ConfigError
from backstay.runtime.protocol import FrameworkAdapter

__all__ = ["FRAMEWORKS", "framework_adapter"]

FRAMEWORKS: Final[Mapping[str, str]] = {
    "autogen": "backstay.frameworks.autogen",
    "langgraph": "backstay.frameworks.langgraph",
    "llamaindex": "backstay.frameworks.llamaindex",
    "pydantic-ai": "backstay.frameworks.pydantic_ai",
}


def framework_adapter(name: str, config: Mapping[str, Any] | None = None) -> FrameworkAdapter:
    """The adapter of framework ``name`` built from ``config``; a ``ConfigError`` for an
    unknown name or a framework that is not installed (naming the extra)."""
    module_name = FRAMEWORKS.get(name)
    if module_name is None:
        known = ", ".join(sorted(FRAMEWORKS))
        raise ConfigError(f"unknown framework {name!r} (known: {known})", where="adapter")
    module = importlib.import_module(module_name)
    adapter: FrameworkAdapter = module.make_agent(dict(config or {}))
    return adapter
