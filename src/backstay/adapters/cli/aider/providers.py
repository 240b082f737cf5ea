"""The providers Aider is driven with, by the model's prefix, as data: the variables litellm
(inside Aider) reads for each, and how an attempt is pointed at a backstay gateway.

* ``openai/…`` (and any other model): the key in ``OPENAI_API_KEY``; the base URL in
  ``OPENAI_BASE_URL`` or ``OPENAI_API_BASE`` (Aider's ``--openai-api-base`` sets it),
  ending in ``/v1``;
* ``anthropic/…``: the key in ``ANTHROPIC_API_KEY``; the base URL in ``ANTHROPIC_API_BASE``
  or ``ANTHROPIC_BASE_URL``, the host only (litellm adds ``/v1/messages``);
* ``gemini/…``: the key in ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``; the base URL in
  ``GEMINI_API_BASE``, ending in ``/v1beta`` (litellm adds ``/models/M:generateContent``).

Read in litellm 1.81 (Aider 0.86): ``litellm/main.py`` (the ``anthropic`` and ``gemini``
branches of ``completion``), ``litellm/llms/gemini/common_utils.py``
(``get_api_key_from_env``) and ``litellm/llms/vertex_ai/vertex_llm_base.py``
(``_check_custom_proxy``: a Gemini base URL, the key sent as ``x-goog-api-key``).

A model named without a prefix is litellm's to place: ``claude-…`` is Anthropic's;
``gpt-…``, ``chatgpt-…``, ``o1…``, ``o3…``, ``o4-…`` are OpenAI's; a bare ``gemini-…`` is
Vertex AI's (not one of these). Aider's own aliases (``MODEL_ALIASES`` in
``aider/models.py`` of 0.86.2, the version the adapter supports) name models of these
providers too: ``sonnet``, ``haiku``, ``opus``; ``4o``, ``4``, ``3``…; ``flash``,
``gemini``, ``gemini-2.5-pro``…

A base URL given to the adapter (its ``base_url`` setting, or a gateway's) is handed to
Aider through the variable litellm reads first for the model's provider (``--openai-api-base``
for OpenAI's), and the provider's other base-URL variables are taken out of its
environment, so that the given one is the one used.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from backstay.adapters.gateway_wiring import GatewayWiring

__all__ = [
    "ANTHROPIC",
    "GATEWAY_WIRING",
    "GEMINI",
    "OPENAI",
    "PROVIDERS",
    "AiderProvider",
    "provider_for",
    "serves",
]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AiderProvider:
    """One provider of Aider's: the ``prefixes`` of the model names it serves (its own
    ``provider/`` first, then those of bare names litellm gives it) and the Aider aliases
    (``names``) standing for its models, the variables holding its ``keys`` and its
    ``base_urls`` (in the order the adapter reads them), the one litellm reads first
    (``base_url_env``, ``None`` for OpenAI's: Aider's ``--openai-api-base`` sets it) and
    what its base URL has after the host (``url_path``)."""

    name: str
    prefixes: tuple[str, ...]
    names: tuple[str, ...]
    keys: tuple[str, ...]
    base_urls: tuple[str, ...]
    base_url_env: str | None
    url_path: str


OPENAI: Final = AiderProvider(
    name="openai",
    prefixes=("openai/", "gpt-", "chatgpt-", "o1", "o3", "o4-"),
    names=("4", "4o", "4-turbo", "35turbo", "35-turbo", "3"),
    keys=("OPENAI_API_KEY",),
    base_urls=("OPENAI_API_BASE", "OPENAI_BASE_URL"),
    base_url_env=None,
    url_path="/v1",
)
ANTHROPIC: Final = AiderProvider(
    name="anthropic",
    prefixes=("anthropic/", "claude-"),
    names=("sonnet", "haiku", "opus"),
    keys=("ANTHROPIC_API_KEY",),
    base_urls=("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
    base_url_env="ANTHROPIC_API_BASE",
    url_path="",
)
GEMINI: Final = AiderProvider(
    name="gemini",
    prefixes=("gemini/",),
    names=(
        "flash",
        "flash-lite",
        "gemini",
        "gemini-exp",
        "gemini-2.5-pro",
        "gemini-3-pro-preview",
    ),
    keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    base_urls=("GEMINI_API_BASE",),
    base_url_env="GEMINI_API_BASE",
    url_path="/v1beta",
)
PROVIDERS: Final = (OPENAI, ANTHROPIC, GEMINI)
# Keys litellm reads for a provider none of these wirings stands in for; an attempt through
# the gateway loses them with the other providers' keys.
_OTHER_KEYS: Final = ("ANTHROPIC_AUTH_TOKEN",)


def serves(provider: AiderProvider, model: str) -> bool:
    """Whether ``model`` (as Aider is given it) is sent to ``provider``."""
    return model.startswith(provider.prefixes) or model in provider.names


def provider_for(model: str) -> AiderProvider:
    """The provider a model of Aider's is sent to, else OpenAI's (Aider's
    ``--openai-api-base`` is the base URL of any OpenAI-compatible model)."""
    return next((p for p in PROVIDERS if serves(p, model)), OPENAI)


def _wiring(provider: AiderProvider, *alternatives: GatewayWiring) -> GatewayWiring:
    others = [p for p in PROVIDERS if p is not provider]
    return GatewayWiring(
        provider=provider.name,
        key_env=provider.keys,
        base_url_env=provider.base_urls[0],
        other_base_url_env=provider.base_urls[1:],
        url_path=provider.url_path,
        timeout_setting="timeout_s",
        model_prefixes=provider.prefixes,
        model_names=provider.names,
        strip_env=(*(name for p in others for name in (*p.keys, *p.base_urls)), *_OTHER_KEYS),
        alternatives=alternatives,
    )


# Through a gateway: a model of OpenAI, Anthropic or Gemini (a ``provider/`` prefix, a bare
# name litellm gives one of them, an alias), each with its own provider's key and base URL;
# any other goes straight to its provider.
GATEWAY_WIRING: Final = _wiring(OPENAI, _wiring(ANTHROPIC), _wiring(GEMINI))
