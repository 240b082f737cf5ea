"""Validation shared by every settings object: ``ConfigError`` names the field and the reason."""

from __future__ import annotations

import math

from backstay.errors import ConfigError


def check_number(
    value: object,
    *,
    where: str,
    minimum: float = 0.0,
    above: bool = False,
    maximum: float | None = None,
    integer: bool = False,
) -> None:
    """A finite number ``>= minimum`` (``> minimum`` when ``above``), at most ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"must be a number, got {value!r}", where=where)
    if integer and not isinstance(value, int):
        raise ConfigError(f"must be a whole number, got {value!r}", where=where)
    if math.isnan(value) or math.isinf(value):
        raise ConfigError(f"must be finite, got {value!r}", where=where)
    if above and value <= minimum:
        raise ConfigError(f"must be > {minimum:g}, got {value!r}", where=where)
    if value < minimum:
        raise ConfigError(f"must be >= {minimum:g}, got {value!r}", where=where)
    if maximum is not None and value > maximum:
        raise ConfigError(f"must be <= {maximum:g}, got {value!r}", where=where)


def check_name(value: object, *, where: str) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"must be a non-empty string, got {value!r}", where=where)


def check_launcher(value: object, *, where: str) -> tuple[str, ...]:
    """A command prefix (``("nsenter", "-t", "123", "-n", "--")``): a list of non-empty
    strings, possibly empty; returned as a tuple."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ConfigError(
            f"must be a list of strings (a command prefix), got {value!r}", where=where
        )
    for i, part in enumerate(value):
        if not isinstance(part, str) or not part or "\0" in part:
            raise ConfigError(f"must be a non-empty string, got {part!r}", where=f"{where}[{i}]")
    return tuple(value)
