"""``backstay.adapters.spend`` reads an adapter's settings of a config once while the
config is unchanged: every estimate and charge equals the one made with settings read
afresh, whatever changed between them."""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import Any

import pytest

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.api.openai import OpenAIApiAdapter
from backstay.adapters.contract import Adapter
from backstay.adapters.spend import charge_spend, estimate_spend
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError
from backstay.policy.spend import EarlierUse, Spend

spend = importlib.import_module("backstay.adapters.spend")


def _fresh(adapter: Adapter, **kw: Any) -> tuple[Spend, Spend]:
    """The estimate and the charge with nothing kept from an earlier reading."""
    spend._SETTINGS.clear()
    return _both(adapter, **kw)


def _both(adapter: Adapter, *, model: str, config: Any, prompt: str) -> tuple[Spend, Spend]:
    earlier = EarlierUse(prompt_tokens=10.0, output_tokens=20.0, usd=0.5)
    estimate = estimate_spend(adapter, model=model, config=config, prompt=prompt, earlier=earlier)
    usage = Usage(input_tokens=7, output_tokens=9)
    charge = charge_spend(adapter, model=model, config=config, usage=usage, estimate=estimate)
    return estimate, charge


def _price(inp: float, out: float) -> dict[str, float]:
    return {"input_per_mtok": inp, "output_per_mtok": out}


def test_the_estimates_equal_those_of_settings_read_afresh_as_configs_change() -> None:
    adapters: list[Adapter] = [AnthropicApiAdapter(), OpenAIApiAdapter(), AnthropicApiAdapter()]
    shared: dict[str, Any] = {"max_tokens": 10, "prices": {"m": _price(1, 2)}}
    frozen: MappingProxyType[str, Any] = MappingProxyType(
        {"max_tokens": 30, "prices": {"m": _price(5, 6)}}
    )
    configs: list[Any] = [shared, frozen, {}, {"max_tokens": 99}, shared, frozen]
    for round_ in range(4):
        for adapter in adapters:
            for config in configs:
                for model in ("m", "other-model"):
                    kept = _both(adapter, model=model, config=config, prompt="Say hello")
                    assert kept == _fresh(adapter, model=model, config=config, prompt="Say hello")
                    kept_again = _both(adapter, model=model, config=config, prompt="Say hello")
                    assert kept_again == kept
        # The same config objects change between rounds: top level and nested values.
        shared["max_tokens"] = 10 + round_ * 7
        shared["prices"]["m"]["input_per_mtok"] = 1 + round_
        frozen["prices"]["m"]["output_per_mtok"] = 6 + round_


def test_a_nested_price_changed_in_place_is_priced_anew() -> None:
    adapter = AnthropicApiAdapter()
    prices = {"m": _price(1000, 2000)}
    config = MappingProxyType({"max_tokens": 100, "prices": prices})
    before = estimate_spend(adapter, model="m", config=config, prompt="hi", earlier=None)
    prices["m"]["output_per_mtok"] = 4000
    after = estimate_spend(adapter, model="m", config=config, prompt="hi", earlier=None)
    assert after.usd == pytest.approx(before.usd + 100 * 0.002)


def test_a_bad_config_is_refused_every_time() -> None:
    adapter = AnthropicApiAdapter()
    config = {"max_tokens": 0}
    for _ in range(3):
        with pytest.raises(ConfigError, match="max_tokens"):
            estimate_spend(adapter, model="m", config=config, prompt="hi", earlier=None)


def test_what_is_kept_stays_bounded() -> None:
    spend._SETTINGS.clear()
    adapters = [AnthropicApiAdapter() for _ in range(spend._SETTINGS_KEPT * 2)]
    for adapter in adapters:
        estimate_spend(adapter, model="m", config={"max_tokens": 5}, prompt="hi", earlier=None)
    assert len(spend._SETTINGS) <= spend._SETTINGS_KEPT
