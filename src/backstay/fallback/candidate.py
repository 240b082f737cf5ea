"""``Candidate``: one model a fallback chain may send work to, and what it can do.

A candidate names who serves it (``provider`` for the Python API and the HTTP
integrations, ``adapter`` for the engine; at least one), the ``model``, the environment
variable holding its credential (``api_key_env``; ``None``: the provider's default), and
its capabilities: ``context_window`` (tokens; ``None``: unknown), ``tools`` and
``streaming``. ``base_url`` is where an HTTP integration sends its requests (``None``:
the client's own). Nothing here reads the environment: a credential is looked up only
by the code that makes the request.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError

__all__ = ["Candidate", "Needs"]

_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _text(value: object, *, where: str) -> None:
    if not isinstance(value, str) or not value or value != value.strip():
        raise ConfigError(f"must be a non-empty string, got {value!r}", where=where)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One entry of a fallback chain; validated on construction."""

    model: str
    provider: str | None = None
    adapter: str | None = None
    api_key_env: str | None = None
    context_window: int | None = None
    tools: bool = True
    streaming: bool = True
    base_url: str | None = None

    def __post_init__(self) -> None:
        _text(self.model, where="candidate.model")
        if self.provider is None and self.adapter is None:
            raise ConfigError("names neither a provider nor an adapter", where="candidate")
        if self.provider is not None:
            _text(self.provider, where="candidate.provider")
        if self.adapter is not None:
            _text(self.adapter, where="candidate.adapter")
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not _ENV_NAME.fullmatch(self.api_key_env)
        ):
            raise ConfigError(
                f"must be an environment variable name, got {self.api_key_env!r}",
                where="candidate.api_key_env",
            )
        if self.context_window is not None:
            check_number(
                self.context_window, where="candidate.context_window", minimum=1, integer=True
            )
        for flag in ("tools", "streaming"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError("must be true or false", where=f"candidate.{flag}")
        if self.base_url is not None:
            _text(self.base_url, where="candidate.base_url")

    @property
    def source(self) -> str:
        """Who serves the candidate: its adapter for the engine, else its provider."""
        return self.adapter if self.adapter is not None else str(self.provider)

    @property
    def name(self) -> str:
        """``"source/model"``, with ``"@API_KEY_ENV"`` when a credential is named: the key of
        the candidate's breaker and cooldown (the engine's ``(adapter, model)`` breaker)."""
        base = f"{self.source}/{self.model}"
        return base if self.api_key_env is None else f"{base}@{self.api_key_env}"

    @property
    def credential(self) -> tuple[str, str | None]:
        """What identifies the credential: who serves it and the variable it comes from."""
        return (self.source, self.api_key_env)

    def larger_than(self, other: Candidate) -> bool:
        """Whether this candidate's context window is known to be larger than ``other``'s."""
        mine, theirs = self.context_window, other.context_window
        return mine is not None and theirs is not None and mine > theirs

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the inverse of ``from_dict`` (unset fields left out)."""
        out = dataclasses.asdict(self)
        defaults = {"tools": True, "streaming": True}
        return {k: v for k, v in out.items() if v is not None and defaults.get(k) != v}

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "candidate") -> Candidate:
        """A candidate from plain data; unknown keys are a ``ConfigError``."""
        if not isinstance(data, dict):
            raise ConfigError(f"must be a mapping, got {data!r}", where=where)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(
                f"unknown key(s) {', '.join(map(str, unknown))}; "
                f"known: {', '.join(sorted(fields))}",
                where=where,
            )
        try:
            return cls(**data)
        except ConfigError as err:
            field = (err.where or "").rpartition(".")[2]
            raise ConfigError(err.reason, where=f"{where}.{field}") from None
        except TypeError as err:
            raise ConfigError(str(err), where=where) from None

    @classmethod
    def parse(cls, text: str, *, where: str = "--fallback") -> Candidate:
        """``"ADAPTER:MODEL"`` (the ``backstay run --fallback`` form) as an engine candidate."""
        source, sep, model = text.partition(":")
        if not sep or not source or not model:
            raise ConfigError(f"must be ADAPTER:MODEL, got {text!r}", where=where)
        try:
            return cls(adapter=source, model=model)
        except ConfigError as err:
            raise ConfigError(err.reason, where=where) from None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Needs:
    """What one call needs of a candidate: a candidate without it is never chosen."""

    tools: bool = False
    streaming: bool = False
    context_tokens: int | None = None

    def met_by(self, candidate: Candidate) -> bool:
        if self.tools and not candidate.tools:
            return False
        if self.streaming and not candidate.streaming:
            return False
        window = candidate.context_window
        return self.context_tokens is None or window is None or window >= self.context_tokens
