"""Adapters: the contract every agent CLI or API adapter keeps, and the plumbing they share.

* ``contract``: ``AgentRequest``, ``TierConfig``, ``AgentResult``, ``Usage`` and the
  ``Adapter`` protocol (``dispatch`` returns a result or raises ``AdapterError``).
* ``capture``: the run's ``stdout.log``, ``stderr.log``, ``agent.log`` (streamed,
  redacted) and ``metrics.json`` (atomic).
* ``cli.process``: ``run_process``, the one place a subprocess is started: own process
  group, closed stdin, explicit environment, deadline and stall kills.
* ``base``: ``BaseAdapter``, the contract's plumbing and the harness entry point ``run``.
* ``registry``: adapters by name, imported lazily; third parties via entry points.
* ``mock``: ``MockAdapter``, a scripted agent run as a real subprocess (imported only
  when asked for: ``get_adapter("mock")`` or ``backstay.adapters.mock``).
* ``api/``: ``anthropic``, ``openai``, ``gemini``: one LLM API call per attempt through
  the official SDKs (``get_adapter("anthropic-api")`` …), sharing ``api.base``.
* ``cli/``: the subprocess plumbing (``process``, ``orphans``), what the CLI adapters share
  (``base``, ``settings``) and one folder per agent CLI: ``claude_code``, ``codex``,
  ``gemini_cli``, ``opencode``, ``aider``.
* ``harness/``: the harness entry point's config split, captured run and run budget.
* The old module paths ``backstay.adapters.{anthropic_api, openai_api, gemini_api,
  process, orphans, claude_code, codex, gemini_cli, opencode, aider}`` are kept for one
  release (each forwards to its new module).
* ``pricing``: the cost of a call, from configured prices or the genai-prices table.
* ``provider_env``: ``ProviderEnv``, the standard variables of an adapter's provider
  (``BaseAdapter.provider_env``), which a run takes from the caller's environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from backstay._lazy_names import listed_names, load_name

if TYPE_CHECKING:
    from backstay.adapters.base import BaseAdapter
    from backstay.adapters.capture import METRICS_KEYS, Capture, Stream
    from backstay.adapters.cli.process import ProcessOutcome, run_process, run_process_sync
    from backstay.adapters.contract import (
        TIMEOUT_EXIT_CODE,
        Adapter,
        AgentRequest,
        AgentResult,
        AgentStatus,
        TierConfig,
    )
    from backstay.adapters.provider_env import ProviderEnv
    from backstay.adapters.registry import (
        ENTRY_POINT_GROUP,
        PLANNED_ADAPTERS,
        adapter_class,
        adapter_names,
        get_adapter,
    )
    from backstay.adapters.tiers import TIER_PRESET_IDS, tier_preset
    from backstay.adapters.usage import Usage


__all__ = [
    "ENTRY_POINT_GROUP",
    "METRICS_KEYS",
    "PLANNED_ADAPTERS",
    "TIER_PRESET_IDS",
    "TIMEOUT_EXIT_CODE",
    "Adapter",
    "AgentRequest",
    "AgentResult",
    "AgentStatus",
    "BaseAdapter",
    "Capture",
    "ProcessOutcome",
    "ProviderEnv",
    "Stream",
    "TierConfig",
    "Usage",
    "adapter_class",
    "adapter_names",
    "get_adapter",
    "run_process",
    "run_process_sync",
    "tier_preset",
]

# Where each name lives, imported on first use: importing a module of this package
# (``contract``, ``usage`` …) loads only what that module needs.
_LAZY: Final = {
    "Adapter": "backstay.adapters.contract",
    "AgentRequest": "backstay.adapters.contract",
    "AgentResult": "backstay.adapters.contract",
    "AgentStatus": "backstay.adapters.contract",
    "BaseAdapter": "backstay.adapters.base",
    "Capture": "backstay.adapters.capture",
    "ENTRY_POINT_GROUP": "backstay.adapters.registry",
    "METRICS_KEYS": "backstay.adapters.capture",
    "PLANNED_ADAPTERS": "backstay.adapters.registry",
    "ProcessOutcome": "backstay.adapters.cli.process",
    "ProviderEnv": "backstay.adapters.provider_env",
    "Stream": "backstay.adapters.capture",
    "TIER_PRESET_IDS": "backstay.adapters.tiers",
    "TIMEOUT_EXIT_CODE": "backstay.adapters.contract",
    "TierConfig": "backstay.adapters.contract",
    "Usage": "backstay.adapters.usage",
    "adapter_class": "backstay.adapters.registry",
    "adapter_names": "backstay.adapters.registry",
    "get_adapter": "backstay.adapters.registry",
    "run_process": "backstay.adapters.cli.process",
    "run_process_sync": "backstay.adapters.cli.process",
    "tier_preset": "backstay.adapters.tiers",
}


def __getattr__(name: str) -> Any:
    return load_name(globals(), name, _LAZY)


def __dir__() -> list[str]:
    return listed_names(globals())
