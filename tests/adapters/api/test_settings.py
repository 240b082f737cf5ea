"""The API adapters' settings: each wrong key named with the adapter, key and URL lookup,
and a missing SDK naming the extra that installs it."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.gemini import GeminiApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.adapters.api.settings import ApiSettings, resolve_api_key, resolve_base_url
from backstay.adapters.registry import get_adapter
from backstay.errors import ConfigError

ADAPTERS = [AnthropicApiAdapter, OpenAIApiAdapter, GeminiApiAdapter]


@pytest.mark.parametrize("cls", ADAPTERS)
def test_the_registry_gives_each_api_adapter(cls: type[Any]) -> None:
    assert isinstance(get_adapter(cls.name), cls)


@pytest.mark.parametrize("cls", ADAPTERS)
def test_every_documented_setting_is_accepted(cls: type[Any]) -> None:
    cls().validate_config(
        {
            "base_url": "http://127.0.0.1:9/",
            "api_key_env": "MY_KEY",
            "stream": False,
            "max_tokens": 100,
            "temperature": 0.5,
            "prices": {"m": {"input_per_mtok": 1, "output_per_mtok": 2}},
        }
    )


@pytest.mark.parametrize(
    ("config", "where", "says"),
    [
        ({"bogus": 1}, "config.bogus", "unknown setting"),
        ({"stream": "yes"}, "config.stream", "true or false"),
        ({"base_url": "127.0.0.1:8080"}, "config.base_url", "http(s) URL"),
        ({"api_key_env": "sk-ant-api03-abc"}, "config.api_key_env", "environment variable"),
        ({"max_tokens": 0}, "config.max_tokens", ">= 1"),
        ({"max_tokens": 1.5}, "config.max_tokens", "whole number"),
        ({"temperature": 3}, "config.temperature", "<= 2"),
        ({"prices": {"m": {"input_per_mtok": 1}}}, "config.prices.m.output_per_mtok", "required"),
        (
            {"prices": {"m": {"input_per_mtok": 1, "output_per_mtok": 1, "x": 1}}},
            "config.prices.m.x",
            "unknown price field",
        ),
        (
            {"prices": {"m": {"input_per_mtok": -1, "output_per_mtok": 1}}},
            "config.prices.m.input_per_mtok",
            ">= 0",
        ),
    ],
)
@pytest.mark.parametrize("cls", ADAPTERS)
def test_a_wrong_setting_names_the_adapter_and_the_key(
    cls: type[Any], config: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        cls().validate_config(config)
    assert info.value.where == where
    assert says in str(info.value)
    assert cls.name in str(info.value)


def test_only_openai_has_the_api_setting() -> None:
    OpenAIApiAdapter().validate_config({"api": "responses"})
    with pytest.raises(ConfigError, match="one of chat, responses") as info:
        OpenAIApiAdapter().validate_config({"api": "completions"})
    assert info.value.where == "config.api"
    with pytest.raises(ConfigError, match="unknown setting"):
        AnthropicApiAdapter().validate_config({"api": "chat"})


@pytest.mark.parametrize(
    ("cls", "module", "extra"),
    [
        (AnthropicApiAdapter, "anthropic", "anthropic"),
        (OpenAIApiAdapter, "openai", "openai"),
        (GeminiApiAdapter, "google.genai", "gemini"),
    ],
)
def test_a_missing_sdk_names_the_extra_to_install(
    cls: type[Any], module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError) as info:
        cls().validate_config({})
    assert f"pip install 'backstay[{extra}]'" in str(info.value)
    assert info.value.where == "adapter"


def test_the_key_comes_from_the_first_variable_that_is_set() -> None:
    env = {"GOOGLE_API_KEY": "google-key", "GEMINI_API_KEY": " "}
    assert resolve_api_key(ApiSettings(), env, ("GEMINI_API_KEY", "GOOGLE_API_KEY")) == (
        "google-key",
        "GOOGLE_API_KEY",
    )


def test_api_key_env_is_the_only_variable_read_when_it_is_set() -> None:
    settings = ApiSettings(api_key_env="MINE")
    key, why = resolve_api_key(settings, {"OPENAI_API_KEY": "other"}, ("OPENAI_API_KEY",))
    assert key is None
    assert why == "no API key: MINE is not set in the request's environment"


def test_the_base_url_setting_wins_over_the_environment() -> None:
    env = {"OPENAI_BASE_URL": "http://from-env/v1"}
    assert resolve_base_url(ApiSettings(), env, "OPENAI_BASE_URL") == "http://from-env/v1"
    chosen = ApiSettings(base_url="http://set/v1")
    assert resolve_base_url(chosen, env, "OPENAI_BASE_URL") == "http://set/v1"
    assert resolve_base_url(ApiSettings(), {}, "OPENAI_BASE_URL") is None
