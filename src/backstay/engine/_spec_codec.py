"""A ``TaskSpec`` as the JSON the state file keeps, and back — without its secrets.

The state file must never hold a credential. An environment variable whose name looks
secret (``key``, ``token``, ``secret``, ``passw``, ``credential``, ``auth``: the rule the
adapters apply before redacting a child's environment), or whose value ``redact`` would
change, is stored by name only; reading the
spec back takes its value from ``secrets`` (the resuming caller's environment); the
engine refuses to resume a task whose secrets are missing (``missing_secret``: a
``ConfigError`` naming the variables and the task) before anything runs.
The provider variables a task inherits are not in its spec at all: only
``inherit_env`` is kept, and the engine reads them again when the task runs. A spec
written before ``inherit_env`` existed inherits nothing, as then.
The adapter's ``config`` is stored as given (read-only mappings and tuples as JSON objects
and lists): it must be JSON data.

The prompt is stored as ``redact_personal`` leaves it (credentials, e-mail addresses, card
numbers, IBANs, phone numbers replaced). When that changes it, ``prompt_sha256`` keeps the
digest of the clear prompt, and the spec read back carries it: the engine reads the clear
prompt again from its source and checks it against the digest before the task runs. A
prompt redaction leaves alone is stored exactly as before; ``keep_prompt`` (the user's
``storage: {prompts: clear}``) stores it as given.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from backstay._secret_values import SECRET_ENV_NAME
from backstay.adapters.contract import TierConfig
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError
from backstay.fallback.candidate import Candidate
from backstay.policy.retry import RetryPolicy
from backstay.policy.spend import SpendBudget
from backstay.redact import redact, redact_personal

__all__ = [
    "decode_spec",
    "encode_spec",
    "missing_secret",
    "prompt_at_rest",
    "prompt_digest",
    "secret_env_names",
]

_FORMAT: Final = 1


def secret_env_names(env: Mapping[str, str]) -> tuple[str, ...]:
    """The names in ``env`` whose values are never written to the state file: a name
    that looks secret, or a value redaction would change (a key, a URL with a password)."""
    return tuple(
        sorted(
            name
            for name, value in env.items()
            if SECRET_ENV_NAME.search(name) or redact(value) != value
        )
    )


def prompt_digest(prompt: str) -> str:
    """``"sha256:<hex>"`` of ``prompt`` (UTF-8): how a stored spec names its clear prompt."""
    return "sha256:" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def prompt_at_rest(spec: TaskSpec) -> tuple[str | None, str | None]:
    """The prompt the state keeps for ``spec``, and the digest of the clear one when the
    two differ (``None`` when the prompt is kept as given)."""
    prompt = spec.prompt
    if prompt is None or spec.keep_prompt:
        return prompt, None
    if spec.prompt_sha256 is not None:  # read back already redacted: kept as it is
        return prompt, spec.prompt_sha256
    redacted = redact_personal(prompt)
    return (prompt, None) if redacted == prompt else (redacted, prompt_digest(prompt))


# A batch's tasks share a few policy and tier objects (frozen): each one's data is made
# once, keyed by the object, which the entry holds (so its id is never another's); the
# oldest entry goes first. The data is only read (by ``json.dumps``).
_POLICY_DATA: dict[int, tuple[Any, dict[str, Any]]] = {}
_TIER_DATA: dict[int, tuple[Any, dict[str, Any]]] = {}
_DATA_KEPT: Final = 256


def _plain(value: Any) -> Any:
    """Read-only data (mapping proxies, tuples) as JSON's mappings and lists."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _tier(tier: TierConfig | None) -> dict[str, Any] | None:
    if tier is None:
        return None
    found = _TIER_DATA.get(id(tier))
    if found is not None and found[0] is tier:
        return found[1]
    data = dataclasses.asdict(tier)
    if tier.allowed_tools is not None:
        data["allowed_tools"] = list(tier.allowed_tools)
    _keep(_TIER_DATA, tier, data)
    return data


def _keep(cache: dict[int, tuple[Any, dict[str, Any]]], value: Any, data: dict[str, Any]) -> None:
    if len(cache) >= _DATA_KEPT:
        cache.pop(next(iter(cache)), None)
    cache[id(value)] = (value, data)


def _policy_data(policy: RetryPolicy) -> dict[str, Any]:
    """``policy.to_dict()``, made once per policy object (only read by ``json.dumps``)."""
    found = _POLICY_DATA.get(id(policy))
    if found is not None and found[0] is policy:
        return found[1]
    data = policy.to_dict()
    _keep(_POLICY_DATA, policy, data)
    return data


