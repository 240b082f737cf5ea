"""``harness_run``: the flags of ``backstay run`` (one agent run, as an evaluation harness
starts it) checked once and turned into a frozen ``HarnessRun``.

The flags are checked by the same code as the keys of a suite file (adapter settings,
tiers, policies), and every problem is listed at once, each named by its flag. Relative
paths are relative to the working directory. The environment is read only for the
variables the adapter options name (``api_key_env``, ``pass_env``) and the standard
variables of the adapter's provider (``backstay.adapters.provider_env``), unless
inheriting them is switched off (``--isolated-env``, ``inherit_env=false``).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay.adapters.contract import TierConfig
from backstay.adapters.provider_env import agent_env
from backstay.adapters.registry import adapter_class
from backstay.call import current_registry
from backstay.config._document import Document
from backstay.config._overrides import UNSET, yaml_value
from backstay.config._paths import Path, parse_path
from backstay.config._policy_ref import policy_reference
from backstay.config._source import Source, SourceKind
from backstay.config._suite import AdapterOptions
from backstay.config._suite_adapters import adapter_options as checked_options
from backstay.config._suite_adapters import check_adapter_settings
from backstay.config._suite_spec import DEFAULT_TIER_ID, DEFAULT_TIMEOUT_S
from backstay.config._suite_tasks import existing_path, run_field
from backstay.config._suite_tiers import tier as check_tier
from backstay.errors import ConfigError
from backstay.policy.registry import PolicyRegistry
from backstay.policy.retry import RetryPolicy
from backstay.redact import redact

__all__ = ["INLINE_POLICY_NAME", "HarnessRun", "harness_run"]

INLINE_POLICY_NAME: Final = "run"
_WHERE: Final = "command line"
_OPTION_FLAG: Final = "--adapter-option"
# Key path of a checked value → the flag it came from.
_FLAGS: Final[Mapping[Path, str]] = {
    ("adapter",): "--adapter",
    ("model",): "--model",
    ("prompt_file",): "--prompt-file",
    ("workspace",): "--workspace",
    ("output_dir",): "--output-dir",
    ("timeout_s",): "--timeout",
    ("stall_timeout_s",): "--stall-timeout",
    ("policy",): "--policy",
    ("options",): _OPTION_FLAG,
    ("tier", "tier_id"): "--tier-id",
    ("tier", "tier_name"): "--tier-name",
    ("tier", "tier_prompt"): "--tier-prompt",
    ("tier", "tools_enabled"): "--tools",
    ("tier",): "--tier-id",
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HarnessRun:
    """One run of one agent: what ``BaseAdapter.run`` is given.

    ``env`` is the agent's whole environment (the provider's standard variables that are
    set, unless not inherited, and the variables ``options`` name over them), left out
    of ``repr``. ``tier`` is ``None`` when no tier flag was given; ``policy`` is ``None`` for
    a single attempt.
    """

    options: AdapterOptions
    model: str
    prompt_file: pathlib.Path
    workspace: pathlib.Path
    output_dir: pathlib.Path
    timeout_s: float = DEFAULT_TIMEOUT_S
    stall_timeout_s: float | None = None
    tier: TierConfig | None = None
    policy: RetryPolicy | None = None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def adapter(self) -> str:
        return self.options.adapter


def _options(doc: Document, items: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items (values read as YAML; a dotted key sets a nested value)."""
    out = Document(name=_WHERE)
    source = Source(SourceKind.CLI, _OPTION_FLAG)
    for item in items:
        key, sep, text = item.partition("=")
        if not sep:
            # The text is not repeated: it may be a value pasted without its key.
            doc.problem(("options",), "expected KEY=VALUE, e.g. scenario=scenario.yaml")
            continue
        try:
            path = parse_path(key.strip(), where=_OPTION_FLAG)
        except ConfigError as err:
            doc.problem(("options",), err.reason)
            continue
        value = yaml_value(out, text, source)
        if value is not UNSET:
            out.set(path, value, source)
    doc.problems.extend(dataclasses.replace(p, path=("options", *p.path)) for p in out.problems)
    for path, where in out.sources.items():
        doc.sources[("options", *path)] = where
    return out.data


