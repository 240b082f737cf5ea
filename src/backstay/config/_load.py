"""``load_config``: find the file, read it, apply the overrides, check everything once.

The file is ``path`` if given, else the one ``BACKSTAY_CONFIG`` names, else
``backstay.yaml`` in the working directory if there is one, else the retry policy
framework's ``agent/config.yml`` (only its ``retry:`` section), else the adapter
reliability contract's ``config/defaults.yaml`` (only its ``adapter:`` section; no file:
built-in defaults). That framework's camelCase keys are read as backstay's (``_dialect``).
Then ``BACKSTAY__*`` environment variables, then ``--set`` items, each overriding what came
before. This module and ``_harness`` (the variables a run's agent is given by name) are
the only ones in backstay that read settings from the environment.
"""

from __future__ import annotations

import os
import pathlib
import warnings
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from backstay.config._dialect import (
    AGENT_CONFIG_FILE,
    CONTRACT_DEFAULTS_FILE,
    is_agent_config,
    is_contract_defaults,
    translate,
)
from backstay.config._document import Document
from backstay.config._fields import describe_value
from backstay.config._frameworks import frameworks
from backstay.config._model import BackstayConfig, EffectiveValue
from backstay.config._overrides import apply_env, apply_sets
from backstay.config._paths import Path, format_path
from backstay.config._policies import Policies, build_policies, flatten
from backstay.config._sections import (
    check_fields,
    mapping,
    operation_policies,
    policy_name,
    rate_limits,
    section,
    unknown_key,
)
from backstay.config._source import DEFAULT, Source, SourceKind
from backstay.config._spec import (
    BUDGET_FIELDS,
    CIRCUIT_BREAKER_FIELDS,
    OBSERVE_FIELDS,
    OBSERVE_SECTION,
    OTEL_FIELDS,
    RETRY_SECTION,
    TOP_LEVEL,
)
from backstay.config._yaml import read_yaml
from backstay.policy.registry import (
    DEFAULT_OPERATION_POLICIES,
    DEFAULT_POLICY_NAME,
    OperationType,
    PolicyRegistry,
)

CONFIG_ENV_VAR: Final = "BACKSTAY_CONFIG"
DEFAULT_CONFIG_FILE: Final = "backstay.yaml"
MAX_FILE_BYTES: Final = 10 * 1024 * 1024
_NO_FILE: Final = "configuration"
_ABSENT: Final = object()
_FALLBACK: Final = Source(SourceKind.DEFAULT, "default_policy (no policy of its own)")


