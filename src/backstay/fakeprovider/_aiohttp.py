"""aiohttp is imported only when a server starts: a missing install is a clear error
naming the extra to install."""

from __future__ import annotations

import importlib.util

from backstay.errors import ConfigError

INSTALL = "pip install 'backstay[fake]'"


def require() -> None:
    """Return if aiohttp can be imported, else raise ``ConfigError`` saying how to install it."""
    if importlib.util.find_spec("aiohttp") is None:
        raise ConfigError(
            f"the fake provider needs aiohttp, which is not installed: {INSTALL}",
            where="backstay.fakeprovider",
        )
