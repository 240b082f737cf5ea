"""Rate limits belong to the provider account: the limit keys of adapters, models and
providers (``backstay.policy.limit_keys``)."""

from __future__ import annotations

from typing import Final

import pytest

from backstay.policy.limit_keys import adapter_keys, limit_key, provider_limits, provider_of
from backstay.policy.limiters import RateLimiterRegistry
from backstay.policy.ratelimit import RateLimitSettings

SLOW: Final = RateLimitSettings(requests_per_minute=6.0)
FAST: Final = RateLimitSettings(requests_per_minute=600.0)


@pytest.mark.parametrize(
    ("adapter", "model", "provider", "expected"),
    [
        ("anthropic-api", "claude-sonnet-4-6", "anthropic", ("anthropic", "claude-sonnet-4-6")),
        ("claude-code", "claude-sonnet-4-6", "", ("anthropic", "claude-sonnet-4-6")),
        ("codex", "gpt-5", "", ("openai", "gpt-5")),
        ("gemini-cli", "gemini-2.5-pro", "", ("gemini", "gemini-2.5-pro")),
        ("opencode", "anthropic/claude-sonnet-4-6", "", ("anthropic", "claude-sonnet-4-6")),
        ("aider", "gemini/gemini-2.5-pro", "", ("gemini", "gemini-2.5-pro")),
        ("aider", "gpt-4o", "", ("", "gpt-4o")),
        ("scripted", "m", "", ("", "m")),
    ],
)
def test_an_attempt_spends_the_limit_of_its_provider(
    adapter: str, model: str, provider: str, expected: tuple[str, str]
) -> None:
    assert provider_of(adapter, model, provider=provider) == expected


def test_adapter_named_keys_are_read_as_their_providers() -> None:
    limits = {"claude-code": SLOW, "codex/gpt-5": FAST, "scripted": SLOW}
    assert provider_limits(limits) == {"anthropic": SLOW, "openai/gpt-5": FAST, "scripted": SLOW}
    assert adapter_keys(limits) == ["claude-code", "codex/gpt-5"]


def test_a_provider_key_wins_over_an_adapter_key_for_it() -> None:
    assert provider_limits({"claude-code": SLOW, "anthropic": FAST}) == {"anthropic": FAST}
    assert provider_limits({"claude-code": SLOW, "anthropic-api": FAST}) == {"anthropic": SLOW}


def test_an_unknown_adapter_is_limited_under_its_own_name() -> None:
    assert limit_key({"scripted"}, adapter="scripted", provider="", model="m") == (
        "scripted",
        "m",
    )
    assert limit_key({"other"}, adapter="scripted", provider="", model="m") is None


def test_an_old_adapter_key_gives_the_api_task_and_the_cli_session_one_limiter() -> None:
    registry = RateLimiterRegistry(provider_limits({"claude-code": SLOW}))
    keys = registry.limits.keys()
    api = limit_key(keys, adapter="anthropic-api", provider="anthropic", model="sonnet")
    cli = limit_key(keys, adapter="claude-code", provider="", model="sonnet")
    assert api is not None
    assert cli is not None
    assert registry.limiter_for(*api) is registry.limiter_for(*cli)
    assert registry.limiter_for(*api).settings == SLOW
