"""The standard variables of an adapter's provider, and the environment a run inherits.

Each adapter declares, as data (``BaseAdapter.provider_env``), the variables its provider
is configured by: credentials (``ANTHROPIC_API_KEY`` …), the endpoint
(``ANTHROPIC_BASE_URL`` …) and the account (``OPENAI_ORG_ID`` …). A run takes those of them
that are set in the caller's environment, unless told not to (``inherit_env: false``,
``--isolated-env``), and the variables given explicitly go over them: an explicit value
wins. Nothing else is inherited. ``agent_env`` is the one function that does this; the
entry points call it with the environment they read (``BaseAdapter.run``, the engine,
``backstay run``).

The values are never written anywhere: a secret one is registered for redaction by the
adapter (``BaseAdapter.dispatch``) and left out of the state file by the engine, which
keeps only whether a task inherits (``TaskSpec.inherit_env``) and reads the variables
again when it resumes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from backstay._checks import check_env_names

__all__ = [
    "ANTHROPIC_ENV",
    "BUILTIN_PROVIDER_ENV",
    "GEMINI_ENV",
    "NO_PROVIDER_ENV",
    "OPENAI_ENV",
    "ProviderEnv",
    "agent_env",
    "declared_env",
]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProviderEnv:
    """The standard variables an adapter reads, by what they hold.

    ``translated`` names those the agent itself ignores, which the adapter writes into
    the agent's own configuration instead (Codex and ``OPENAI_BASE_URL``).
    """

    credentials: tuple[str, ...] = ()
    endpoint: tuple[str, ...] = ()
    account: tuple[str, ...] = ()
    translated: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("credentials", "endpoint", "account", "translated"):
            object.__setattr__(self, name, check_env_names(getattr(self, name), where=name))

    @property
    def names(self) -> tuple[str, ...]:
        """Every variable declared, credentials first."""
        return (*self.credentials, *self.endpoint, *self.account)

    def describe(self) -> str:
        """One line for people: ``"ANTHROPIC_API_KEY, … (key); ANTHROPIC_BASE_URL (URL)"``."""
        parts = [
            f"{', '.join(names)} ({what})"
            for names, what in (
                (self.credentials, "key"),
                (self.endpoint, "URL"),
                (self.account, "account"),
            )
            if names
        ]
        if self.translated:
            parts.append(f"{', '.join(self.translated)} written into the agent's own config")
        return "; ".join(parts) or "none"

    def inherited(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The declared variables ``environ`` sets to something other than ``""``."""
        return {name: environ[name] for name in self.names if environ.get(name)}


NO_PROVIDER_ENV: Final = ProviderEnv()
ANTHROPIC_ENV: Final = ProviderEnv(
    credentials=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), endpoint=("ANTHROPIC_BASE_URL",)
)
OPENAI_ENV: Final = ProviderEnv(
    credentials=("OPENAI_API_KEY",),
    endpoint=("OPENAI_BASE_URL",),
    account=("OPENAI_ORG_ID", "OPENAI_PROJECT_ID"),
)
GEMINI_ENV: Final = ProviderEnv(
    credentials=("GEMINI_API_KEY", "GOOGLE_API_KEY"), endpoint=("GOOGLE_GEMINI_BASE_URL",)
)

# What each built-in adapter declares, by name, as data: ``backstay run --help`` and
# ``backstay suite check`` show it without importing an adapter (and its SDK glue).
# ``tests/adapters/test_provider_env.py`` holds it equal to each class's ``provider_env``.
BUILTIN_PROVIDER_ENV: Final[Mapping[str, ProviderEnv]] = MappingProxyType(
    {
        "mock": NO_PROVIDER_ENV,
        "anthropic-api": ANTHROPIC_ENV,
        "openai-api": OPENAI_ENV,
        "gemini-api": GEMINI_ENV,
        "claude-code": ANTHROPIC_ENV,
        "gemini-cli": GEMINI_ENV,
        "codex": ProviderEnv(
            credentials=OPENAI_ENV.credentials,
            endpoint=OPENAI_ENV.endpoint,
            account=("OPENAI_ORGANIZATION", "OPENAI_PROJECT"),
            translated=OPENAI_ENV.endpoint,
        ),
        "opencode": ProviderEnv(
            credentials=OPENAI_ENV.credentials,
            endpoint=OPENAI_ENV.endpoint,
            translated=OPENAI_ENV.endpoint,
        ),
        "aider": ProviderEnv(
            credentials=(
                *OPENAI_ENV.credentials,
                ANTHROPIC_ENV.credentials[0],
                GEMINI_ENV.credentials[0],
            ),
            endpoint=(
                "OPENAI_API_BASE",
                *OPENAI_ENV.endpoint,
                "ANTHROPIC_API_BASE",
                *ANTHROPIC_ENV.endpoint,
                "GEMINI_API_BASE",
            ),
            account=("OPENAI_ORGANIZATION",),
        ),
        "agent-runtime": NO_PROVIDER_ENV,
        "langgraph": OPENAI_ENV,
        "pydantic-ai": OPENAI_ENV,
        "llamaindex": OPENAI_ENV,
        "autogen": OPENAI_ENV,
    }
)


def declared_env(adapter: object) -> ProviderEnv:
    """What ``adapter`` (an instance or a class) declares; none for an adapter that is
    not built on ``BaseAdapter`` and declares nothing."""
    declared = getattr(adapter, "provider_env", None)
    return declared if isinstance(declared, ProviderEnv) else NO_PROVIDER_ENV


def agent_env(
    adapter: object,
    explicit: Mapping[str, str],
    *,
    environ: Mapping[str, str],
    inherit: bool = True,
) -> dict[str, str]:
    """A run's whole environment: the provider variables ``adapter`` declares, taken from
    ``environ`` when ``inherit``, with ``explicit`` over them."""
    inherited = declared_env(adapter).inherited(environ) if inherit else {}
    return inherited | dict(explicit)
