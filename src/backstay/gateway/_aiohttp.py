"""aiohttp is imported only when a gateway starts: a missing install is a clear error
naming the extra to install."""

from __future__ import annotations

import importlib.util
from typing import Final

from backstay.errors import ConfigError

INSTALL: Final = "pip install 'backstay[gateway]'"


def require() -> None:
    """Return if aiohttp can be imported, else raise ``ConfigError`` saying how to install it."""
    if importlib.util.find_spec("aiohttp") is None:
        raise ConfigError(
            f"the gateway needs aiohttp, which is not installed: {INSTALL}",
            where="backstay.gateway",
        )
