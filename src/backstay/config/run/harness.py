"""``harness_run``: the flags of ``backstay run`` (one agent run, as an evaluation harness
starts it) checked once and turned into a frozen ``HarnessRun``.

The flags are checked by the same code as the keys of a suite file (adapter settings,
tiers, policies), and every problem is listed at once, each named by its flag. Relative
paths are relative to the working directory.

Without ``--policy`` a run retries under the policy for ``agent`` operations (the adapter
reliability contract's ``agent_dispatch`` unless the configuration maps another);
``--policy none`` or ``--no-retry`` make one attempt.

The environment is read here and nowhere else: for the variables the adapter options
name (``api_key_env``, ``pass_env``), and for the variables an evaluation harness sets in
the agent's container (the Scylla adapter contract): ``MODEL`` and ``TIER`` stand in for
``--model`` and ``--tier-id`` when those are not given, and ``RUN_NUMBER`` (a whole number)
is recorded with the run. An empty variable counts as unset.

Each candidate of the run (its own adapter, then each ``--fallback``) also takes the
standard variables of its own adapter's provider from the environment
(``backstay.adapters.provider_env``), unless inheriting them is switched off for all of
them (``--isolated-env``, ``--adapter-option inherit_env=false``); the variables named
explicitly go over them.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from backstay.adapters.contract import TierConfig
from backstay.adapters.registry import adapter_class
from backstay.config._document import Document
from backstay.config._overrides import UNSET, yaml_value
from backstay.config._paths import Path, parse_path
from backstay.config._policy_ref import policy_reference
from backstay.config._source import Source, SourceKind
from backstay.config.run.fallbacks import chain_envs, harness_fallbacks
from backstay.config.suite.adapters import adapter_options as checked_options
from backstay.config.suite.adapters import check_adapter_settings
from backstay.config.suite.model import AdapterOptions
from backstay.config.suite.spec import DEFAULT_TIER_ID, DEFAULT_TIMEOUT_S
from backstay.config.suite.tasks import existing_path, run_field
from backstay.config.suite.tasks import prompt_file as checked_prompt_file
from backstay.config.suite.tiers import tier as check_tier
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.policy.registry import PolicyRegistry, current_registry
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.redact import redact

__all__ = [
    "INLINE_POLICY_NAME",
    "MODEL_VAR",
    "NO_RETRY_POLICY",
    "RUN_NUMBER_VAR",
    "TIER_VAR",
    "HarnessRun",
    "harness_run",
]

INLINE_POLICY_NAME: Final = "run"
# ``--policy none``: a single attempt, no retry.
NO_RETRY_POLICY: Final = "none"
# The variables an evaluation harness sets for the agent (the Scylla adapter contract).
MODEL_VAR: Final = "MODEL"
TIER_VAR: Final = "TIER"
RUN_NUMBER_VAR: Final = "RUN_NUMBER"
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
    ("fallbacks",): "--fallback",
    ("context_window",): "--context-window",
    ("budget", "usd"): "--budget-usd",
    ("budget", "tokens"): "--budget-tokens",
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

    ``env`` is the agent's whole environment (the standard variables of its provider
    that are set, unless not inherited, and the variables ``options`` name over them),
    left out of ``repr``. ``tier`` is ``None`` when no tier flag (or ``TIER``) was given;
    ``policy`` is ``None`` for a single attempt. ``run_number`` is the harness's
    ``RUN_NUMBER``, if set. ``fallbacks`` are the candidates the run may move to
    (``--fallback``; their credential variables are in ``env``), ``context_window`` the
    model's own window (docs/fallback.md). ``fallback_envs`` holds the whole environment
    of an attempt on each other adapter of the chain, by name: the same explicit
    variables over that adapter's own provider variables (``env_for``). ``budget`` is the
    run's spending budget (``--budget-usd``, ``--budget-tokens``; ``None``: none).
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
    run_number: int | None = None
    fallbacks: tuple[Candidate, ...] = ()
    context_window: int | None = None
    fallback_envs: Mapping[str, Mapping[str, str]] = dataclasses.field(
        default_factory=dict, repr=False
    )
    budget: SpendBudget | None = None

    @property
    def adapter(self) -> str:
        return self.options.adapter

    def env_for(self, adapter: str) -> Mapping[str, str]:
        """The whole environment of an attempt on ``adapter``: ``env`` for the run's own."""
        if adapter == self.adapter:
            return self.env
        return self.fallback_envs.get(adapter, self.env)


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


