"""GuardSettings: validated on construction, errors name the field."""

from __future__ import annotations

import dataclasses

import pytest

from backstay.errors import ConfigError
from backstay.idempotency.settings import GuardSettings


def test_the_defaults_are_valid() -> None:
    settings = GuardSettings()
    assert settings.lease_ttl_s == 60.0
    assert settings.poll_initial_s <= settings.poll_max_s


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lease_ttl_s", 0.0),
        ("lease_ttl_s", float("nan")),
        ("wait_timeout_s", -1.0),
        ("poll_initial_s", 0.0),
        ("poll_max_s", 0.0),
        ("poll_multiplier", 0.5),
        ("poll_multiplier", "2"),
    ],
)
def test_a_bad_value_is_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        GuardSettings(**{field: value})  # type: ignore[arg-type]
    assert info.value.where == f"idempotency.{field}"


def test_a_poll_ceiling_below_the_first_delay_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        GuardSettings(poll_initial_s=1.0, poll_max_s=0.5)
    assert info.value.where == "idempotency.poll_max_s"


def test_a_variant_made_with_replace_is_validated_again() -> None:
    with pytest.raises(ConfigError):
        dataclasses.replace(GuardSettings(), lease_ttl_s=-1.0)


def test_settings_are_frozen_and_keyword_only() -> None:
    settings = GuardSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.lease_ttl_s = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        GuardSettings(1.0)  # type: ignore[misc]