def _tier(doc: Document, flags: Mapping[str, object]) -> TierConfig | None:
    given = {key: value for key, value in flags.items() if value is not None}
    if not given:
        return None
    return check_tier(doc, ("tier",), {"tier_id": DEFAULT_TIER_ID, **given})


def _by_flag(doc: Document) -> None:
    """Name each problem by its flag, with the rest of its key path (redacted)."""
    fixed = []
    for problem in doc.problems:
        path, source = problem.path, problem.source
        for end in range(len(path), 0, -1):
            flag = _FLAGS.get(path[:end])
            if flag is not None:
                path, source = path[end:], Source(SourceKind.CLI, flag)
                break
        fixed.append(dataclasses.replace(problem, path=path, source=source))
    doc.problems[:] = [dataclasses.replace(p, reason=redact(p.reason)) for p in fixed]


def harness_run(
    *,
    adapter: str,
    model: str,
    prompt_file: str | os.PathLike[str],
    workspace: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    stall_timeout_s: float | None = None,
    tier_id: str | None = None,
    tier_name: str | None = None,
    tier_prompt: str | None = None,
    tools_enabled: bool | None = None,
    policy: str | None = None,
    adapter_options: Iterable[str] = (),
    registry: PolicyRegistry | None = None,
    environ: Mapping[str, str] | None = None,
    inherit_env: bool = True,
) -> HarnessRun:
    """Check the flags of one run; one ``ConfigError`` lists every problem by its flag.

    ``adapter_options`` are ``KEY=VALUE`` items (``--adapter-option``), values read as
    YAML, checked like the options of an adapter in a suite. Tier flags without
    ``tier_id`` make tier ``T0``; none at all leave the tier to the
    adapter. ``policy`` is a policy name or an inline YAML mapping (``{extends: x, …}``),
    looked up in ``registry`` (default: the one the library uses now). The agent's
    environment is taken from ``environ`` (default: this process's): the adapter's
    provider variables (not with ``inherit_env=False``) and the variables the options name.
    """
    doc = Document(name=_WHERE)
    declared: object = None
    try:
        declared = adapter_class(adapter)
        available = True
    except ConfigError as err:
        doc.problem(("adapter",), err.reason)
        available = False
    given = _options(doc, adapter_options)
    options = checked_options(doc, ("options",), adapter or "-", given)
    if options is not None and available:
        check_adapter_settings(doc, options, at=("options",), given=True)
    cwd = pathlib.Path.cwd()
    prompt = existing_path(doc, ("prompt_file",), os.fspath(prompt_file), cwd, directory=False)
    folder = existing_path(doc, ("workspace",), os.fspath(workspace), cwd, directory=True)
    output = pathlib.Path(output_dir)
    if output.exists() and not output.is_dir():
        doc.problem(("output_dir",), f"is not a folder: {output}")
    checked_model = run_field(doc, ("model",), model)
    timeout = run_field(doc, ("timeout_s",), timeout_s)
    stall = run_field(doc, ("stall_timeout_s",), stall_timeout_s)
    flags = {"tier_id": tier_id, "tier_name": tier_name, "tier_prompt": tier_prompt}
    tier = _tier(doc, {**flags, "tools_enabled": tools_enabled})
    chosen = None
    if policy is not None:
        registry = current_registry() if registry is None else registry
        value = yaml_value(doc, policy, Source(SourceKind.CLI, "--policy"))
        if value is not UNSET:
            base = registry.for_operation("agent")
            chosen = policy_reference(
                doc, ("policy",), value, registry, name=INLINE_POLICY_NAME, base=base
            )
    env: dict[str, str] = {}
    source = os.environ if environ is None else environ
    if options is not None:
        try:
            env = options.child_env(source)
        except ConfigError as err:
            doc.problem(("options", "api_key_env"), err.reason)
        env = agent_env(declared, env, environ=source, inherit=inherit_env and options.inherit_env)
    _by_flag(doc)
    if doc.problems or options is None or prompt is None or folder is None:
        raise doc.error()
    return HarnessRun(
        options=options,
        model=checked_model,
        prompt_file=prompt,
        workspace=folder,
        output_dir=output,
        timeout_s=timeout,
        stall_timeout_s=stall,
        tier=tier,
        policy=chosen,
        env=env,
    )
