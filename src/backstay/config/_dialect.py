"""The retry policy framework's own spelling of the ``retry:`` section, read as backstay's.

That framework keeps its settings in ``agent/config.yml`` under ``retry:`` with camelCase
keys and milliseconds; backstay's names are snake_case with seconds. Each key it uses is
renamed (and its value converted) in place, before anything is checked, so every later
message names backstay's key at the line the framework's key was written on:

==========================================  ==========================================
retry policy framework                      backstay
==========================================  ==========================================
``defaultPolicy``                           ``default_policy``
``operationPolicies``                       ``operation_policies``
``policies.P.maxAttempts``                  ``policies.P.max_attempts``
``policies.P.backoff: fixed``               ``policies.P.backoff: constant``
``policies.P.initialDelayMs`` (ms)          ``policies.P.initial_delay_s`` (s)
``policies.P.maxDelayMs`` (ms)              ``policies.P.max_delay_s`` (s)
``policies.P.factor``                       ``policies.P.multiplier``
``policies.P.jitterPercent`` (%)            ``policies.P.jitter`` (fraction)
``policies.P.escalateOnExhaustion``         ``policies.P.escalate_on_exhaustion``
``circuitBreaker.enabled``                  ``circuit_breaker.enabled``
``circuitBreaker.failureThreshold``         ``circuit_breaker.failure_threshold``
``circuitBreaker.openDurationMs`` (ms)      ``circuit_breaker.open_duration_s`` (s)
``circuitBreaker.halfOpenProbes``           ``circuit_breaker.half_open_max_probes``
==========================================  ==========================================

A file found (or named) at ``agent/config.yml`` is the agent's own file: only its
``retry:`` section is backstay's, and its other sections are left alone.

The adapter reliability contract's ``adapter:`` section (its ``config/defaults.yaml``)
becomes a policy named ``adapter`` that ``agent`` operations use unless
``operation_policies.agent`` names another: ``max_retries`` N → ``max_attempts`` N + 1,
``initial_backoff_seconds`` → ``initial_delay_s``, ``backoff_multiplier`` →
``multiplier``, ``max_backoff_seconds`` → ``max_delay_s``, ``retry_on`` / ``no_retry_on``
(its error types) → ``retry_on`` / ``never_retry_on`` (failure kinds; its ``network`` type
covers backstay's ``network`` and ``server_error``). It starts from ``agent_dispatch``.

The agent adapter interface's ``agent_adapters.yaml`` is read as well: ``adapters.<name>``
is ``frameworks.<name>`` (``default_limits`` → ``limits``, ``safety.tool_allowlist`` →
``safety.allowed_tools``, ``conversation_limits.max_rounds`` → ``limits.max_model_calls``,
``human_in_loop: true`` is what backstay always does), and ``monitoring`` is ``observe``
(``tracing_enabled`` → ``otel.enabled``, ``metrics_port``, ``log_level``).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any, Final

from backstay.config._document import Document
from backstay.config._paths import Path

AGENT_CONFIG_FILE: Final = pathlib.Path("agent") / "config.yml"
# The adapter reliability contract's file: only its ``adapter:`` section is backstay's.
CONTRACT_DEFAULTS_FILE: Final = pathlib.Path("config") / "defaults.yaml"


def _ms(value: Any) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return value / 1000.0 if ok else value


def _percent(value: Any) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return value / 100.0 if ok else value


def _backoff(value: Any) -> Any:
    return "constant" if value == "fixed" else value


def _same(value: Any) -> Any:
    return value


Rename = tuple[str, Callable[[Any], Any]]

_RETRY_KEYS: Final[dict[str, Rename]] = {
    "defaultPolicy": ("default_policy", _same),
    "operationPolicies": ("operation_policies", _same),
    "circuitBreaker": ("circuit_breaker", _same),
}
_POLICY_KEYS: Final[dict[str, Rename]] = {
    "maxAttempts": ("max_attempts", _same),
    "backoff": ("backoff", _backoff),
    "initialDelayMs": ("initial_delay_s", _ms),
    "maxDelayMs": ("max_delay_s", _ms),
    "factor": ("multiplier", _same),
    "jitterPercent": ("jitter", _percent),
    "escalateOnExhaustion": ("escalate_on_exhaustion", _same),
}
_BREAKER_KEYS: Final[dict[str, Rename]] = {
    "failureThreshold": ("failure_threshold", _same),
    "openDurationMs": ("open_duration_s", _ms),
    "halfOpenProbes": ("half_open_max_probes", _same),
}


def is_contract_defaults(file: pathlib.Path) -> bool:
    """Whether ``file`` is the adapter reliability contract's ``config/defaults.yaml``."""
    name, parent = CONTRACT_DEFAULTS_FILE.name, CONTRACT_DEFAULTS_FILE.parent.name
    return file.name == name and file.parent.name == parent


