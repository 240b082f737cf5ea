"""``__version__``: the installed distribution's version (``0.0.0`` from a source tree
without an install), read on first use. A module of its own, so that the readers of a
batch (``observe``) need not import the package root for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str

__all__ = ["__version__"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - costly

    try:
        return version("backstay")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    raise AttributeError(f"module 'backstay._version' has no attribute {name!r}")
