"""``backstay.adapters.spend``: one attempt's estimate and charge on an adapter, the rule
the engine's budgets and a single run's budget share (docs/budgets.md)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Final, cast

import pytest

from backstay.adapters.api.anthropic import AnthropicApiAdapter
from backstay.adapters.contract import Adapter
from backstay.adapters.mock import MockAdapter
from backstay.adapters.spend import attempt_prompt, charge_spend, estimate_spend
from backstay.adapters.usage import Usage
from backstay.policy.spend import DEFAULT_OUTPUT_TOKENS, EarlierUse, Spend

spend = importlib.import_module("backstay.adapters.spend")

PRICED: Final = {
    "max_tokens": 100,
    "prices": {"m": {"input_per_mtok": 1000, "output_per_mtok": 2000}},
}


def test_an_api_attempt_is_estimated_at_its_prompt_and_max_tokens_at_its_model_price() -> None:
    spend = estimate_spend(
        AnthropicApiAdapter(), model="m", config=PRICED, prompt="Say hello.", earlier=None
    )
    assert spend.tokens == 4 + 100
    assert spend.usd == pytest.approx(4 * 0.001 + 100 * 0.002)


def test_an_unpriced_attempt_is_estimated_at_the_mean_cost_of_earlier_ones() -> None:
    earlier = EarlierUse(prompt_tokens=400.0, output_tokens=100.0, usd=0.1)
    spend = estimate_spend(MockAdapter(), model="m", config={}, prompt="hi", earlier=earlier)
    assert spend == Spend(usd=0.1, tokens=500)


def test_without_a_bound_or_earlier_attempts_the_output_is_the_default() -> None:
    spend = estimate_spend(MockAdapter(), model="m", config={}, prompt="hi", earlier=None)
    assert spend == Spend(usd=0.0, tokens=1 + DEFAULT_OUTPUT_TOKENS)


def test_a_reported_cost_is_charged_as_reported() -> None:
    usage = Usage(input_tokens=10, output_tokens=5, cost_usd=0.5)
    charged = charge_spend(
        AnthropicApiAdapter(), model="m", config=PRICED, usage=usage, estimate=Spend()
    )
    assert charged == Spend(usd=0.5, tokens=15)


def test_tokens_used_at_an_unknown_price_are_charged_the_estimates_cost() -> None:
    usage = Usage(input_tokens=10, output_tokens=5)
    charged = charge_spend(
        MockAdapter(), model="m", config={}, usage=usage, estimate=Spend(usd=0.3, tokens=99)
    )
    assert charged == Spend(usd=0.3, tokens=15)


def test_an_attempt_that_used_nothing_is_charged_nothing() -> None:
    charged = charge_spend(
        MockAdapter(), model="m", config={}, usage=Usage(api_calls=1), estimate=Spend(usd=0.3)
    )
    assert charged == Spend()


def test_the_prompt_is_its_files_text_after_the_system_prompt(tmp_path: Path) -> None:
    path = tmp_path / "p.md"
    path.write_text("from the file", encoding="utf-8")
    assert attempt_prompt(prompt_file=path, system_prompt="sys") == "sys\nfrom the file"
    assert attempt_prompt(prompt_file=tmp_path / "missing.md") == ""


class _SettingsOnly:
    """Has the settings of an API adapter but no price source: not priced."""

    def settings(self, config: object) -> object:
        raise AssertionError("an unpriced adapter's settings are never read")


def test_whether_an_adapter_is_priced_is_asked_of_its_class_once() -> None:
    """An API adapter is priced, every time; an adapter without a price source is not,
    and its settings are never read (the answer is kept by class)."""
    api = AnthropicApiAdapter()
    assert spend._priced(api) is spend._priced(AnthropicApiAdapter()) is True
    assert spend._PRICED_CLASSES[AnthropicApiAdapter] is True
    other = cast(Adapter, _SettingsOnly())
    for _ in range(2):
        assert spend._priced(other) is False
        assert spend._max_tokens(other, {}) is None
        assert spend._price(other, "m", {}, Usage(input_tokens=1)) is None
    assert spend._max_tokens(api, {"max_tokens": 64}) == 64