def _by_flag(doc: Document, from_env: Mapping[Path, str]) -> None:
    """Name each problem by its flag (or the variable ``from_env`` says the value came
    from), with the rest of its key path (redacted)."""
    fixed = []
    for problem in doc.problems:
        path, source = problem.path, problem.source
        for end in range(len(path), 0, -1):
            variable = from_env.get(path[:end])
            flag = _FLAGS.get(path[:end])
            if variable is not None:
                path, source = path[end:], Source(SourceKind.ENV, variable)
                break
            if flag is not None:
                path, source = path[end:], Source(SourceKind.CLI, flag)
                break
        fixed.append(dataclasses.replace(problem, path=path, source=source))
    doc.problems[:] = [dataclasses.replace(p, reason=redact(p.reason)) for p in fixed]


def _variable(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "")
    return value or None


def _run_number(doc: Document, environ: Mapping[str, str]) -> int | None:
    text = _variable(environ, RUN_NUMBER_VAR)
    if text is None:
        return None
    try:
        number = int(text.strip())
    except ValueError:
        number = -1
    if number < 0:
        doc.problem(("run_number",), f"must be a whole number (0 or more), got {text!r}")
        return None
    return number


def _policy(
    doc: Document, policy: str | None, no_retry: bool, registry: PolicyRegistry | None
) -> RetryPolicy | None:
    """The run's policy: ``None`` for one attempt (``--no-retry``, ``--policy none``)."""
    named_none = policy is not None and policy.strip() == NO_RETRY_POLICY
    if no_retry:
        if policy is not None and not named_none:
            doc.problem(("policy",), "--no-retry makes one attempt; give one of the two")
        return None
    if named_none:
        return None
    registry = current_registry() if registry is None else registry
    base = registry.for_operation("agent")
    if policy is None:
        return base
    value = yaml_value(doc, policy, Source(SourceKind.CLI, "--policy"))
    if value is UNSET:
        return None
    return policy_reference(doc, ("policy",), value, registry, name=INLINE_POLICY_NAME, base=base)


def _budget(doc: Document, usd: float | None, tokens: int | None) -> SpendBudget | None:
    """The run's spending budget; ``None`` when neither limit is given (or one is wrong:
    a problem under its flag)."""
    if usd is None and tokens is None:
        return None
    problems = len(doc.problems)
    try:
        SpendBudget(usd=usd)
    except ConfigError as err:
        doc.problem(("budget", "usd"), err.reason)
    try:
        SpendBudget(tokens=tokens)
    except ConfigError as err:
        doc.problem(("budget", "tokens"), err.reason)
    if len(doc.problems) > problems:
        return None
    return SpendBudget(usd=usd, tokens=tokens)


def _model(doc: Document, model: str | None) -> str | None:
    if model is None:
        doc.problem(("model",), f"no model: give --model or set {MODEL_VAR}")
        return None
    checked: str | None = run_field(doc, ("model",), model)
    return checked


def _chain(
    doc: Document,
    fallbacks: Iterable[str],
    *,
    adapter: str,
    model: str | None,
    environ: Mapping[str, str],
) -> tuple[tuple[Candidate, ...], dict[str, str]]:
    """The ``--fallback`` candidates after the run's own, and their keys' variables."""
    try:
        primary = Candidate(adapter=adapter, model=model or "-")
    except ConfigError:  # reported under its own flag
        primary = Candidate(adapter="-", model="-")
    return harness_fallbacks(doc, fallbacks, primary=primary, environ=environ)


