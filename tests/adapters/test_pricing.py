"""Costs: configured prices first, then the genai-prices table, else unknown."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from backstay.adapters import pricing
from backstay.adapters.pricing import ModelPrice, parse_prices, price_usage
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError

USAGE = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=500, cache_write_tokens=100)


def test_a_model_price_charges_each_kind_of_token() -> None:
    price = ModelPrice(
        input_per_mtok=3.0, output_per_mtok=15.0, cache_read_per_mtok=0.3, cache_write_per_mtok=3.75
    )
    assert price.cost(USAGE) == pytest.approx((1000 * 3 + 200 * 15 + 500 * 0.3 + 100 * 3.75) / 1e6)


def test_cache_tokens_without_their_own_price_cost_the_input_price() -> None:
    price = ModelPrice(input_per_mtok=2.0, output_per_mtok=0.0)
    assert price.cost(USAGE) == pytest.approx((1000 + 500 + 100) * 2.0 / 1e6)


def test_a_configured_price_wins() -> None:
    prices = parse_prices(
        {"claude-sonnet-4-5": {"input_per_mtok": 1, "output_per_mtok": 1}}, where="p"
    )
    cost = price_usage(USAGE, model="claude-sonnet-4-5", provider="anthropic", prices=prices)
    assert cost.usd == pytest.approx((1000 + 200 + 500 + 100) / 1e6)
    assert cost.source == "the adapter's prices setting"


def test_a_known_model_is_priced_by_genai_prices() -> None:
    cost = price_usage(USAGE, model="claude-sonnet-4-5", provider="anthropic", prices={})
    assert cost.usd is not None
    assert cost.usd > 0
    assert cost.source.startswith("genai-prices ")


def test_genai_prices_charges_cache_reads_below_input() -> None:
    cached = Usage(cache_read_tokens=1000)
    uncached = Usage(input_tokens=1000)
    one = price_usage(cached, model="gpt-4o", provider="openai", prices={}).usd
    other = price_usage(uncached, model="gpt-4o", provider="openai", prices={}).usd
    assert one is not None
    assert other is not None
    assert 0 < one < other


def test_an_unknown_model_has_no_cost() -> None:
    cost = price_usage(USAGE, model="llama3.1:8b", provider="openai", prices={})
    assert cost.usd is None
    assert "has no price for openai model 'llama3.1:8b'" in cost.source


def test_without_genai_prices_the_cost_is_unknown_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    cost = price_usage(USAGE, model="gpt-4o", provider="openai", prices={})
    assert cost.usd is None
    assert "pip install 'backstay[prices]'" in cost.source


def test_prices_must_be_a_mapping_of_models() -> None:
    with pytest.raises(ConfigError) as info:
        parse_prices(["gpt-4o"], where="config.prices")
    assert info.value.where == "config.prices"


def test_the_price_packages_version_is_read_once_however_many_prices_are_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("genai_prices")
    reads: list[str] = []
    real = importlib.metadata.version

    def counted(name: str) -> str:
        reads.append(name)
        return real(name)

    pricing._package_version.cache_clear()
    monkeypatch.setattr(importlib.metadata, "version", counted)
    costs = [
        price_usage(USAGE, model="claude-sonnet-4-5", provider="anthropic", prices={})
        for _ in range(3)
    ]
    pricing._package_version.cache_clear()
    assert reads == ["genai-prices"]
    assert len({cost.source for cost in costs}) == 1
    assert costs[0].usd is not None
