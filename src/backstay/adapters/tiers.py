"""``tier_preset``: the evaluation harness interface's tiers by id, as its "Tier-Specific
Settings" table gives them.

| setting | T0 | T1 | T2 | T3 and up |
|---|---|---|---|---|
| tier prompt | none | a chain-of-thought prompt | domain skills | the full prompt |
| tools | the agent's default | off | off | on |
| delegation | the agent's default | off | off | on |

The table names what each tier's prompt is, not its text: T1 and up take the prompt from
the caller (``ConfigError`` without one), T0 refuses one. The agent's default for tools
and delegation is ``TierConfig``'s (tools on, delegation off).
"""

from __future__ import annotations

import re
from typing import Final

from backstay.adapters.contract import TierConfig
from backstay.errors import ConfigError

__all__ = ["TIER_PRESET_IDS", "is_tier_preset", "preset_flags", "tier_preset"]

TIER_PRESET_IDS: Final = ("T0", "T1", "T2", "T3")
# "T3+": T3 and every higher tier share T3's settings.
_TIER_ID: Final = re.compile(r"T(0|[1-9][0-9]*)")
# What each tier's prompt is (the table's row), for messages.
_PROMPT_OF: Final = {1: "a chain-of-thought prompt", 2: "the domain skills prompt"}
_FULL_PROMPT: Final = "the full prompt"


def is_tier_preset(tier_id: str) -> bool:
    """Whether ``tier_id`` is one the table covers (T0, T1, T2, T3 and up)."""
    return _TIER_ID.fullmatch(tier_id) is not None


def preset_flags(tier_id: str) -> dict[str, bool]:
    """``tools_enabled`` and ``delegation_enabled`` of a preset tier; empty for T0 (the
    agent's defaults) and for an id the table does not cover."""
    found = _TIER_ID.fullmatch(tier_id)
    if found is None or found.group(1) == "0":
        return {}
    on = int(found.group(1)) >= 3
    return {"tools_enabled": on, "delegation_enabled": on}


def tier_preset(tier_id: str, *, prompt: str | None = None, tier_name: str = "") -> TierConfig:
    """The tier ``tier_id`` (``T0``, ``T1``, ``T2``, ``T3`` or higher) as the table sets it,
    with ``prompt`` as its tier prompt."""
    found = _TIER_ID.fullmatch(tier_id) if isinstance(tier_id, str) else None
    if found is None:
        raise ConfigError(
            f"is not a preset tier (T0, T1, T2, T3 and up), got {tier_id!r}", where="tier.tier_id"
        )
    number = int(found.group(1))
    if number == 0:
        if prompt is not None:
            raise ConfigError("T0 runs without a tier prompt", where="tier.tier_prompt")
        return TierConfig(tier_id=tier_id, tier_name=tier_name)
    if prompt is None or not prompt.strip():
        what = _PROMPT_OF.get(number, _FULL_PROMPT)
        raise ConfigError(f"{tier_id} needs its tier prompt ({what})", where="tier.tier_prompt")
    on = number >= 3
    return TierConfig(
        tier_id=tier_id,
        tier_name=tier_name,
        system_prompt=prompt,
        tools_enabled=on,
        delegation_enabled=on,
    )
