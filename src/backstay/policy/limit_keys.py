"""Rate limits belong to the provider account: the key of a limit names a provider.

A provider enforces its limits per account (and per model), whoever sends the requests: an
API task, an agent CLI session and the gateway spend one limit. So every limiter is named
``provider`` or ``provider/model`` (``anthropic``, ``anthropic/claude-sonnet-4-6``), and
every caller of one provider finds the same limiter:

* an API adapter by the provider it calls (``anthropic-api`` → ``anthropic``);
* an agent CLI by the provider its requests go to (``claude-code`` → ``anthropic``,
  ``codex`` → ``openai``, ``gemini-cli`` → ``gemini``); one that can talk to any provider
  (``aider``, ``opencode``) by its model's ``provider/`` prefix (``anthropic/claude-…``),
  else by what its adapter knows of the model's name, passed as ``provider`` (Aider's
  bare names and aliases, ``claude-…``, ``sonnet``: the provider its gateway wiring picks,
  ``backstay.adapters.gateway_wiring.wired_provider``; policy code does not read adapters);
* the gateway by the provider of the request's route.

A limit keyed by an adapter's name (``claude-code``, ``claude-code/<model>``), as older
configurations have it, still works: ``provider_limits`` reads it as its provider's key. An
explicit provider key wins over it. An adapter backstay does not know (a test's scripted
one) keeps its own name.

A limit can also belong to one API key: ``anthropic#<fingerprint>`` or
``anthropic/claude-sonnet-4-6#<fingerprint>``, the fingerprint the first 12 hex digits of
the key's SHA-256 (``key_fingerprint``; the key itself is never written anywhere). One
rule (``key_limit``) says which calls take it, for the engine and the gateway alike: a call
with that key on that provider (and, for ``provider/model#fp``, that model) is paced at the
limiter ``anthropic#<fingerprint>`` (``credential_limits`` names the registry's entries
``anthropic#<fingerprint>`` and ``anthropic#<fingerprint>/<model>``), every other call at
its provider's. The engine's API tasks (the key the adapter would send), the gateway's
requests (a run's real key, else the client's own) and so an API task and a CLI session
with one key on one store share one limiter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping
from typing import Final, TypeVar

from backstay.errors import ConfigError

__all__ = [
    "ADAPTER_PROVIDERS",
    "KEY_MARK",
    "PROVIDERS",
    "adapter_keys",
    "credential_limits",
    "key_fingerprint",
    "key_limit",
    "limit_key",
    "provider_limits",
    "provider_of",
]

# The providers backstay classifies and the gateway routes.
PROVIDERS: Final = frozenset({"anthropic", "openai", "gemini"})
# Adapters whose requests go to one provider, by adapter name.
ADAPTER_PROVIDERS: Final[Mapping[str, str]] = {
    "anthropic-api": "anthropic",
    "openai-api": "openai",
    "gemini-api": "gemini",
    "claude-code": "anthropic",
    "codex": "openai",
    "gemini-cli": "gemini",
}
# Model prefixes that name a provider (``gemini/…`` and ``google/…`` alike).
_PREFIXES: Final[Mapping[str, str]] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "gemini": "gemini",
    "google": "gemini",
}

V = TypeVar("V")

# What separates a limit's provider (and model) from the fingerprint of its API key.
KEY_MARK: Final = "#"
_FINGERPRINT: Final = re.compile(r"[0-9a-f]{12}")


def key_fingerprint(secret: str) -> str:
    """A short, one-way name for an API key (the first 12 hex digits of its SHA-256): a
    limit per key without the key written anywhere."""
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


def credential_limits(limits: Mapping[str, V]) -> dict[str, V]:
    """``limits`` with every key of an API key's limit, ``provider#fp`` or
    ``provider/model#fp``, renamed ``provider#fp`` and ``provider#fp/model``: the names a
    limiter registry finds them under for provider ``provider#fp`` (its most specific
    entry first). Other keys are kept; ``ConfigError`` names one whose fingerprint is not
    12 lowercase hex digits."""
    out: dict[str, V] = {}
    for key, value in limits.items():
        head, mark, fingerprint = key.rpartition(KEY_MARK)
        if not mark:
            out[key] = value
            continue
        if not _FINGERPRINT.fullmatch(fingerprint) or not head:
            raise ConfigError(
                f"{key!r}: a key's limit is provider#FINGERPRINT or provider/model#FINGERPRINT, "
                "the fingerprint 12 lowercase hex digits (backstay gateway --fingerprint-env)",
                where="retry.rate_limits",
            )
        provider, slash, model = head.partition("/")
        out[f"{provider}{KEY_MARK}{fingerprint}{slash}{model}"] = value
    return out


def key_limit(
    keys: Collection[str], *, provider: str, model: str | None, credential: str | None
) -> str | None:
    """The name of the limiter (``provider#fp``) that paces a call to ``provider`` on
    ``model`` sent with the API key ``credential``, when ``keys`` (read by
    ``credential_limits``) hold a limit of that key for that model or the whole provider;
    ``None`` otherwise (the call takes its provider's limiter)."""
    if not credential or not provider or not any(KEY_MARK in key for key in keys):
        return None
    keyed = f"{provider}{KEY_MARK}{key_fingerprint(credential)}"
    if keyed in keys or (model and f"{keyed}/{model}" in keys):
        return keyed
    return None


def provider_of(adapter: str, model: str = "", *, provider: str = "") -> tuple[str, str]:
    """The ``(provider, model)`` an attempt of ``adapter`` on ``model`` spends the limit
    of; ``provider``: what the adapter itself says (an API adapter's ``provider``).
    ``("", model)`` when no provider is known. A model's ``provider/`` prefix is dropped
    where it named the provider."""
    found = provider or ADAPTER_PROVIDERS.get(adapter, "")
    head, slash, rest = model.partition("/")
    prefixed = _PREFIXES.get(head) if slash and rest else None
    if prefixed is not None and (not found or found == prefixed):
        return prefixed, rest
    return found, model


def _adapter_key(key: str) -> str | None:
    """The provider key an adapter-named ``key`` stands for, or ``None``."""
    name, slash, model = key.partition("/")
    provider = ADAPTER_PROVIDERS.get(name)
    if provider is None:
        return None
    return f"{provider}/{model}" if slash else provider


def provider_limits(limits: Mapping[str, V]) -> dict[str, V]:
    """``limits`` with every adapter-named key read as its provider's (``claude-code`` →
    ``anthropic``, ``codex/gpt-5`` → ``openai/gpt-5``). A provider key given as such wins;
    of two adapter keys for one provider key, the first given wins."""
    out: dict[str, V] = {k: v for k, v in limits.items() if _adapter_key(k) is None}
    for key, value in limits.items():
        mapped = _adapter_key(key)
        if mapped is not None and mapped not in out:
            out[mapped] = value
    return out


def adapter_keys(limits: Collection[str]) -> list[str]:
    """The keys of ``limits`` that name an adapter rather than a provider (deprecated)."""
    return [key for key in limits if _adapter_key(key) is not None]


def limit_key(
    keys: Collection[str],
    *,
    adapter: str,
    provider: str,
    model: str,
    credential: str | None = None,
) -> tuple[str, str | None] | None:
    """The ``(name, model)`` of the limiter that paces an attempt of ``adapter`` (whose own
    provider is ``provider``, ``""`` if it has none) on ``model`` sent with the API key
    ``credential`` (if known), given the configured ``keys`` (read by ``provider_limits``
    and ``credential_limits`` first); ``None`` when no key matches.

    The name is the key's (``key_limit``: ``provider#fp``) when a limit of that key
    applies, else the attempt's provider (``provider_of``), most specific key first
    (``provider/model``, then ``provider``); an adapter of no known provider is looked up
    under its own name the same way."""
    name, bare = provider_of(adapter, model, provider=provider)
    if not name:
        name, bare = adapter, model
    if not name:
        return None
    keyed = key_limit(keys, provider=name, model=bare or None, credential=credential)
    if keyed is not None:
        return keyed, bare or None
    if bare and f"{name}/{bare}" in keys:
        return name, bare
    if name in keys:
        return name, bare or None
    return None