def is_agent_config(file: pathlib.Path) -> bool:
    """Whether ``file`` is an agent's ``agent/config.yml``."""
    return file.name == AGENT_CONFIG_FILE.name and file.parent.name == AGENT_CONFIG_FILE.parent.name


def _move_sources(doc: Document, old: Path, new: Path) -> None:
    for key in [k for k in doc.sources if k[: len(old)] == old]:
        doc.sources[new + key[len(old) :]] = doc.sources.pop(key)


def _rename(
    doc: Document, path: Path, body: dict[str, Any], table: dict[str, Rename], newer: bool
) -> None:
    for key in [k for k in body if k in table]:
        new, convert = table[key]
        if new != key and new in body and not newer:
            doc.problem((*path, key), f"is {new} under another name: give only one of them")
            continue
        value = body.pop(key)
        body[new] = convert(value)
        _move_sources(doc, (*path, key), (*path, new))


def _breaker(doc: Document, path: Path, body: dict[str, Any], newer: bool) -> None:
    _rename(doc, path, body, _BREAKER_KEYS, newer)


# The contract's error types → failure kinds (its "network" also stands for server errors).
_TYPE_KINDS: Final[dict[str, tuple[str, ...]]] = {"network": ("network", "server_error")}
ADAPTER_POLICY: Final = "adapter"


