"""The ``frameworks`` section: per agent framework, whether it is enabled, its default
hard limits, its safety settings and its human-in-the-loop settings.

::

    frameworks:
      langgraph:
        enabled: true
        limits: {max_steps: 20, max_tokens: 50000, wall_time_s: 300, max_cost_usd: 2.0}
        safety: {allowed_tools: [read_file, list_dir], redact_patterns: ["ACME-\\d+"]}
        human_in_the_loop: {approval_tools: [write_file]}

The tables here are the single description of the section (loader, JSON Schema,
docs/config.md); ``FrameworkConfig.runtime_settings()`` turns one entry into the
``RuntimeSettings`` a ``Runtime`` runs under.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from backstay.config._document import Document
from backstay.config._fields import Field
from backstay.config._paths import Path
from backstay.config._sections import check_fields, mapping, unknown_key
from backstay.config.suite.model import AdapterOptions, Suite
from backstay.errors import ConfigError

if TYPE_CHECKING:
    from backstay.runtime.settings import RuntimeSettings

__all__ = ["FrameworkConfig", "with_framework", "with_frameworks"]

FRAMEWORK_NAME_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_-]*$"
_NAME = re.compile(FRAMEWORK_NAME_PATTERN)

FRAMEWORKS_HELP: Final = "Agent frameworks run under backstay's runtime, by name (langgraph …)."

FRAMEWORK_SECTION: Final[Mapping[str, str]] = {
    "enabled": "Whether suite tasks may use this framework (default: true).",
    "limits": "Default hard limits of each run.",
    "safety": "Tool allowlist, cached tools, sandbox and redaction.",
    "human_in_the_loop": "Which tool calls wait for a human decision.",
}

ENABLED_FIELD: Final = Field(type="boolean", help=FRAMEWORK_SECTION["enabled"])

FRAMEWORK_LIMIT_FIELDS: Final[Mapping[str, Field]] = {
    "max_steps": Field(type="integer", minimum=1, help="Steps a run may execute."),
    "max_tokens": Field(type="integer", minimum=1, help="Tokens (in and out) a run may use."),
    "wall_time_s": Field(
        type="number", minimum=0, exclusive_minimum=True, help="Wall time of a run (s)."
    ),
    "max_tool_calls": Field(type="integer", minimum=1, help="Tool calls a run may make."),
    "max_model_calls": Field(
        type="integer", minimum=1, nullable=True, help="Model calls (turns) a run may make."
    ),
    "max_retries": Field(type="integer", minimum=0, help="Retries (model and corrections)."),
    "max_cost_usd": Field(
        type="number",
        minimum=0,
        exclusive_minimum=True,
        nullable=True,
        help="Cost a run may reach (USD).",
    ),
    "loop_repeats": Field(
        type="integer", minimum=1, help="Identical calls in a row that count as a loop."
    ),
}

FRAMEWORK_SAFETY_FIELDS: Final[Mapping[str, Field]] = {
    "allowed_tools": Field(type="strings", help="The tool allowlist (empty: no tool runs)."),
    "cacheable_tools": Field(type="strings", help="Tools whose results are reused per tenant."),
    "redact_patterns": Field(
        type="strings", help="Regular expressions redacted from everything recorded."
    ),
    "sandbox": Field(
        type="boolean",
        help="Built-in tools confined to the workspace, shell in bubblewrap (default: true).",
    ),
    "allow_weak_sandbox": Field(
        type="boolean",
        help="Let the shell tool run under unshare --net (network isolation only) where "
        "bubblewrap is missing (default: false).",
    ),
}

FRAMEWORK_HITL_FIELDS: Final[Mapping[str, Field]] = {
    "approval_tools": Field(type="strings", help="Tools that run only after a human approved."),
}

_GROUPS: Final[Mapping[str, Mapping[str, Field]]] = {
    "limits": FRAMEWORK_LIMIT_FIELDS,
    "safety": FRAMEWORK_SAFETY_FIELDS,
    "human_in_the_loop": FRAMEWORK_HITL_FIELDS,
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkConfig:
    """One framework's section, validated: only the keys given, per group."""

    name: str
    enabled: bool = True
    limits: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    safety: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    human_in_the_loop: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def runtime_settings(self, **overrides: Any) -> RuntimeSettings:
        """The section as ``RuntimeSettings`` (defaults for what is not given)."""
        from backstay.runtime.limits import ExecutionLimits  # noqa: PLC0415 - heavy
        from backstay.runtime.settings import RuntimeSettings  # noqa: PLC0415
        from backstay.runtime.tools import ToolPolicy  # noqa: PLC0415

        tools = ToolPolicy(
            allowed=frozenset(self.safety.get("allowed_tools", ())),
            cacheable=frozenset(self.safety.get("cacheable_tools", ())),
            approval=frozenset(self.human_in_the_loop.get("approval_tools", ())),
        )
        values: dict[str, Any] = {
            "limits": ExecutionLimits(**dict(self.limits)),
            "tools": tools,
            "redact_patterns": tuple(self.safety.get("redact_patterns", ())),
        }
        return RuntimeSettings(**{**values, **overrides})


