"""A task's ``limits``: portable caps mapped onto the adapter that runs the task
(``backstay.adapters.limits``), and onto the adapter of each of its fallbacks. Checked when
the suite loads: a limit one of them cannot enforce is a problem at its line, never
silently dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from backstay.adapters.limits import unsupported_limits
from backstay.adapters.registry import adapter_class
from backstay.config._document import Document
from backstay.config._fields import Field
from backstay.config._paths import Path
from backstay.config._sections import check_fields
from backstay.errors import ConfigError

LIMITS_HELP: Final = (
    "Caps of each run, enforced by the adapter: `max_turns` (claude-code, gemini-cli, "
    "opencode, agent-runtime), `max_output_tokens` (API adapters), and for framework "
    "agents `max_tokens`, `max_cost_usd`, `max_steps`, `max_tool_calls`, `wall_time_s`. "
    "They apply to the task's fallbacks too, each on its own adapter; a limit the adapter "
    "or a fallback's adapter cannot enforce is refused."
)

TASK_LIMIT_FIELDS: Final[Mapping[str, Field]] = {
    "max_turns": Field(type="integer", minimum=1, help="Model turns of a run."),
    "max_output_tokens": Field(type="integer", minimum=1, help="Tokens of one reply."),
    "max_tokens": Field(type="integer", minimum=1, help="Tokens (in and out) of a run."),
    "max_cost_usd": Field(
        type="number", minimum=0, exclusive_minimum=True, help="Cost of a run (USD)."
    ),
    "max_steps": Field(type="integer", minimum=1, help="Steps of a framework agent's run."),
    "max_tool_calls": Field(type="integer", minimum=1, help="Tool calls of a run."),
    "wall_time_s": Field(
        type="number", minimum=0, exclusive_minimum=True, help="Wall time of a run (s)."
    ),
}


def task_limits(
    doc: Document,
    path: Path,
    raw: object,
    adapter: str | None,
    fallback_adapters: Sequence[str] = (),
) -> Mapping[str, Any]:
    """The valid limits of ``raw`` that ``adapter`` and every adapter of
    ``fallback_adapters`` can enforce; problems for the rest."""
    checked = check_fields(doc, path, raw, TASK_LIMIT_FIELDS, "limits")
    if adapter is None or not checked:
        return MappingProxyType(checked)
    chain = [adapter, *(name for name in dict.fromkeys(fallback_adapters) if name != adapter)]
    for i, name in enumerate(chain):
        try:
            cls = adapter_class(name)
        except ConfigError:  # a reserved or missing adapter is reported where it is named
            continue
        whose = "adapter" if i == 0 else "fallback adapter"
        for limit in unsupported_limits(cls, checked):
            doc.problem((*path, limit), f"{whose} {name!r} cannot enforce this limit")
            del checked[limit]
    return MappingProxyType(checked)
