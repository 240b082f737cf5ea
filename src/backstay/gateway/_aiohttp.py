"""aiohttp is imported only when a gateway starts: a missing install is a clear error
naming the extra to install. ``loop_factory``: the event loop ``backstay gateway`` serves
on, uvloop's where it is installed (the same extra brings it where it builds)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
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


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when uvloop is installed, else ``None`` (asyncio's own): on it
    a gateway process spends less CPU per request (docs/benchmarks.md, "Gateway")."""
    if importlib.util.find_spec("uvloop") is None:
        return None
    import uvloop  # noqa: PLC0415 - optional, loaded on use

    return uvloop.new_event_loop
