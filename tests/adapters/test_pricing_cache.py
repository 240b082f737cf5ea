"""genai-prices is asked once per model, provider, token counts and minute: the same
counts priced again cost no second lookup, and give the package's own figure."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from backstay.adapters import pricing
from backstay.adapters.pricing import price_usage
from backstay.adapters.usage import Usage

genai_prices = pytest.importorskip("genai_prices")

MODEL = "claude-sonnet-4-5"


def test_the_same_counts_are_priced_once_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    pricing._package_price.cache_clear()
    calls: list[Any] = []
    real = genai_prices.calc_price

    def counted(usage: Any, model: str, **kwargs: Any) -> Any:
        calls.append((usage.input_tokens, usage.output_tokens))
        return real(usage, model, **kwargs)

    monkeypatch.setattr(genai_prices, "calc_price", counted)
    usage = Usage(input_tokens=1234, output_tokens=56, cache_read_tokens=7)
    first = price_usage(usage, model=MODEL, provider="anthropic", prices={})
    again = price_usage(usage, model=MODEL, provider="anthropic", prices={})
    other = price_usage(
        Usage(input_tokens=1234, output_tokens=57), model=MODEL, provider="anthropic", prices={}
    )
    assert first == again
    assert len(calls) == 2  # the second counts only
    assert other.usd != first.usd
    expected = real(
        genai_prices.Usage(
            input_tokens=usage.prompt_tokens,
            output_tokens=56,
            cache_read_tokens=7,
            cache_write_tokens=0,
        ),
        MODEL,
        provider_id="anthropic",
    )
    assert first.usd == float(expected.total_price)


def test_a_new_minute_prices_again(monkeypatch: pytest.MonkeyPatch) -> None:
    pricing._package_price.cache_clear()
    calls: list[int] = []
    real = genai_prices.calc_price

    def counted(usage: Any, model: str, **kwargs: Any) -> Any:
        calls.append(1)
        return real(usage, model, **kwargs)

    monkeypatch.setattr(genai_prices, "calc_price", counted)
    now = [1_800_000_000.0]
    monkeypatch.setattr(pricing, "time", SimpleNamespace(time=lambda: now[0]))
    usage = Usage(input_tokens=10, output_tokens=5)
    price_usage(usage, model=MODEL, provider="anthropic", prices={})
    now[0] += 30.0
    price_usage(usage, model=MODEL, provider="anthropic", prices={})
    assert len(calls) == 1
    now[0] += 60.0
    price_usage(usage, model=MODEL, provider="anthropic", prices={})
    assert len(calls) == 2
