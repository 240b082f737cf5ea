"""Which provider a run of an agent CLI sends its requests to, as the adapter knows it, and
the model a run falls back to at the gateway (``backstay.adapters.gateway_wiring``, which
re-exports these).

``provider_of`` (``backstay.policy.limit_keys``) reads the provider from the adapter's name
and the model's ``provider/`` prefix. A CLI that picks its wiring by the model's name
(Aider: a bare name litellm places, ``claude-…``, or one of Aider's aliases, ``sonnet``)
knows more: ``wired_provider`` reads it from the adapter's ``gateway_wiring``, without a
second copy of the CLI's table. An alias names no model its provider knows, so it is never
a fallback model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from backstay.errors import ConfigError
from backstay.policy.limit_keys import provider_of

if TYPE_CHECKING:
    from backstay.adapters.gateway_wiring import GatewayWiring

__all__ = ["ChainEntry", "gateway_fallback", "wired_provider"]


class ChainEntry(Protocol):
    """What ``gateway_fallback`` reads of a fallback candidate
    (``backstay.fallback.Candidate``)."""

    @property
    def adapter(self) -> str | None: ...
    @property
    def model(self) -> str: ...
    @property
    def api_key_env(self) -> str | None: ...


def wired_provider(wiring: GatewayWiring | None, model: str) -> tuple[str, str] | None:
    """The ``(provider, model)`` an attempt on ``model`` sends its requests to, as the
    ``wiring`` of a CLI that picks its wiring by the model's name knows it (Aider's: a
    ``provider/`` prefix, a bare name litellm places, an alias): the provider of the
    wiring that takes ``model``, and the model as its provider knows it — the ``provider/``
    prefix dropped; ``""`` for an exact name of ``model_names`` (an alias the CLI itself
    turns into a model). ``None`` when ``wiring`` does not pick by model (its CLI speaks to
    one provider: ``provider_of`` knows it by the adapter's name) or none of its wirings
    takes ``model`` (it goes straight to a provider the gateway does not stand in for)."""
    if wiring is None:
        return None
    picking = [
        one for one in (wiring, *wiring.alternatives) if one.model_prefixes or one.model_names
    ]
    for one in picking:  # in the order ``gateway_wiring._chosen`` tries them
        if model.startswith(one.model_prefixes):
            head, slash, rest = model.partition("/")
            return one.provider, rest if slash and head == one.provider else model
        if model in one.model_names:
            return one.provider, ""
    return None


def _adapter_wiring(adapter: str) -> GatewayWiring | None:
    """The gateway wiring of the adapter registered as ``adapter`` (``None``: none, or no
    such adapter)."""
    from backstay.adapters.gateway_wiring import GatewayWiring  # noqa: PLC0415 - it imports this
    from backstay.adapters.registry import adapter_class  # noqa: PLC0415 - it imports the adapters

    try:
        wiring = getattr(adapter_class(adapter), "gateway_wiring", None)
    except ConfigError:
        return None
    return wiring if isinstance(wiring, GatewayWiring) else None


def _run_provider(entry: ChainEntry) -> tuple[str, str]:
    """The ``(provider, model)`` of a run of ``entry``: ``provider_of``'s, else what its
    adapter's wiring knows of its model (``wired_provider``: an Aider alias's model ``""``);
    ``("", model)`` when neither knows."""
    provider, model = provider_of(entry.adapter or "", entry.model)
    if provider or not entry.adapter:
        return provider, model
    return wired_provider(_adapter_wiring(entry.adapter), entry.model) or ("", entry.model)


def gateway_fallback(candidates: Sequence[ChainEntry], index: int) -> str | None:
    """The model a run of ``candidates[index]`` falls back to at the gateway: that of the
    first later candidate whose requests go to the same provider with the same key (its
    ``api_key_env``) and another model (a ``provider/`` prefix dropped), else ``None``.
    A provider is read from the adapter's name and the model's prefix, else from the
    adapter's gateway wiring (``wired_provider``: Aider's bare names and aliases); a later
    candidate named by an alias is passed over (the provider would not know the name)."""
    if not 0 <= index < len(candidates):
        return None
    current = candidates[index]
    provider, model = _run_provider(current)
    if not provider:
        return None
    for later in candidates[index + 1 :]:
        if later.api_key_env != current.api_key_env:
            continue
        found, bare = _run_provider(later)
        if found == provider and bare and bare != model:
            return bare
    return None
