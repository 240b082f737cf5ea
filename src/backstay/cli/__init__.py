"""The ``backstay`` command line: one module per command, thin over the library."""

from __future__ import annotations

from backstay.cli._app import app, main

__all__ = ["app", "main"]
