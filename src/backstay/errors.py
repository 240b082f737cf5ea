"""Exceptions backstay itself raises. Failures it *classifies* are values (``taxonomy``).

::

    BackstayError
    └── ConfigError (also a ValueError)   bad settings or arguments, named with where they are

Caller exceptions are never wrapped: when backstay gives up, the original exception
propagates.
"""

from __future__ import annotations

__all__ = ["BackstayError", "ConfigError"]


class BackstayError(Exception):
    """Base of every exception backstay raises on its own account."""


class ConfigError(BackstayError, ValueError):
    """Invalid settings or arguments. ``where`` names the field, flag or file position."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
