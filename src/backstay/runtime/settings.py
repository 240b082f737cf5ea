"""``RuntimeSettings``: what a ``Runtime`` runs under, besides its adapter and stores."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from backstay._checks import check_number
from backstay.errors import ConfigError
from backstay.policy.registry import PolicySpec
from backstay.runtime.interface import RetryConfig, SecurityConfig
from backstay.runtime.limits import ExecutionLimits
from backstay.runtime.tools import ToolPolicy

__all__ = ["DEFAULT_MAX_CORRECTIONS", "RuntimeSettings"]

DEFAULT_MAX_CORRECTIONS: Final = 2
DEFAULT_WINDOW_TOKENS: Final = 4000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeSettings:
    """``limits`` (hard limits of each run), ``tools`` (allowlist and approvals),
    ``policy`` (the retry policy of model calls, a name or a ``RetryPolicy``),
    ``schema`` (a JSON schema each step's output is validated against; ``None``: no
    validation), ``max_corrections`` (how many times a step is run again with the
    validation feedback), ``redact_patterns`` (the user's own sensitive patterns)."""

    limits: ExecutionLimits = dataclasses.field(default_factory=ExecutionLimits)
    tools: ToolPolicy = dataclasses.field(default_factory=ToolPolicy)
    policy: PolicySpec = None
    schema: Mapping[str, Any] | None = None
    max_corrections: int = DEFAULT_MAX_CORRECTIONS
    redact_patterns: tuple[str, ...] = ()
    window_tokens: int = DEFAULT_WINDOW_TOKENS
    security: SecurityConfig | None = None
    retry: RetryConfig | None = None

    def __post_init__(self) -> None:
        check_number(self.max_corrections, where="max_corrections", integer=True)
        check_number(self.window_tokens, where="window_tokens", minimum=1, integer=True)
        object.__setattr__(self, "redact_patterns", tuple(self.redact_patterns))
        sec, retry = self.security, self.retry
        if sec is not None:
            if not isinstance(sec, SecurityConfig):
                raise ConfigError(f"must be a SecurityConfig, got {sec!r}", where="security")
            allowed, approval = (
                frozenset(sec.tool_allowlist),
                frozenset(sec.human_approval_required),
            )
            given = (self.tools.allowed, self.tools.approval)
            if any(given) and given != (allowed, approval):
                raise ConfigError("give tools or security, not both", where="security")
            tools = dataclasses.replace(self.tools, allowed=allowed, approval=approval)
            object.__setattr__(self, "tools", tools)
            more = tuple(p for p in sec.sensitive_data_patterns if p not in self.redact_patterns)
            object.__setattr__(self, "redact_patterns", (*self.redact_patterns, *more))
        if retry is not None:
            if not isinstance(retry, RetryConfig):
                raise ConfigError(f"must be a RetryConfig, got {retry!r}", where="retry")
            derived = (retry.policy(), retry.step_reruns)
            given_retry = (self.policy, self.max_corrections)
            if given_retry not in ((None, DEFAULT_MAX_CORRECTIONS), derived):
                raise ConfigError(
                    "give policy and max_corrections, or retry, not both", where="retry"
                )
            object.__setattr__(self, "policy", derived[0])
            object.__setattr__(self, "max_corrections", derived[1])
