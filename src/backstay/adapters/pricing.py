"""What an LLM API call cost, in USD, and where that price came from.

Prices come from two places, in this order:

1. the adapter's ``prices`` setting: model name → ``ModelPrice`` (USD per million
   tokens), for contract prices, self-hosted models, or a price the package lacks;
2. the ``genai-prices`` package (``pip install 'backstay[prices]'``, also installed by the
   ``anthropic``, ``openai`` and ``gemini`` extras): a maintained, versioned table of
   provider prices, looked up by provider and model without any network access.

When neither knows the model, the cost is ``None``: unknown, never a guess from a stale
table of our own. ``Cost.source`` says which source priced a call (or why none did), so
that ``agent.log`` can show it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from backstay._checks import check_name, check_number
from backstay.adapters.usage import Usage
from backstay.errors import ConfigError

__all__ = ["PRICE_FIELDS", "Cost", "ModelPrice", "parse_prices", "price_usage"]

# The settings of one model's price, in USD per million tokens.
PRICE_FIELDS: Final = (
    "input_per_mtok",
    "output_per_mtok",
    "cache_read_per_mtok",
    "cache_write_per_mtok",
)
_PER: Final = 1_000_000
PRICES_PACKAGE: Final = "genai-prices"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """One model's price in USD per million tokens. A cache price left ``None`` is
    charged at the input price."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def __post_init__(self) -> None:
        for name in PRICE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                check_number(value, where=name)

    def cost(self, usage: Usage) -> float:
        """The USD cost of ``usage`` at this price."""
        read = self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        write = (
            self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        )
        total = (
            usage.input_tokens * self.input_per_mtok
            + usage.output_tokens * self.output_per_mtok
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
        )
        return total / _PER


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """A call's cost (``None``: unknown) and the source of its price."""

    usd: float | None
    source: str


def parse_prices(value: object, *, where: str) -> Mapping[str, ModelPrice]:
    """The ``prices`` setting: model name → mapping of ``PRICE_FIELDS``; ``ConfigError``
    naming the model and field that is wrong."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"must map model names to prices, got {type(value).__name__}", where=where
        )
    prices: dict[str, ModelPrice] = {}
    for model, fields in value.items():
        check_name(model, where=f"{where} (a model name)")
        here = f"{where}.{model}"
        if isinstance(fields, ModelPrice):
            prices[model] = fields
            continue
        if not isinstance(fields, Mapping):
            raise ConfigError(
                f"must be a mapping of {', '.join(PRICE_FIELDS)}, got {fields!r}", where=here
            )
        unknown = sorted(str(k) for k in fields if k not in PRICE_FIELDS)
        if unknown:
            raise ConfigError(
                f"unknown price field (known: {', '.join(PRICE_FIELDS)})",
                where=f"{here}.{unknown[0]}",
            )
        for required in PRICE_FIELDS[:2]:
            if required not in fields:
                raise ConfigError("is required", where=f"{here}.{required}")
        for name, number in fields.items():
            if number is not None:
                check_number(number, where=f"{here}.{name}")
        prices[model] = ModelPrice(**{str(k): v for k, v in fields.items()})
    return MappingProxyType(prices)


@functools.cache
def _package_version() -> str:
    """The installed price package's version: read from its metadata once per process
    (each read parses the metadata file, milliseconds a call: twice an attempt)."""
    return importlib.metadata.version(PRICES_PACKAGE)


def _from_package(usage: Usage, model: str, provider: str) -> Cost:
    try:
        import genai_prices  # noqa: F401, PLC0415 - optional extra, imported on first use
    except ImportError:
        return Cost(
            usd=None,
            source=f"unknown: {PRICES_PACKAGE} is not installed (pip install 'backstay[prices]')",
        )
    version = _package_version()
    # genai-prices counts every prompt token as input, cache reads and writes included.
    counts = (
        usage.prompt_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )
    usd = _package_price(model, provider, counts, price_period())
    if usd is None:
        return Cost(
            usd=None,
            source=f"unknown: {PRICES_PACKAGE} {version} has no price for "
            f"{provider} model {model!r}",
        )
    return Cost(usd=usd, source=f"{PRICES_PACKAGE} {version}")


# genai-prices takes about 0.1 ms of CPU a price (twice an attempt: its estimate and its
# charge); the same model, provider and token counts are priced once a minute (its
# prices change by date and, for some providers, by the time of day).
_PRICE_PERIOD_S: Final = 60


def price_period() -> int:
    """The minute a price is taken for: the price package's prices are kept for it (and
    ``backstay.adapters.spend`` keeps its estimates for it)."""
    return int(time.time() // _PRICE_PERIOD_S)


@functools.lru_cache(maxsize=1024)
def _package_price(
    model: str, provider: str, counts: tuple[int, int, int, int], period: int
) -> float | None:
    """The package's price of ``counts`` (input, output, cache read, cache write tokens);
    ``None`` when it has no price. ``period``, the minute, is part of the key only."""
    import genai_prices  # noqa: PLC0415 - imported by the caller already

    input_tokens, output_tokens, cache_read, cache_write = counts
    found_usage = genai_prices.Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    try:
        found = genai_prices.calc_price(found_usage, model, provider_id=provider)
    except LookupError:
        return None
    return float(found.total_price)


def price_usage(
    usage: Usage, *, model: str, provider: str, prices: Mapping[str, ModelPrice]
) -> Cost:
    """The cost of ``usage`` on ``model`` of ``provider`` (``"anthropic"``, ``"openai"``,
    ``"google"``): the configured price first, then ``genai-prices``, else unknown."""
    configured = prices.get(model)
    if configured is not None:
        return Cost(usd=configured.cost(usage), source="the adapter's prices setting")
    return _from_package(usage, model, provider)