def harness_run(
    *,
    adapter: str,
    model: str | None,
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
    no_retry: bool = False,
    adapter_options: Iterable[str] = (),
    registry: PolicyRegistry | None = None,
    environ: Mapping[str, str] | None = None,
    fallbacks: Iterable[str] = (),
    context_window: int | None = None,
    inherit_env: bool = True,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
) -> HarnessRun:
    """Check the flags of one run; one ``ConfigError`` lists every problem by its flag.

    ``adapter_options`` are ``KEY=VALUE`` items (``--adapter-option``), values read as
    YAML, checked like the options of an adapter in a suite. ``model`` and ``tier_id``
    left ``None`` are taken from ``MODEL`` and ``TIER`` in ``environ``; a model is
    required one way or the other. Tier flags without ``tier_id`` make tier ``T0``; none
    at all leave the tier to the adapter. ``policy`` is a policy name or an inline YAML
    mapping (``{extends: x, …}``), looked up in ``registry`` (default: the one the library
    uses now); without it the run uses the registry's policy for ``agent`` operations, and
    ``"none"`` (or ``no_retry``) makes one attempt, across the whole chain when
    ``fallbacks`` are given. The agent's environment and the harness variables are taken
    from ``environ`` (default: this process's): the variables the options name, over
    the standard variables of each candidate's provider (none with
    ``inherit_env=False``). ``budget_usd`` and ``budget_tokens`` limit what the run's
    attempts may spend (docs/budgets.md).
    """
    environ = os.environ if environ is None else environ
    doc = Document(name=_WHERE)
    from_env: dict[Path, str] = {("run_number",): RUN_NUMBER_VAR}
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
    prompt = checked_prompt_file(doc, ("prompt_file",), os.fspath(prompt_file), cwd)
    folder = existing_path(doc, ("workspace",), os.fspath(workspace), cwd, directory=True)
    output = pathlib.Path(output_dir)
    if output.exists() and not output.is_dir():
        doc.problem(("output_dir",), f"is not a folder: {output}")
    if model is None:
        model = _variable(environ, MODEL_VAR)
        if model is not None:
            from_env[("model",)] = MODEL_VAR
    checked_model = _model(doc, model)
    timeout = run_field(doc, ("timeout_s",), timeout_s)
    stall = run_field(doc, ("stall_timeout_s",), stall_timeout_s)
    if tier_id is None:
        tier_id = _variable(environ, TIER_VAR)
        if tier_id is not None:
            from_env[("tier", "tier_id")] = TIER_VAR
    flags = {"tier_id": tier_id, "tier_name": tier_name, "tier_prompt": tier_prompt}
    tier = _tier(doc, {**flags, "tools_enabled": tools_enabled})
    chosen = _policy(doc, policy, no_retry, registry)
    run_number = _run_number(doc, environ)
    explicit: dict[str, str] = {}
    if options is not None:
        try:
            explicit = options.child_env(environ)
        except ConfigError as err:
            doc.problem(("options", "api_key_env"), err.reason)
    window = run_field(doc, ("context_window",), context_window)
    spending = _budget(doc, budget_usd, budget_tokens)
    chain, chain_env = _chain(doc, fallbacks, adapter=adapter, model=model, environ=environ)
    env, fallback_envs = chain_envs(
        declared,
        chain,
        {**chain_env, **explicit},
        environ=environ,
        inherit=inherit_env and (options is None or options.inherit_env),
    )
    _by_flag(doc, from_env)
    if doc.problems or options is None or prompt is None or folder is None:
        raise doc.error()
    assert checked_model is not None  # noqa: S101 - a missing model is a problem above
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
        run_number=run_number,
        fallbacks=chain,
        context_window=window,
        fallback_envs=fallback_envs,
        budget=spending,
    )