def frameworks(doc: Document, raw: object) -> Mapping[str, FrameworkConfig]:
    """The ``frameworks`` section: name → its validated configuration."""
    path: Path = ("frameworks",)
    body = mapping(doc, path, raw, "framework name → settings")
    out: dict[str, FrameworkConfig] = {}
    for name, value in (body or {}).items():
        if not isinstance(name, str) or not _NAME.match(name):
            doc.problem((*path, str(name)), "a framework name is letters, digits, _ and -")
            continue
        section = mapping(doc, (*path, name), value, "framework settings")
        if section is None:
            continue
        groups: dict[str, Any] = {}
        enabled = True
        for key, sub in section.items():
            if key == "enabled":
                checked = check_fields(doc, (*path, name), {key: sub}, {key: ENABLED_FIELD}, "")
                enabled = bool(checked.get("enabled", True))
            elif key in _GROUPS:
                groups[key] = MappingProxyType(
                    check_fields(doc, (*path, name, key), sub, _GROUPS[key], "settings")
                )
            else:
                unknown_key(doc, (*path, name), key, list(FRAMEWORK_SECTION))
        out[name] = FrameworkConfig(name=name, enabled=enabled, **groups)
    return MappingProxyType(out)


def _adapter_defaults(fw: FrameworkConfig) -> dict[str, Any]:
    """The section as the ``agent-runtime`` adapter's own settings."""
    out: dict[str, Any] = {}
    if fw.limits:
        out["limits"] = dict(fw.limits)
    for key in ("allowed_tools", "cacheable_tools", "redact_patterns"):
        if key in fw.safety:
            out[key] = list(fw.safety[key])
    if fw.safety.get("sandbox") is False:
        out["builtin_tools"] = False  # the built-in tools exist only sandboxed
    if "allow_weak_sandbox" in fw.safety:
        out["allow_weak_sandbox"] = bool(fw.safety["allow_weak_sandbox"])
    if "approval_tools" in fw.human_in_the_loop:
        out["approval_tools"] = list(fw.human_in_the_loop["approval_tools"])
    return out


def _check_enabled(name: str, frameworks: Mapping[str, FrameworkConfig], *, used_by: str) -> None:
    fw = frameworks.get(name)
    if fw is not None and not fw.enabled:
        raise ConfigError(f"{used_by} {name!r}, which backstay.yaml disables", where="frameworks")


def with_framework(
    options: AdapterOptions, frameworks: Mapping[str, FrameworkConfig], *, used_by: str
) -> AdapterOptions:
    """``options`` (of one adapter) with the ``frameworks.<adapter>`` section applied as
    its defaults: what ``options.config`` gives wins, its ``limits`` key by key.
    ``ConfigError`` when the section disables the framework (``used_by`` says who uses
    it, for the message)."""
    name = options.adapter
    _check_enabled(name, frameworks, used_by=used_by)
    fw = frameworks.get(name)
    if fw is None:
        return options
    merged = _adapter_defaults(fw)
    for key, value in options.config.items():
        if key == "limits" and isinstance(value, Mapping):
            merged["limits"] = {**merged.get("limits", {}), **value}
        else:
            merged[key] = value
    return dataclasses.replace(options, config=merged)


def with_frameworks(suite: Suite, frameworks: Mapping[str, FrameworkConfig]) -> Suite:
    """``suite`` with each ``frameworks.<name>`` section of backstay.yaml applied to the
    adapter of that name: its settings are the adapter's defaults (what the suite gives
    wins; a task's ``limits`` win over both). ``ConfigError`` when a task uses a framework
    the configuration disables."""
    used = {task.adapter for task in suite.tasks}
    for name in sorted(used):
        _check_enabled(name, frameworks, used_by="the suite uses")
    adapters = dict(suite.adapters)
    for name in sorted(used & set(frameworks)):
        adapters[name] = with_framework(
            suite.options_for(name), frameworks, used_by="the suite uses"
        )
    return dataclasses.replace(suite, adapters=adapters)
