"""A task's ``limits``: portable caps mapped onto the adapter that runs the task
(``backstay.adapters.limits``). Checked when the suite loads: a limit the adapter cannot
enforce is a problem at its line, never silently dropped."""

from __future__ import annotations

from collections.abc import Mapping
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
    "A limit the adapter cannot enforce is refused."
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


def task_limits(doc: Document, path: Path, raw: object, adapter: str | None) -> Mapping[str, Any]:
    """The valid limits of ``raw`` that ``adapter`` can enforce; problems for the rest."""
    checked = check_fields(doc, path, raw, TASK_LIMIT_FIELDS, "limits")
    if adapter is None or not checked:
        return MappingProxyType(checked)
    try:
        cls = adapter_class(adapter)
    except ConfigError:  # a reserved or missing adapter is reported where it is named
        return MappingProxyType(checked)
    for name in unsupported_limits(cls, checked):
        doc.problem((*path, name), f"adapter {adapter!r} cannot enforce this limit")
        del checked[name]
    return MappingProxyType(checked)
