"""Task limits: the portable per-task caps of a suite (``limits:`` in a task) mapped onto
the settings of the adapter that runs it.

Each adapter class says which limits it can enforce in ``task_limits``: a portable limit
name → the key of its own ``config`` (a dotted key goes into a nested mapping). A limit
the adapter cannot enforce is refused, never silently dropped:

==================  ==========================================================
``max_turns``       claude-code ``--max-turns``, gemini-cli ``maxSessionTurns``,
                    opencode ``steps``; the agent runtime's ``max_model_calls``
``max_output_tokens``  the API adapters' ``max_tokens`` (per reply)
``max_tokens``, ``max_cost_usd``, ``max_steps``, ``max_tool_calls``, ``wall_time_s``
                    the agent runtime's hard limits (``ExecutionLimits``)
==================  ==========================================================

Codex and Aider expose no turn, token or cost cap a run could be given: a task with
``limits`` on them is refused with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from backstay.errors import ConfigError

__all__ = ["TASK_LIMITS", "apply_task_limits", "unsupported_limits"]

TASK_LIMITS: Final[tuple[str, ...]] = (
    "max_turns",
    "max_output_tokens",
    "max_tokens",
    "max_cost_usd",
    "max_steps",
    "max_tool_calls",
    "wall_time_s",
)


def _supported(adapter_class: type) -> Mapping[str, str]:
    found = getattr(adapter_class, "task_limits", None)
    return found if isinstance(found, Mapping) else {}


def unsupported_limits(adapter_class: type, limits: Mapping[str, Any]) -> tuple[str, ...]:
    """The limits of ``limits`` the adapter cannot enforce."""
    supported = _supported(adapter_class)
    return tuple(name for name in limits if name not in supported)


def apply_task_limits(
    adapter_class: type, config: Mapping[str, Any], limits: Mapping[str, Any]
) -> dict[str, Any]:
    """``config`` with ``limits`` written into the adapter's own keys (a task's limit
    wins over the adapter option); ``ConfigError`` for a limit the adapter cannot enforce."""
    out: dict[str, Any] = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in config.items()}
    missing = unsupported_limits(adapter_class, limits)
    if missing:
        name = getattr(adapter_class, "name", adapter_class.__name__)
        known = ", ".join(_supported(adapter_class)) or "none"
        raise ConfigError(
            f"adapter {name!r} cannot enforce {', '.join(missing)} (it can: {known})",
            where="limits",
        )
    for limit, value in limits.items():
        node = out
        *parents, leaf = _supported(adapter_class)[limit].split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out