def _kinds(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [kind for item in value for kind in _TYPE_KINDS.get(str(item), (item,))]


def _retries(value: Any) -> Any:
    """Retries after the first attempt → attempts in all (a bad value is left to the check)."""
    return value + 1 if type(value) is int and value >= 0 else value


_ADAPTER_KEYS: Final[dict[str, Rename]] = {
    "max_retries": ("max_attempts", _retries),
    "initial_backoff_seconds": ("initial_delay_s", _same),
    "backoff_multiplier": ("multiplier", _same),
    "max_backoff_seconds": ("max_delay_s", _same),
    "retry_on": ("retry_on", _kinds),
    "no_retry_on": ("never_retry_on", _kinds),
}


def _adapter_section(doc: Document) -> None:
    """The adapter reliability contract's ``adapter:`` section as the ``adapter`` policy."""
    body = doc.data.pop("adapter")
    if not isinstance(body, dict):
        doc.problem(("adapter",), f"must be a mapping of retry settings, got {body!r}")
        return
    retry = doc.data.setdefault("retry", {})
    if not isinstance(retry, dict):
        return  # the retry section's own check reports it
    policies = retry.setdefault("policies", {})
    if not isinstance(policies, dict) or ADAPTER_POLICY in policies:
        doc.problem(("adapter",), f"retry.policies.{ADAPTER_POLICY} is already defined")
        return
    policy: dict[str, Any] = {"extends": "agent_dispatch"}
    target: Path = ("retry", "policies", ADAPTER_POLICY)
    for key, value in body.items():
        if key not in _ADAPTER_KEYS:
            known = ", ".join(_ADAPTER_KEYS)
            doc.problem(("adapter", key), f"unknown key; known: {known}")
            continue
        new, convert = _ADAPTER_KEYS[key]
        policy[new] = convert(value)
        _move_sources(doc, ("adapter", key), (*target, new))
    retried = policy.get("retry_on")
    never = policy.get("never_retry_on") or []
    if isinstance(retried, list) and "unknown" not in retried and "unknown" not in never:
        # The contract's table retries an unknown error once whatever retry_on lists (its
        # backoff types): agent_dispatch's per-kind limit gives it that one retry.
        policy["retry_on"] = [*retried, "unknown"]
    policies[ADAPTER_POLICY] = policy
    ops = retry.setdefault("operation_policies", {})
    if isinstance(ops, dict):
        ops.setdefault("agent", ADAPTER_POLICY)


# The agent adapter interface's agent_adapters.yaml: ``adapters:`` and ``monitoring:``.
_MONITORING_KEYS: Final[dict[str, Path]] = {
    "tracing_enabled": ("observe", "otel", "enabled"),
    "metrics_port": ("observe", "metrics_port"),
    "log_level": ("observe", "log_level"),
}


def _put(doc: Document, target: Path, value: Any, old: Path) -> None:
    node = doc.data
    for key in target[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            doc.problem(old, f"{'.'.join(target)} is already given otherwise")
            return
        node = child
    if target[-1] in node:
        doc.problem(old, f"is {'.'.join(target)} under another name: give only one of them")
        return
    node[target[-1]] = value
    _move_sources(doc, old, target)


def _monitoring(doc: Document) -> None:
    body = doc.data.pop("monitoring")
    if not isinstance(body, dict):
        doc.problem(("monitoring",), f"must be a mapping of monitoring settings, got {body!r}")
        return
    for key, value in body.items():
        target = _MONITORING_KEYS.get(key)
        if target is None:
            doc.problem(("monitoring", key), f"unknown key; known: {', '.join(_MONITORING_KEYS)}")
            continue
        _put(doc, target, value, ("monitoring", key))


def _one_adapter(doc: Document, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """One ``adapters.<name>`` section as ``frameworks.<name>``."""
    old: Path = ("adapters", name)
    new: Path = ("frameworks", name)
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key == "default_limits":
            given = out.get("limits")
            out["limits"] = {**given, **value} if isinstance(value, dict) and given else value
            _move_sources(doc, (*old, key), (*new, "limits"))
        elif key == "safety" and isinstance(value, dict):
            safety = dict(value)
            if "tool_allowlist" in safety:
                safety["allowed_tools"] = safety.pop("tool_allowlist")
                _move_sources(doc, (*old, key, "tool_allowlist"), (*new, "safety", "allowed_tools"))
            out["safety"] = safety
            _move_sources(doc, (*old, key), (*new, key))
        elif key == "human_in_loop":
            if value is not True:
                doc.problem(
                    (*old, key),
                    "backstay always hands a framework's own requests for a human to an "
                    "approval (a paused run); it cannot be turned off: give true or leave it out",
                )
        elif key == "conversation_limits" and isinstance(value, dict):
            for sub, limit in value.items():
                if sub != "max_rounds":
                    doc.problem((*old, key, sub), "unknown key; known: max_rounds")
                    continue
                limits = out.setdefault("limits", {})
                if isinstance(limits, dict):
                    limits["max_model_calls"] = limit  # a round is one agent turn
                _move_sources(doc, (*old, key, sub), (*new, "limits", "max_model_calls"))
        else:
            out[key] = value
            _move_sources(doc, (*old, key), (*new, key))
    return out


def _adapters(doc: Document) -> None:
    """The agent adapter interface's ``adapters:`` as backstay's ``frameworks:``."""
    body = doc.data.pop("adapters")
    if "frameworks" in doc.data:
        doc.problem(("adapters",), "is frameworks under another name: give only one of them")
        return
    if not isinstance(body, dict):
        doc.problem(("adapters",), f"must be a mapping of framework name → settings, got {body!r}")
        return
    frameworks: dict[str, Any] = {}
    for name, section in body.items():
        frameworks[name] = (
            _one_adapter(doc, str(name), section) if isinstance(section, dict) else section
        )
        _move_sources(doc, ("adapters", name), ("frameworks", name))
    doc.data["frameworks"] = frameworks


def translate(
    doc: Document, *, agent_file: bool, newer: bool = False, defaults_file: bool = False
) -> None:
    """Rewrite the framework's ``retry:`` keys in ``doc`` as backstay's (see the table).

    With ``newer`` (the pass after ``--set`` and variables) a framework key replaces the
    backstay key it names; otherwise giving both is a problem."""
    if agent_file:
        doc.data = {k: v for k, v in doc.data.items() if k == "retry"}
    if defaults_file:
        doc.data = {k: v for k, v in doc.data.items() if k == "adapter"}
    if "adapters" in doc.data and not newer:
        _adapters(doc)
    if "monitoring" in doc.data and not newer:
        _monitoring(doc)
    if "adapter" in doc.data:
        _adapter_section(doc)
    retry = doc.data.get("retry")
    if not isinstance(retry, dict):
        return
    _rename(doc, ("retry",), retry, _RETRY_KEYS, newer)
    policies = retry.get("policies")
    if isinstance(policies, dict):
        for name, body in policies.items():
            if isinstance(body, dict):
                _rename(doc, ("retry", "policies", name), body, _POLICY_KEYS, newer)
    breaker = retry.get("circuit_breaker")
    if isinstance(breaker, dict):
        _breaker(doc, ("retry", "circuit_breaker"), breaker, newer)
