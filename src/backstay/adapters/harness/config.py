"""``split_harness_config``: the evaluation harness interface's merged ``config`` dictionary,
split into what the harness says about the run and the adapter's own settings.

A harness written to that interface passes one dictionary to ``run()``: the tier's keys
(``tier_id``, ``tier_name``, ``tier_prompt`` or backstay's ``system_prompt``,
``tools_enabled``, ``delegation_enabled``, ``allowed_tools``), ``test_id``,
``task_description`` and ``api_keys`` (environment variable → key), beside the adapter's
own settings. A tier the evaluation harness interface's table covers (T0, T1, T2, T3 and
up) takes its ``tools_enabled`` and ``delegation_enabled`` from the table when the
dictionary leaves them out (``backstay.adapters.tiers``). A key the adapter itself
declares (``config_keys``) stays the adapter's; the rest of these are taken out here, so
that ``AgentRequest.config`` (which is logged and checked) never holds a key. A problem
names the key, never an ``api_keys`` value.

``BaseAdapter.validate_config`` accepts such a dictionary as well (it checks these keys as
``run()`` does). Everywhere else a configuration holds the adapter's settings only — an
engine task, a suite, ``backstay run``, ``dispatch`` — and ``refuse_harness_keys`` refuses
these keys there, so that an ``api_keys`` mapping is never recorded or logged.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

from backstay.adapters.contract import Adapter, TierConfig
from backstay.adapters.tiers import preset_flags
from backstay.errors import ConfigError

__all__ = [
    "HARNESS_KEYS",
    "HarnessConfig",
    "check_settings",
    "refuse_harness_keys",
    "split_harness_config",
]

# The merged config's tier keys → ``TierConfig`` fields.
_TIER_FIELD_OF: Final = {
    "tier_id": "tier_id",
    "tier_name": "tier_name",
    "system_prompt": "system_prompt",
    "tier_prompt": "system_prompt",
    "tools_enabled": "tools_enabled",
    "delegation_enabled": "delegation_enabled",
    "allowed_tools": "allowed_tools",
}
HARNESS_KEYS: Final = frozenset({*_TIER_FIELD_OF, "test_id", "task_description", "api_keys"})
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HarnessConfig:
    """The merged config, split: ``settings`` for the adapter, the rest for the run."""

    settings: Mapping[str, Any]
    tier: TierConfig | None = None
    test_id: str | None = None
    task_description: str | None = None
    api_keys: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)


def _text(value: object, *, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"must be a non-empty string, got {type(value).__name__}", where=where)
    return value


def _api_keys(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"must map environment variable names to keys, got {type(value).__name__}",
            where="config.api_keys",
        )
    keys: dict[str, str] = {}
    for name, key in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ConfigError(
                "must map environment variable names to keys; one name is not a variable name",
                where="config.api_keys",
            )
        if not isinstance(key, str) or not key or "\x00" in key:
            # The value is a secret: the message names its variable and never shows it.
            raise ConfigError("must be a non-empty string", where=f"config.api_keys.{name}")
        keys[name] = key
    return keys


def _tier(values: Mapping[str, Any], given: TierConfig | None) -> TierConfig | None:
    fields: dict[str, Any] = {}
    for key, field in _TIER_FIELD_OF.items():
        if key in values:
            if field in fields:
                raise ConfigError(
                    "gives the tier prompt twice (system_prompt and tier_prompt)",
                    where=f"config.{key}",
                )
            fields[field] = values[key]
    if not fields:
        return given
    if given is not None:
        raise ConfigError(
            "tier keys in config and a tier argument together: give one", where="config.tier_id"
        )
    if "tier_id" not in fields:
        raise ConfigError("is required with the other tier keys", where="config.tier_id")
    tier_id = fields["tier_id"]
    if isinstance(tier_id, str):  # a preset tier's flags, where the config leaves them out
        fields = preset_flags(tier_id) | fields
    return TierConfig(**fields)


def split_harness_config(
    config: object, *, adapter_keys: frozenset[str], tier: TierConfig | None
) -> HarnessConfig:
    """``config`` split; ``tier`` is the run's ``tier`` argument (refused beside tier keys
    in ``config``)."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"must be a mapping, got {type(config).__name__}", where="config")
    taken = {key: value for key, value in config.items() if key in HARNESS_KEYS - adapter_keys}
    settings = {key: value for key, value in config.items() if key not in taken}
    return HarnessConfig(
        settings=settings,
        tier=_tier(taken, tier),
        test_id=_text(taken.get("test_id"), where="config.test_id"),
        task_description=_text(taken.get("task_description"), where="config.task_description"),
        api_keys=_api_keys(taken.get("api_keys")),
    )


# Where a task, a suite or ``backstay run`` gives what the merged config's keys carry.
_INSTEAD: Final = {
    "api_keys": "its environment (env)",
    "test_id": "its task id",
    "task_description": "its prompt",
}


def refuse_harness_keys(config: object, *, adapter: object) -> None:
    """``ConfigError`` at the first merged-config key in ``config`` that ``adapter`` does
    not declare as its own setting (``config_keys``); nothing for an adapter that does not
    declare its settings, whose ``validate_config`` alone decides."""
    declared = getattr(adapter, "config_keys", None)
    if not isinstance(declared, frozenset | set) or not isinstance(config, Mapping):
        return
    for key in sorted(HARNESS_KEYS - declared):
        if key in config:
            instead = _INSTEAD.get(key, "its tier")
            raise ConfigError(
                "is a key of the merged config run() takes (the evaluation harness "
                f"interface), not a setting of adapter {getattr(adapter, 'name', '?')!r}: "
                f"a task gives it as {instead}",
                where=f"config.{key}",
            )


def check_settings(config: Mapping[str, Any], *, adapter: Adapter) -> None:
    """The settings of an engine task, a suite entry, a run or a dispatched attempt:
    ``ConfigError`` at a merged-config key (``refuse_harness_keys``), then the adapter's own
    ``validate_config``."""
    refuse_harness_keys(config, adapter=adapter)
    adapter.validate_config(config)
