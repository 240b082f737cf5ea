"""What one attempt on an adapter is estimated to spend before it starts, and what it is
charged after it: the rules every spending budget applies (docs/budgets.md, *The
estimate* and *What is counted*), for the engine's tasks (``backstay.engine.budgets``) and
for a single harness run (``backstay.adapters.harness.run_budget``) alike.

* ``attempt_prompt``: the text an attempt sends first: the prompt (inline or its file),
  after the tier's system prompt;
* ``estimate_spend``: its tokens by ``backstay.policy.spend.estimate_tokens`` (the
  prompt's tokens; the request's ``max_tokens`` for API adapters, else the mean output of
  earlier attempts, else ``DEFAULT_OUTPUT_TOKENS``), priced at the adapter's known price
  for the attempt's model; without one, the mean cost of earlier attempts, else nothing;
* ``charge_spend``: the tokens it used, and the cost it reported; else its cost at the
  known price; else, when it used tokens at an unknown price, its estimate's cost.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from backstay._tokens import count_tokens
from backstay.adapters.api.settings import ApiSettings
from backstay.adapters.contract import Adapter
from backstay.adapters.pricing import price_period, price_usage
from backstay.adapters.usage import Usage
from backstay.policy.spend import EarlierUse, Spend, estimate_tokens

__all__ = ["attempt_prompt", "charge_spend", "estimate_spend"]


@runtime_checkable
class _Priced(Protocol):
    """An adapter that knows its request's settings and its price source: the API
    adapters (``backstay.adapters.api.base.ApiAdapter``, which imports this layer's
    users, hence a protocol)."""

    price_provider: str

    def settings(self, config: Mapping[str, Any]) -> ApiSettings: ...


def attempt_prompt(
    *, prompt: str | None = None, prompt_file: Path | None = None, system_prompt: str | None = None
) -> str:
    """The prompt an attempt sends (``prompt_file``'s text when given; an unreadable file
    counts as empty: the attempt fails on it, and says why), after ``system_prompt``."""
    text = prompt or ""
    if prompt_file is not None:
        try:
            text = prompt_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    return text if not system_prompt else f"{system_prompt}\n{text}"


# Whether instances of a class are ``_Priced``, by class: a protocol check reads every
# member of the protocol (about 14 us), and each attempt asks twice. A class's answer is
# its first instance's (the API adapters declare both members on the class).
_PRICED_CLASSES: dict[type, bool] = {}


def _priced(adapter: Adapter) -> bool:
    known = _PRICED_CLASSES.get(type(adapter))
    if known is None:
        known = _PRICED_CLASSES[type(adapter)] = isinstance(adapter, _Priced)
    return known


# The settings each adapter last read from a config, by the adapter's id: the adapter, the
# config, a deep copy of its contents when read, the settings, and the estimates made
# with them. An attempt reads the same config three times here (its estimate twice, its
# charge once), each read about 3 us of checks, and its estimate is the same as the last
# task's when its inputs are. A reading is used again only for the very same adapter and
# config object (held here, so their ids stay theirs) whose contents still equal the copy
# (a task's config is a read-only mapping, but a value in it may be a mutable mapping).
_SETTINGS: dict[
    int, tuple[object, Mapping[str, Any], object, ApiSettings, dict[tuple[Any, ...], Spend]]
] = {}
_SETTINGS_KEPT = 64
_ESTIMATES_KEPT = 256


def _kept(
    adapter: Adapter, config: Mapping[str, Any]
) -> tuple[ApiSettings, dict[tuple[Any, ...], Spend] | None]:
    """``adapter.settings(config)`` of a ``_Priced`` adapter, read once while ``config``
    is unchanged, and the estimates kept with it (``None``: a config that cannot be
    copied keeps none; see ``_SETTINGS``)."""
    kept = _SETTINGS.get(id(adapter))
    if kept is not None and kept[0] is adapter and kept[1] is config and kept[2] == config:
        return kept[3], kept[4]
    settings = cast(_Priced, adapter).settings(config)
    try:
        contents = copy.deepcopy(dict(config))
    except Exception:  # noqa: BLE001 - a value that cannot be copied: read it every time
        return settings, None
    if len(_SETTINGS) >= _SETTINGS_KEPT:
        _SETTINGS.clear()
    estimates: dict[tuple[Any, ...], Spend] = {}
    _SETTINGS[id(adapter)] = (adapter, config, contents, settings, estimates)
    return settings, estimates


def _settings(adapter: Adapter, config: Mapping[str, Any]) -> ApiSettings:
    """``adapter.settings(config)``, read once while ``config`` is unchanged."""
    return _kept(adapter, config)[0]


def _max_tokens(adapter: Adapter, config: Mapping[str, Any]) -> int | None:
    """The reply's token limit the request sets (API adapters), if any."""
    if not _priced(adapter):
        return None
    return _settings(adapter, config).max_tokens


