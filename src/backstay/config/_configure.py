"""``configure()``: load the configuration once and make the library use it."""

from __future__ import annotations

import os
from collections.abc import Iterable

from backstay.config._load import load_config
from backstay.config._model import BackstayConfig
from backstay.policy.registry import use_registry


def configure(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Iterable[str] = (),
    strict: bool = True,
) -> BackstayConfig:
    """Load ``backstay.yaml`` (or ``path``, or ``$BACKSTAY_CONFIG``) with its overrides, and
    resolve policy names and operation types in it from now on. Returns the config, whose
    ``breaker_settings()``, ``budget_settings()`` and ``rate_limiters()`` build the rest."""
    config = load_config(path, overrides=overrides, strict=strict)
    use_registry(config.registry)
    return config
