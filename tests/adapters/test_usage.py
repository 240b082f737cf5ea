"""Usage: totals, addition over attempts, validation naming the field."""

from __future__ import annotations

import pytest

from backstay.adapters.usage import Usage
from backstay.errors import ConfigError


def test_prompt_tokens_count_cache_reads_and_writes() -> None:
    usage = Usage(input_tokens=10, cache_read_tokens=100, cache_write_tokens=5, output_tokens=7)
    assert usage.prompt_tokens == 115
    assert usage.tokens_total == 122


def test_adding_usages_adds_every_field() -> None:
    a = Usage(
        input_tokens=1,
        output_tokens=2,
        cache_read_tokens=3,
        cache_write_tokens=4,
        cost_usd=0.5,
        api_calls=1,
    )
    b = Usage(
        input_tokens=10,
        output_tokens=20,
        cache_read_tokens=30,
        cache_write_tokens=40,
        cost_usd=0.25,
        api_calls=2,
    )
    assert a + b == Usage(
        input_tokens=11,
        output_tokens=22,
        cache_read_tokens=33,
        cache_write_tokens=44,
        cost_usd=0.75,
        api_calls=3,
    )


def test_an_unknown_cost_stays_unknown_until_one_is_known() -> None:
    assert (Usage() + Usage()).cost_usd is None
    assert (Usage() + Usage(cost_usd=0.1)).cost_usd == 0.1


def test_adding_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("input_tokens", -1),
        ("output_tokens", 1.5),
        ("cache_read_tokens", True),
        ("api_calls", "3"),
        ("cost_usd", float("inf")),
        ("cost_usd", -0.01),
    ],
)
def test_invalid_counts_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        Usage(**{field: value})  # type: ignore[arg-type]
    assert info.value.where == f"usage.{field}"