def _locate(
    path: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> tuple[pathlib.Path | None, str]:
    """The file to read (``None``: none) and, if it was named, by whom."""
    if path is not None:
        return pathlib.Path(path), ""
    named = environ.get(CONFIG_ENV_VAR, "").strip()
    if named:
        return pathlib.Path(named), f" (named by {CONFIG_ENV_VAR})"
    default = pathlib.Path(DEFAULT_CONFIG_FILE)
    if default.is_file():
        return default, ""
    # The retry policy framework's file, or the adapter reliability contract's, when the
    # project has no backstay.yaml.
    for other in (AGENT_CONFIG_FILE, CONTRACT_DEFAULTS_FILE):
        if other.is_file():
            return other, ""
    return None, ""


def read_file(file: pathlib.Path, doc: Document, named_by: str = "") -> Any:
    """The YAML data of ``file``; problems (missing, too large, not UTF-8 …) go to ``doc``."""
    try:
        if file.is_dir():
            doc.problem((), f"is a directory, not a file{named_by}")
            return None
        if not file.is_file():
            doc.problem((), f"no such file{named_by}")
            return None
        if file.stat().st_size > MAX_FILE_BYTES:
            doc.problem((), f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
            return None
        text = file.read_bytes().decode("utf-8")
    except OSError as err:
        doc.problem((), f"cannot be read: {err.strerror or err}")
        return None
    except UnicodeDecodeError as err:
        doc.problem((), f"is not UTF-8 text (byte {err.start})")
        return None
    return read_yaml(text, doc)


def _root(doc: Document, data: Any) -> None:
    if data is None:
        return
    if not isinstance(data, dict):
        doc.problem((), f"must be a mapping with a 'retry' section, got {type(data).__name__}")
        return
    doc.data = data


def _effective(
    doc: Document,
    registry: PolicyRegistry,
    policies: Policies,
    sections: Mapping[str, Mapping[str, Any]],
) -> dict[str, EffectiveValue]:
    out: dict[str, EffectiveValue] = {}

    def add(path: Path, value: Any, source: Source) -> None:
        key = format_path(path)
        out[key] = EffectiveValue(key, value, source)

    default_path = ("retry", "default_policy")
    given = _retry(doc).get("default_policy", _ABSENT)
    default_source = doc.source_of(default_path) if given == registry.default_policy else None
    add(default_path, registry.default_policy, default_source or DEFAULT)
    for name in registry.names():
        settings = registry.describe(name)["settings"]
        sources = policies.sources.get(name, {})
        for path, value in flatten(settings).items():
            add(("retry", "policies", name, *path), value, sources.get(path, DEFAULT))
    given_ops = _retry(doc).get("operation_policies")
    for op in OperationType:
        path = ("retry", "operation_policies", op.value)
        if op.value in registry.operation_policies:
            in_file = isinstance(given_ops, dict) and op.value in given_ops
            source = (doc.source_of(path) if in_file else None) or DEFAULT
            add(path, registry.operation_policies[op.value], source)
        else:
            add(path, registry.default_policy, _FALLBACK)
    for name, values in sections.items():
        for path, value in flatten(values).items():
            full = ("retry", name, *path)
            add(full, value, doc.source_of(full) or DEFAULT)
    return out


def _retry(doc: Document) -> dict[str, Any]:
    retry = doc.data.get("retry")
    return retry if isinstance(retry, dict) else {}


def _build(doc: Document, file: pathlib.Path | None) -> BackstayConfig:
    for key in doc.data:
        if key not in TOP_LEVEL:
            unknown_key(doc, (), key, list(TOP_LEVEL))
    retry = mapping(doc, ("retry",), doc.data.get("retry"), "retry settings") or {}
    for key in retry:
        if key not in RETRY_SECTION:
            unknown_key(doc, ("retry",), key, list(RETRY_SECTION))
    policies = build_policies(doc, retry.get("policies"))
    known = policies.declared | set(policies.built)
    default = DEFAULT_POLICY_NAME
    if "default_policy" in retry:
        checked = policy_name(doc, ("retry", "default_policy"), retry["default_policy"], known)
        if checked is not None and checked in policies.built:
            default = checked
    operations = operation_policies(
        doc, ("retry", "operation_policies"), retry.get("operation_policies"), known
    )
    registry = PolicyRegistry(
        policies.built.values(),
        default_policy=default,
        operation_policies={
            op: n
            for op, n in {**DEFAULT_OPERATION_POLICIES, **operations}.items()
            if n in policies.built
        },
        builtins=False,
    )
    breaker = section(
        doc, ("retry", "circuit_breaker"), retry.get("circuit_breaker"), CIRCUIT_BREAKER_FIELDS
    )
    budget = section(doc, ("retry", "budget"), retry.get("budget"), BUDGET_FIELDS)
    limits = rate_limits(doc, ("retry", "rate_limits"), retry.get("rate_limits"))
    sections = {"circuit_breaker": breaker, "budget": budget, "rate_limits": limits}
    configured = frameworks(doc, doc.data.get("frameworks"))
    otel = _otel(doc)
    observe = _observe_values(doc)
    store, unavailable = _store(doc)
    effective = _effective(doc, registry, policies, sections)
    for name, fw in configured.items():
        groups = {
            "limits": fw.limits,
            "safety": fw.safety,
            "human_in_the_loop": fw.human_in_the_loop,
        }
        for path, value in flatten({"enabled": fw.enabled, **groups}).items():
            full = ("frameworks", name, *path)
            key = format_path(full)
            effective[key] = EffectiveValue(key, value, doc.source_of(full) or DEFAULT)
    for key_name, value in observe.items():
        key = format_path(("observe", key_name))
        effective[key] = EffectiveValue(key, value, doc.source_of(("observe", key_name)) or DEFAULT)
    for path, value in flatten(otel).items():
        full = ("observe", "otel", *path)
        key = format_path(full)
        effective[key] = EffectiveValue(key, value, doc.source_of(full) or DEFAULT)
    return BackstayConfig(
        file=file,
        registry=registry,
        circuit_breaker=breaker,
        budget=budget,
        rate_limits=limits,
        otel=otel,
        effective=MappingProxyType(effective),
        problems=tuple(doc.rendered_problems()),
        frameworks=configured,
        store=store,
        store_unavailable=unavailable,
        metrics_port=observe.get("metrics_port"),
        log_level=observe.get("log_level"),
    )


def _store(doc: Document) -> tuple[str | None, str]:
    """The ``store`` key: a location, or a mapping of ``url`` and ``unavailable``."""
    raw = doc.data.get("store")
    if raw is None:
        return None, "stop"
    if isinstance(raw, str) and raw.strip():
        return raw, "stop"
    if not isinstance(raw, dict):
        doc.problem(("store",), f"must be a location or a mapping, got {describe_value(raw)}")
        return None, "stop"
    for key in raw:
        if key not in ("url", "unavailable"):
            unknown_key(doc, ("store",), key, ["url", "unavailable"])
    url, unavailable = raw.get("url"), raw.get("unavailable", "stop")
    if not isinstance(url, str) or not url.strip():
        doc.problem(("store", "url"), f"must be a location, got {describe_value(url)}")
        url = None
    if unavailable not in ("stop", "wait"):
        doc.problem(("store", "unavailable"), f"must be stop or wait, got {unavailable!r}")
        unavailable = "stop"
    return url, str(unavailable)


def _otel(doc: Document) -> Mapping[str, Any]:
    """The ``observe.otel`` section (unknown keys of ``observe`` are problems)."""
    observe = mapping(doc, ("observe",), doc.data.get("observe"), "observe settings") or {}
    for key in observe:
        if key not in OBSERVE_SECTION:
            unknown_key(doc, ("observe",), key, list(OBSERVE_SECTION))
    return section(doc, ("observe", "otel"), observe.get("otel"), OTEL_FIELDS)


def _observe_values(doc: Document) -> dict[str, Any]:
    """``observe.metrics_port`` and ``observe.log_level``, checked (only those given)."""
    observe = doc.data.get("observe")
    if not isinstance(observe, dict):
        return {}
    given = {k: v for k, v in observe.items() if k in OBSERVE_FIELDS}
    return check_fields(doc, ("observe",), given, OBSERVE_FIELDS, "settings")


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    strict: bool = True,
) -> BackstayConfig:
    """Load, override and check the configuration, once.

    ``overrides`` are ``KEY=VALUE`` items as given to ``--set``; ``environ`` defaults to
    the process environment (pass ``{}`` to ignore it). With ``strict`` (the default) any
    problem raises one ``ConfigError`` naming every problem with its file and line (or
    variable, or ``--set``) and key path. With ``strict=False`` each problem is warned
    about instead and the value in question falls back to its default.
    """
    env = os.environ if environ is None else environ
    file, named_by = _locate(path, env)
    doc = Document(name=_NO_FILE if file is None else str(file))
    if file is not None:
        _root(doc, read_file(file, doc, named_by))
        translate(doc, agent_file=is_agent_config(file), defaults_file=is_contract_defaults(file))
    apply_env(doc, env)
    apply_sets(doc, overrides)
    translate(doc, agent_file=False, newer=True)  # camelCase keys given with --set
    config = _build(doc, file)
    if doc.problems:
        if strict:
            raise doc.error()
        warnings.warn(
            "backstay configuration: using defaults in place of what is wrong:\n"
            + "\n".join(f"  {line}" for line in config.problems),
            UserWarning,
            stacklevel=2,
        )
    return config
