"""``configure()``: load the configuration once and make the library use it."""

from __future__ import annotations

import os
from collections.abc import Iterable

from backstay.config._load import load_config
from backstay.config._model import BackstayConfig
from backstay.policy.registry import use_breakers, use_registry


def configure(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Iterable[str] = (),
    strict: bool = True,
) -> BackstayConfig:
    """Load ``backstay.yaml`` (or ``path``, or ``$BACKSTAY_CONFIG``) with its overrides, and
    resolve policy names and operation types in it from now on. A ``circuit_breaker``
    section given (and enabled) puts every ``call`` / ``acall`` / ``@retry`` / ``attempts``
    with an ``operation`` and no ``breaker`` under one breaker per operation type, built from
    it. Returns the config, whose ``breaker_settings()``, ``budget_settings()`` and
    ``rate_limiters()`` build the rest."""
    config = load_config(path, overrides=overrides, strict=strict)
    use_registry(config.registry)
    settings = config.engine_breaker() if config.circuit_breaker else None
    if settings is None:
        use_breakers(None)
    else:
        from backstay.breaker.registry import BreakerRegistry  # noqa: PLC0415 - on use only

        use_breakers(BreakerRegistry(settings=settings).breaker_for)
    return config
