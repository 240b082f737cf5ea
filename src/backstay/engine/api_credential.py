"""``api_credential``: the API key an API task's attempt will send, read as its adapter
reads it (``api_key_env`` of its settings, else its provider's credential variables, in
the task's environment), so that the engine paces the attempt at that key's limit
(``backstay.engine.pacing``). Only the key's fingerprint is ever named from it."""

from __future__ import annotations

from backstay.adapters.contract import Adapter
from backstay.engine.task import TaskSpec
from backstay.errors import ConfigError

__all__ = ["api_credential"]


def api_credential(spec: TaskSpec, adapter: Adapter) -> str | None:
    """The key an attempt of ``spec`` on ``adapter`` sends, or ``None`` when ``adapter``
    is no API adapter (it has no API ``settings``) or no variable holds a key (the
    attempt fails on that itself)."""
    read = getattr(adapter, "settings", None)
    declared = getattr(adapter, "provider_env", None)
    credentials = getattr(declared, "credentials", None)
    if not callable(read) or not isinstance(credentials, tuple):
        return None
    from backstay.adapters.api.settings import ApiSettings, resolve_api_key  # noqa: PLC0415

    try:
        settings = read(spec.config)
    except ConfigError:
        return None
    if not isinstance(settings, ApiSettings):
        return None
    key, _ = resolve_api_key(settings, spec.env, credentials)
    return key
