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
from backstay.adapters.pricing import Cost
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


def test_a_kept_estimate_equals_one_made_afresh_whatever_its_inputs() -> None:
    adapter = AnthropicApiAdapter()
    configs: list[Any] = [
        MappingProxyType({"max_tokens": 10, "prices": {"m": _price(1, 2)}}),
        MappingProxyType({}),
        {"max_tokens": 7},
    ]
    earliers = [
        None,
        EarlierUse(prompt_tokens=10.0, output_tokens=20.0, usd=0.5),
        EarlierUse(prompt_tokens=10.0, output_tokens=20.0, usd=None),
        EarlierUse(prompt_tokens=400.0, output_tokens=3.0, usd=1),
        EarlierUse(prompt_tokens=400.0, output_tokens=3.0, usd=1.0),
    ]
    prompts = ["", "Say hello", "Say hello\\n" * 50, "a much longer prompt " * 300]
    for _ in range(2):
        for config in configs:
            for model in ("m", "no-such-model-anywhere"):
                for prompt in prompts:
                    for earlier in earliers:
                        kept = estimate_spend(
                            adapter, model=model, config=config, prompt=prompt, earlier=earlier
                        )
                        spend._SETTINGS.clear()
                        fresh = estimate_spend(
                            adapter, model=model, config=config, prompt=prompt, earlier=earlier
                        )
                        assert kept == fresh
                        assert type(kept.usd) is type(fresh.usd)
    # What cannot be estimated fails each time, kept or not.
    for _ in range(2):
        with pytest.raises(ValueError, match="NaN"):
            estimate_spend(
                adapter,
                model="m",
                config=configs[0],
                prompt="hi",
                earlier=EarlierUse(prompt_tokens=float("nan"), output_tokens=3.0, usd=0.1),
            )


def test_an_estimate_is_kept_for_its_minute_only(monkeypatch: pytest.MonkeyPatch) -> None:
    minute = [1]

    def priced(usage: Usage, **_: Any) -> Cost:
        return Cost(usd=minute[0] * 1.0, source="test")

    monkeypatch.setattr(spend, "price_period", lambda: minute[0])
    monkeypatch.setattr(spend, "price_usage", priced)
    spend._SETTINGS.clear()
    adapter = AnthropicApiAdapter()
    config = MappingProxyType({"max_tokens": 5})
    first = estimate_spend(adapter, model="m", config=config, prompt="hi", earlier=None)
    assert estimate_spend(adapter, model="m", config=config, prompt="hi", earlier=None) is first
    minute[0] = 2
    later = estimate_spend(adapter, model="m", config=config, prompt="hi", earlier=None)
    assert (first.usd, later.usd) == (1.0, 2.0)


def test_the_estimates_kept_stay_bounded() -> None:
    spend._SETTINGS.clear()
    adapter = AnthropicApiAdapter()
    config = MappingProxyType({"max_tokens": 5})
    for i in range(spend._ESTIMATES_KEPT * 3):
        estimate_spend(adapter, model="m", config=config, prompt=f"p{i}", earlier=None)
    estimates = spend._SETTINGS[id(adapter)][4]
    assert 0 < len(estimates) <= spend._ESTIMATES_KEPT