def encode_spec(spec: TaskSpec) -> str:
    """The JSON text kept for ``spec``; ``ConfigError`` when its config is not JSON data."""
    secret = set(secret_env_names(spec.env))
    prompt, digest = prompt_at_rest(spec)
    policy: str | dict[str, Any] | None
    policy = _policy_data(spec.policy) if isinstance(spec.policy, RetryPolicy) else spec.policy
    data = {
        "format": _FORMAT,
        "workflow_id": spec.workflow_id,
        "task_id": spec.task_id,
        "run": spec.run,
        "adapter": spec.adapter,
        "model": spec.model,
        "workspace": str(spec.workspace),
        "timeout_s": spec.timeout_s,
        "prompt": prompt,
        "prompt_file": None if spec.prompt_file is None else str(spec.prompt_file),
        "env": {k: v for k, v in spec.env.items() if k not in secret},
        "secret_env": sorted(secret),
        "tier": _tier(spec.tier),
        "config": _plain(spec.config),
        "stall_timeout_s": spec.stall_timeout_s,
        "policy": policy,
        "budget": None if spec.budget is None else spec.budget.to_dict(),
        "tenant": spec.tenant,
        "inherit_env": spec.inherit_env,
    }
    # Only when set, so a spec without them is stored exactly as before.
    if digest is not None:
        data["prompt_sha256"] = digest
    if spec.keep_prompt:
        data["keep_prompt"] = True
    if spec.fallbacks:
        data["fallbacks"] = [c.to_dict() for c in spec.fallbacks]
    if spec.context_window is not None:
        data["context_window"] = spec.context_window
    if spec.limits:
        data["limits"] = dict(spec.limits)
    try:
        return json.dumps(data, allow_nan=False, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"must be JSON data to be kept in the state file: {exc}",
            where=f"task {spec.task_id!r}: config",
        ) from None


@functools.lru_cache(maxsize=256)
def _policy_from_text(text: str) -> RetryPolicy:
    """The policy of a spec's stored ``policy`` object, given as canonical JSON: built
    once per distinct policy (a batch's tasks share a few), as ``RetryPolicy`` is frozen."""
    return RetryPolicy.from_dict(json.loads(text))


def _decoded_policy(policy: Any) -> Any:
    """A stored ``policy`` read back: a name or ``None`` as it is, an object as its
    ``RetryPolicy`` (the same one for every spec that stores the same object)."""
    if not isinstance(policy, dict):
        return policy
    return _policy_from_text(json.dumps(policy, sort_keys=True, allow_nan=False))


def missing_secret(task_id: str, names: tuple[str, ...]) -> ConfigError:
    """The error for a task whose secret variables are not available to resume it."""
    return ConfigError(
        f"task {task_id!r} needs {', '.join(names)}, whose value is never kept in the "
        "state file: set it in the environment (or pass it in env=) to resume the task",
        where=f"env.{names[0]}",
    )


def decode_spec(text: str, *, secrets: Mapping[str, str]) -> tuple[TaskSpec, tuple[str, ...]]:
    """The spec ``encode_spec`` wrote, its secret variables taken from ``secrets``, and
    the names of those ``secrets`` lacks (left out of the spec's ``env``)."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ConfigError("a task spec in the state file has an unknown format", where="spec")
    env = dict(data["env"])
    missing = tuple(name for name in data["secret_env"] if name not in secrets)
    env.update({name: secrets[name] for name in data["secret_env"] if name in secrets})
    tier = None if data["tier"] is None else TierConfig(**data["tier"])
    policy = _decoded_policy(data["policy"])
    budget = data.get("budget")  # absent from specs stored before budgets existed
    spec = TaskSpec(
        workflow_id=data["workflow_id"],
        task_id=data["task_id"],
        run=data["run"],
        adapter=data["adapter"],
        model=data["model"],
        workspace=Path(data["workspace"]),
        timeout_s=data["timeout_s"],
        prompt=data["prompt"],
        prompt_file=None if data["prompt_file"] is None else Path(data["prompt_file"]),
        env=env,
        tier=tier,
        config=data["config"],
        stall_timeout_s=data["stall_timeout_s"],
        policy=policy,
        budget=None if budget is None else SpendBudget.from_dict(budget),
        tenant=data.get("tenant"),
        fallbacks=tuple(
            Candidate.from_dict(c, where="fallbacks") for c in data.get("fallbacks", ())
        ),
        context_window=data.get("context_window"),
        limits=data.get("limits", {}),
        inherit_env=data.get("inherit_env", False),
        keep_prompt=data.get("keep_prompt", False),
        prompt_sha256=data.get("prompt_sha256"),
    )
    return spec, missing
