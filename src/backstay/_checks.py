"""Validation shared by every settings object: ``ConfigError`` names the field and the reason."""

from __future__ import annotations

import math
import re
from typing import Final

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


_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_env_names(value: object, *, where: str) -> tuple[str, ...]:
    """A list of environment variable names (letters, digits, ``_``); a tuple."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ConfigError(f"must be a list of variable names, got {value!r}", where=where)
    for i, name in enumerate(value):
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ConfigError(
                f"must name an environment variable (letters, digits, _), got {name!r}",
                where=f"{where}[{i}]",
            )
    return tuple(value)


def check_url(value: object, *, where: str) -> str:
    """An http(s) URL."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(f"must be an http(s) URL, got {value!r}", where=where)
    return value


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