def _price(adapter: Adapter, model: str, config: Mapping[str, Any], usage: Usage) -> float | None:
    """The USD cost of ``usage`` at the adapter's known price; ``None`` if unknown."""
    if not _priced(adapter):
        return None
    priced = cast(_Priced, adapter)
    settings = _settings(adapter, config)
    cost = price_usage(usage, model=model, provider=priced.price_provider, prices=settings.prices)
    return cost.usd


def estimate_spend(
    adapter: Adapter,
    *,
    model: str,
    config: Mapping[str, Any],
    prompt: str,
    earlier: EarlierUse | None,
) -> Spend:
    """One attempt's estimated spend on ``adapter`` with ``model`` and ``config``:
    ``prompt``'s tokens and the output ``estimate_tokens`` assumes, priced at the
    adapter's known price; without one, ``earlier``'s mean cost, else nothing.

    An API adapter's estimate is kept with its settings of ``config`` (``_SETTINGS``)
    for the same model, prompt and earlier use in the same minute (the price package's
    prices are taken for the minute): a batch's tasks are mostly alike, and the estimate
    is asked for before each attempt."""
    key = _estimate_key(model, prompt, earlier)
    if key is None or not _priced(adapter):
        return _estimate(adapter, model=model, config=config, prompt=prompt, earlier=earlier)
    estimates = _kept(adapter, config)[1]
    if estimates is None:
        return _estimate(adapter, model=model, config=config, prompt=prompt, earlier=earlier)
    found = estimates.get(key)
    if found is None:
        found = _estimate(adapter, model=model, config=config, prompt=prompt, earlier=earlier)
        if len(estimates) >= _ESTIMATES_KEPT:
            estimates.clear()
        estimates[key] = found
    return found


def _estimate_key(model: str, prompt: str, earlier: EarlierUse | None) -> tuple[Any, ...] | None:
    """What an API adapter's estimate depends on besides its config: the model, the
    prompt, the earlier use (its numbers' types too: ``1`` and ``1.0`` are equal keys,
    and a cost is kept as it came) and the minute; ``None`` for inputs of other types
    (estimated each time)."""
    if type(model) is not str or type(prompt) is not str:
        return None
    if earlier is None:
        return (model, prompt, None, price_period())
    if type(earlier) is not EarlierUse:
        return None
    types = (type(earlier.prompt_tokens), type(earlier.output_tokens), type(earlier.usd))
    return (model, prompt, earlier, types, price_period())


def _estimate(
    adapter: Adapter,
    *,
    model: str,
    config: Mapping[str, Any],
    prompt: str,
    earlier: EarlierUse | None,
) -> Spend:
    """``estimate_spend`` worked out."""
    tokens = estimate_tokens(
        prompt_tokens=count_tokens(prompt),
        max_output_tokens=_max_tokens(adapter, config),
        earlier=earlier,
    )
    usage = Usage(input_tokens=tokens.input_tokens, output_tokens=tokens.output_tokens)
    usd = _price(adapter, model, config, usage)
    if usd is None:
        usd = 0.0 if earlier is None or earlier.usd is None else earlier.usd
    return Spend(usd=usd, tokens=tokens.tokens)


def charge_spend(
    adapter: Adapter,
    *,
    model: str,
    config: Mapping[str, Any],
    usage: Usage,
    estimate: Spend,
) -> Spend:
    """What an attempt that used ``usage`` is charged: its tokens, and the cost it
    reported; else its cost at the known price; else (it used tokens at an unknown price)
    ``estimate``'s cost."""
    usd = usage.cost_usd
    if usd is None and usage.tokens_total:
        usd = _price(adapter, model, config, usage)
        if usd is None:
            usd = estimate.usd
    return Spend(usd=usd or 0.0, tokens=usage.tokens_total)
